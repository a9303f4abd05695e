"""Noise and significance: run-to-run spread, and a test of one config against another.

The final comparison of a tuning run (advisor/tuner/verdict.py) feeds the repeated,
interleaved runs of two configs to ``compare``:

- the decision comes from ``scipy.stats.permutation_test``, two-sided, independent samples,
  with the Mann-Whitney U (rank) statistic. A permutation test is exact under the null
  hypothesis "both configs draw from one distribution" (each interleaved round sees the same
  machine, so runs are exchangeable), needs no normality, and stays valid at the 4-10 runs a
  tuning run can afford, where a t-test or an asymptotic bootstrap p-value is not. Ranks,
  because one disturbed run moves U by at most one rank; not the median itself, whose
  permutation distribution is so coarse (many splits share the extreme medians) that even
  perfectly separated runs get p = 1/3 at 5 vs 5. With n runs per config every split is
  enumerated while C(2n, n) <= MAX_PERMUTATIONS (n <= 8): the p-value is exact, reproducible,
  and at least 2/C(2n, n) (``min_p_value``);
- the interval is ``scipy.stats.bootstrap`` (percentile) of the same statistic, the ratio of
  the medians, at the confidence the decision used (1 - alpha per test after the correction),
  so a claimed gain and its interval say the same thing. A gain is claimed only when both the
  test rejects and the interval excludes 0.

Medians, because one disturbed run on a shared machine must not move the result.

When the runs come in interleaved rounds (the verdict's A B C, A B C ...), ``compare_paired``
uses the pairing: the per-round log ratio of the two configs, measured minutes apart, cancels
the machine's slow changes (another tenant's load, a cache warming) that the independent test
has to count as noise; measured here under a load average of 13-21, the per-round ratio varied
about half as much as either config's runs. The decision is Student's paired t-test on the log
ratios (two-sided; at n = 5 rounds the sign-flip permutation test cannot go below p = 1/16),
the interval the t interval of their mean at the same level, as a ratio: the geometric mean
gain with its bounds.

Both tests also give ``upper_bound_pct``, the one-sided upper confidence bound of the gain at
1 - alpha (for the paired test the upper end of the 1 - 2 alpha t interval, for the
independent one the 1 - alpha quantile of the same bootstrap distribution). It is the
verdict's equivalence (non-superiority) bound: "no gain above B" is a one-sided claim, the
upper half of Schuirmann's two one-sided tests, so its level is alpha on one side. The upper
end of the two-sided interval claims it at alpha / 2, twice as strict as stated.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

import numpy as np

CONFIDENCE = 0.95
MAX_PERMUTATIONS = 20_000
BOOTSTRAP_RESAMPLES = 9_999


def spread_pct(values: Sequence[float]) -> float | None:
    """Coefficient of variation in percent (None with fewer than two values)."""
    vals = [float(v) for v in values if v is not None]
    if len(vals) < 2 or statistics.fmean(vals) == 0:
        return None
    return 100.0 * statistics.stdev(vals) / abs(statistics.fmean(vals))


def _clean(values: Sequence[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(float(v)) and v > 0]


def gain_pct(a: Sequence[float], b: Sequence[float], *, higher_is_better: bool = True
             ) -> float | None:
    """How much better ``a`` is than ``b`` in percent, from the ratio of their medians
    (for latency a positive gain is a reduction)."""
    a, b = _clean(a), _clean(b)
    if not a or not b:
        return None
    ratio = statistics.median(a) / statistics.median(b)
    return 100.0 * ((ratio if higher_is_better else 1.0 / ratio) - 1.0)


def min_p_value(n: int) -> float:
    """The smallest two-sided p-value a permutation test of n vs n runs can give: 2/C(2n, n).
    Below it nothing can be decided, whatever the data."""
    return 2.0 / math.comb(2 * n, n) if n > 0 else 1.0


def compare(a: Sequence[float], b: Sequence[float], *, alpha: float,
            higher_is_better: bool = True, seed: int = 0) -> dict[str, Any]:
    """Is ``a`` better than ``b``? Permutation test at ``alpha`` and bootstrap interval of the
    ratio of the medians at 1 - alpha, on the given runs (see the module doc).

    ``decision`` is "better", "worse" or "none" (not significant, or too few runs).
    Seeded: a report rebuilt from the same runs says the same.
    """
    from scipy import stats

    a, b = _clean(a), _clean(b)
    out: dict[str, Any] = {
        "gain_pct": gain_pct(a, b, higher_is_better=higher_is_better),
        "ci_low_pct": None, "ci_high_pct": None, "upper_bound_pct": None,
        "confidence": 1.0 - alpha,
        "p_value": None, "alpha": alpha, "n_a": len(a), "n_b": len(b), "decision": "none",
        "test": "permutation test (Mann-Whitney U, two-sided); bootstrap CI of median ratio",
    }
    if len(a) < 2 or len(b) < 2:
        return out
    sign = 1.0 if higher_is_better else -1.0

    def log_ratio(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return sign * (np.log(np.median(x, axis=axis)) - np.log(np.median(y, axis=axis)))

    def centred_u(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        u = stats.mannwhitneyu(x, y, axis=axis, method="asymptotic").statistic
        return u - x.shape[axis] * y.shape[axis] / 2.0

    xa, xb = np.asarray(a), np.asarray(b)
    perm = stats.permutation_test(
        (xa, xb), centred_u, permutation_type="independent", alternative="two-sided",
        n_resamples=MAX_PERMUTATIONS, vectorized=True, rng=np.random.default_rng(seed))
    boot = stats.bootstrap(
        (xa, xb), log_ratio, confidence_level=1.0 - alpha, method="percentile",
        n_resamples=BOOTSTRAP_RESAMPLES, vectorized=True, rng=np.random.default_rng(seed))
    low, high = (100.0 * (math.exp(float(v)) - 1.0) for v in
                 (boot.confidence_interval.low, boot.confidence_interval.high))
    upper = 100.0 * (math.exp(float(np.quantile(boot.bootstrap_distribution, 1.0 - alpha)))
                     - 1.0)
    out.update(p_value=float(perm.pvalue), ci_low_pct=low, ci_high_pct=high,
               upper_bound_pct=upper)
    if perm.pvalue <= alpha and low > 0:
        out["decision"] = "better"
    elif perm.pvalue <= alpha and high < 0:
        out["decision"] = "worse"
    return out


def compare_paired(a: Sequence[float | None], b: Sequence[float | None], *, alpha: float,
                   higher_is_better: bool = True) -> dict[str, Any]:
    """Is ``a`` better than ``b``, from runs paired by round (``a[i]`` and ``b[i]`` measured in
    the same round; None where a run failed: that round drops out). Paired t-test on the log
    ratios at ``alpha`` and the t interval of their mean at 1 - alpha (see the module doc)."""
    from scipy import stats

    pairs = [(float(x), float(y)) for x, y in zip(a, b, strict=False)
             if x is not None and y is not None and x > 0 and y > 0
             and math.isfinite(float(x)) and math.isfinite(float(y))]
    sign = 1.0 if higher_is_better else -1.0
    d = [sign * (math.log(x) - math.log(y)) for x, y in pairs]
    n = len(d)
    out: dict[str, Any] = {
        "gain_pct": 100.0 * (math.exp(statistics.fmean(d)) - 1.0) if d else None,
        "ci_low_pct": None, "ci_high_pct": None, "upper_bound_pct": None,
        "confidence": 1.0 - alpha,
        "p_value": None, "alpha": alpha, "n_a": n, "n_b": n, "decision": "none",
        "paired": True,
        "test": "paired t-test on per-round log ratios (interleaved rounds); t interval of "
                "the geometric mean ratio",
    }
    if n < 2:
        return out
    mean, sd = statistics.fmean(d), statistics.stdev(d)
    se = sd / math.sqrt(n)
    half = float(stats.t.ppf(1.0 - alpha / 2.0, n - 1)) * se
    low, high = (100.0 * (math.exp(v) - 1.0) for v in (mean - half, mean + half))
    upper = 100.0 * (math.exp(mean + float(stats.t.ppf(1.0 - alpha, n - 1)) * se) - 1.0)
    if sd <= 1e-12 * max(abs(mean), 1e-300):  # identical ratios: no spread to test against
        p = 0.0 if mean != 0 else 1.0
    else:
        tstat = mean / (sd / math.sqrt(n))
        p = float(2.0 * stats.t.sf(abs(tstat), n - 1))
    out.update(p_value=p, ci_low_pct=low, ci_high_pct=high, upper_bound_pct=upper)
    if p <= alpha and low > 0:
        out["decision"] = "better"
    elif p <= alpha and high < 0:
        out["decision"] = "worse"
    return out


def gain_ci(
    tuned: Sequence[float], base: Sequence[float], *, higher_is_better: bool = True,
    confidence: float = CONFIDENCE, seed: int = 0,
) -> dict[str, Any]:
    """``compare`` at a plain confidence level (no correction for several looks): the
    descriptive interval of the ratio of medians, for tables of configs outside the verdict."""
    return compare(tuned, base, alpha=1.0 - confidence, higher_is_better=higher_is_better,
                   seed=seed)
