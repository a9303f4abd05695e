"""Hardware probes: CPU/NUMA, PMEM, CXL, mounts and media, measured bandwidth."""
