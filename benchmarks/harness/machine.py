"""What else the machine did while a row was measured: the CPU time the hypervisor took.

A virtual machine's vCPU can be runnable while the host runs something else ("steal" in
/proc/stat). On a shared host that, not our measurement, can set a run's speed: a round trip
between a client and a server waits for both vCPUs to be scheduled. The load average does
not show it (a stolen vCPU's task still counts as running), so every row records both.
"""

from __future__ import annotations

from pathlib import Path

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
