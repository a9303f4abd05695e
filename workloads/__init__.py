"""Named benchmark workloads (pgbench, sysbench, our own Lua TPC-C-like and YCSB)."""
