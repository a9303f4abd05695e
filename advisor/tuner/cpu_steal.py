"""What else the machine did while a run was measured: the CPU time the hypervisor took.

A virtual machine's vCPU can be runnable while the host runs something else ("steal" in
/proc/stat). On a shared host that, not the config, can set a run's speed: a round trip
between a client and a server waits for both vCPUs to be scheduled (on a 2-vCPU VM, Tarantool
YCSB-A: log throughput against the steal share, r = -0.96 over 24 runs of 3 configs). The
load average does not show it (a stolen vCPU's task still counts as running), so every
measurement records it and the verdict says when it was large.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

PROC_STAT = Path("/proc/stat")
# the fields of the aggregate "cpu" line (proc(5)); guest time is already inside user
FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def cpu_times(stat: Path = PROC_STAT) -> dict[str, int] | None:
    """The aggregate CPU line of /proc/stat in clock ticks, or None where there is none."""
    try:
        for line in stat.read_text(encoding="ascii", errors="replace").splitlines():
            parts = line.split()
            if parts and parts[0] == "cpu":
                values = [int(x) for x in parts[1:1 + len(FIELDS)]]
                return dict(zip(FIELDS, values + [0] * (len(FIELDS) - len(values)),
                                strict=True))
    except (OSError, ValueError):
        return None
    return None


def steal_pct(before: dict[str, int] | None, after: dict[str, int] | None) -> float | None:
    """The share of all CPU time between two readings that the hypervisor took, in %."""
    if not before or not after:
        return None
    delta = {k: after[k] - before[k] for k in FIELDS}
    total = sum(delta.values())
    if total <= 0 or any(v < 0 for v in delta.values()):
        return None
    return round(100.0 * delta["steal"] / total, 1)


def measure(evaluator: Any, config: Any) -> Any:
    """``evaluator.evaluate(config)`` with the run's steal share in its ``raw``."""
    before = cpu_times()
    m = evaluator.evaluate(config)
    pct = steal_pct(before, cpu_times())
    if pct is not None and isinstance(getattr(m, "raw", None), dict):
        m.raw["cpu_steal_pct"] = pct
    return m


# Above this share of the CPU taken by the hypervisor during a run, the verdict says so.
NOTABLE_STEAL_PCT = 5.0


def steal_note(values: list[float | None]) -> str:
    """A clause for the verdict when the host took a notable share of the CPU, else ''."""
    vals = [v for v in values if v is not None]
    if not vals or max(vals) < NOTABLE_STEAL_PCT:
        return ""
    return (f"; the hypervisor took {min(vals):.0f}-{max(vals):.0f}% of the CPU during these "
            "runs (steal): a cause of their spread that no setting removes")
