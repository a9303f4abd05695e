"""Bandwidth and latency probe (issue 3): ``measure_paths`` fills ``profile["bandwidth"]``.

plan (which points), scratch (what is mapped), runner (measuring with the C kernel in
probes/native/pmembw.c), facts (result math), heatmap (PNG).
"""

from .runner import load_kernel, measure_paths

__all__ = ["load_kernel", "measure_paths"]
