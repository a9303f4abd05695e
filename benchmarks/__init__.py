"""Benchmark drivers run by `make bench*` (not installed with the package)."""
