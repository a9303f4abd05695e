"""PNG heat map of sequential bandwidth, threads x access size, read and write per path.

matplotlib is optional (the ``plot`` extra) and imported only when a plot is asked for.
"""

from __future__ import annotations

import math

from pmem_advisor.errors import CapabilityMissing, UsageError

from .facts import grid


def _size_label(n: int) -> str:
    return f"{n // 1024}K" if n >= 1024 else f"{n}"


def save_heatmap(results: list[dict], out: str) -> str:
    """Write one row of panels (read, write) per measured path to ``out`` (PNG)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CapabilityMissing("the heat map needs matplotlib",
                                hint="pip install 'pmem-advisor[plot]'") from None
    fig, axes = plt.subplots(len(results), 2, figsize=(12, 3.2 * len(results) + 1),
                             squeeze=False)
    for row, res in zip(axes, results, strict=True):
        for ax, op in zip(row, ("read", "write"), strict=True):
            threads, sizes, cells = grid(res["points"], op)
            if not cells:
                ax.set_axis_off()
                continue
            im = ax.imshow(cells, aspect="auto", origin="lower", cmap="viridis")
            ax.set_xticks(range(len(sizes)), [_size_label(s) for s in sizes])
            ax.set_yticks(range(len(threads)), [str(t) for t in threads])
            ax.set_xlabel("access size (bytes)")
            ax.set_ylabel("threads")
            ax.set_title(f"{op} GB/s, {res['path']} ({res['persist_method']})", fontsize=9)
            for i, line in enumerate(cells):
                for j, v in enumerate(line):
                    if not math.isnan(v):
                        ax.text(j, i, f"{v:.1f}", ha="center", va="center", fontsize=7,
                                color="white")
            fig.colorbar(im, ax=ax)
    fig.tight_layout()
    try:
        fig.savefig(out, format="png", dpi=100)
    except OSError as e:
        raise UsageError(f"cannot write the heat map to {out}: {e.strerror}") from None
    finally:
        plt.close(fig)
    return out
