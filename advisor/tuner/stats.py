"""Noise: run-to-run spread of repeated measurements and confidence intervals of a gain."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence

CONFIDENCE = 0.95


def spread_pct(values: Sequence[float]) -> float | None:
    """Coefficient of variation in percent (None with fewer than two values)."""
    vals = [float(v) for v in values if v is not None]
    if len(vals) < 2 or statistics.fmean(vals) == 0:
        return None
    return 100.0 * statistics.stdev(vals) / abs(statistics.fmean(vals))


def gain_ci(
    tuned: Sequence[float], base: Sequence[float], *, higher_is_better: bool = True,
    resamples: int = 4000, seed: int = 0,
) -> dict[str, float | int | None]:
    """Gain of ``tuned`` over ``base``: the ratio of their medians (the same statistic the
    reports show as throughput), with a percentile-bootstrap interval of that ratio.

    Medians, because one disturbed run on a shared machine must not move the result; the
    bootstrap, because it needs no normality of so few runs (seeded: reports are stable).
    For latency (``higher_is_better=False``) a positive gain is a reduction.
    """
    t = [float(v) for v in tuned if v is not None]
    b = [float(v) for v in base if v is not None]
    out: dict[str, float | int | None] = {
        "gain_pct": None, "ci_low_pct": None, "ci_high_pct": None,
        "confidence": CONFIDENCE, "n_tuned": len(t), "n_base": len(b),
    }
    if not t or not b or statistics.median(b) == 0:
        return out

    def gain(ts: Sequence[float], bs: Sequence[float]) -> float:
        mt, mb = statistics.median(ts), statistics.median(bs)
        ratio = mt / mb if higher_is_better else mb / mt if mt else math.inf
        return 100.0 * (ratio - 1.0)

    out["gain_pct"] = gain(t, b)
    if len(t) < 2 or len(b) < 2:
        return out
    rng = random.Random(seed)
    draws = sorted(gain(rng.choices(t, k=len(t)), rng.choices(b, k=len(b)))
                   for _ in range(resamples))
    tail = (1.0 - CONFIDENCE) / 2
    out["ci_low_pct"] = draws[int(tail * (resamples - 1))]
    out["ci_high_pct"] = draws[int((1.0 - tail) * (resamples - 1))]
    return out
