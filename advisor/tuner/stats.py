"""Noise: run-to-run spread of repeated measurements and confidence intervals of a gain."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from scipy import stats as _st

CONFIDENCE = 0.95


def spread_pct(values: Sequence[float]) -> float | None:
    """Coefficient of variation in percent (None with fewer than two values)."""
    vals = [float(v) for v in values if v is not None]
    if len(vals) < 2 or statistics.fmean(vals) == 0:
        return None
    return 100.0 * statistics.stdev(vals) / abs(statistics.fmean(vals))


def gain_ci(
    tuned: Sequence[float], base: Sequence[float], *, higher_is_better: bool = True
) -> dict[str, float | int | None]:
    """Gain of ``tuned`` over ``base`` in percent of the base mean, with a Welch t interval.

    For latency (``higher_is_better=False``) a positive gain is a reduction.
    """
    t = [float(v) for v in tuned if v is not None]
    b = [float(v) for v in base if v is not None]
    out: dict[str, float | int | None] = {
        "gain_pct": None, "ci_low_pct": None, "ci_high_pct": None,
        "confidence": CONFIDENCE, "n_tuned": len(t), "n_base": len(b),
    }
    if not t or not b or statistics.fmean(b) == 0:
        return out
    mb = statistics.fmean(b)
    sign = 1.0 if higher_is_better else -1.0
    diff = sign * (statistics.fmean(t) - mb)
    out["gain_pct"] = 100.0 * diff / abs(mb)
    if len(t) < 2 or len(b) < 2:
        return out
    vt, vb = statistics.variance(t) / len(t), statistics.variance(b) / len(b)
    se = math.sqrt(vt + vb)
    if se == 0:
        out["ci_low_pct"] = out["ci_high_pct"] = out["gain_pct"]
        return out
    dof = (vt + vb) ** 2 / (vt**2 / (len(t) - 1) + vb**2 / (len(b) - 1))
    half = float(_st.t.ppf(0.5 + CONFIDENCE / 2, dof)) * se
    out["ci_low_pct"] = 100.0 * (diff - half) / abs(mb)
    out["ci_high_pct"] = 100.0 * (diff + half) / abs(mb)
    return out
