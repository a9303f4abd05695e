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
# The fewest clock ticks (summed over the CPUs) a share is computed from: 1 s on 2 CPUs at
# the usual USER_HZ of 100. Every real run is longer; a shorter interval says nothing.
MIN_TICKS = 200


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
    if total < MIN_TICKS or any(v < 0 for v in delta.values()):
        return None  # too short to say (a tick is 10 ms: one stolen tick of two is not 50%)
    return round(100.0 * delta["steal"] / total, 1)


def measure(evaluator: Any, config: Any) -> Any:
    """``evaluator.evaluate(config)`` with the run's steal share in its ``raw``."""
    before = cpu_times()
    m = evaluator.evaluate(config)
    pct = steal_pct(before, cpu_times())
    if pct is not None and isinstance(getattr(m, "raw", None), dict):
        m.raw["cpu_steal_pct"] = pct
    return m


# Above this share of the CPU taken by the hypervisor during a run, the run is disturbed: the
# verdict measures it again (at most DISTURBED_RERUNS times) and says so. On the 2-vCPU VM of
# the module doc, runs at 5% steal or less gave 20,571-21,553 ops/s whatever their config,
# runs at 7-10% 16,911-18,005: the host's share, not the config, made that difference.
NOTABLE_STEAL_PCT = 5.0
DISTURBED_RERUNS = 2


def disturbed(m: Any) -> bool:
    """A completed run the host slowed; a failed run is the config's, whatever the steal,
    and is kept as the failure it is."""
    pct = (getattr(m, "raw", None) or {}).get("cpu_steal_pct")
    return bool(getattr(m, "ok", False)) and pct is not None and pct > NOTABLE_STEAL_PCT


def steal_clause(pct: float | None) -> str:
    """', steal N%' for a progress line, '' where the run recorded none."""
    return "" if pct is None else f", steal {pct:.0f}%"


def measure_undisturbed(evaluator: Any, config: Any, *, may_rerun: Any = lambda: True,
                        on_rerun: Any = None) -> tuple[Any, list[dict[str, Any]]]:
    """``measure``, again while the hypervisor took more than NOTABLE_STEAL_PCT of the CPU
    during the run (at most DISTURBED_RERUNS more runs, and only while ``may_rerun()``, the
    time budget); the kept measurement and the discarded runs (their steal and throughput).
    The last run is kept whatever its steal: a host that never calms down still gets a
    verdict, and the note says what the runs went through."""
    m = measure(evaluator, config)
    discarded: list[dict[str, Any]] = []
    while disturbed(m) and len(discarded) < DISTURBED_RERUNS and may_rerun():
        discarded.append({"cpu_steal_pct": m.raw.get("cpu_steal_pct"),
                          "throughput_tps": m.throughput_tps})
        if on_rerun is not None:
            on_rerun(m.raw.get("cpu_steal_pct"))
        m = measure(evaluator, config)
    return m, discarded


def steal_note(values: list[float | None], reruns: int = 0) -> str:
    """A clause for the verdict when the host took a notable share of the CPU, else ''."""
    vals = [v for v in values if v is not None]
    again = (f"; {reruns} run(s) measured again because the hypervisor took more than "
             f"{NOTABLE_STEAL_PCT:.0f}% of the CPU during them (steal)" if reruns else "")
    if not vals or max(vals) <= NOTABLE_STEAL_PCT:
        return again
    return (again + f"; the hypervisor took {min(vals):.0f}-{max(vals):.0f}% of the CPU during "
            "the runs kept (steal): a cause of their spread that no setting removes")


def measure_in_turns_undisturbed(evaluator: Any, configs: list[Any], turn_s: int, *,
                                 may_rerun: Any = lambda: True, on_rerun: Any = None
                                 ) -> tuple[list[Any], list[list[dict[str, Any]]]]:
    """``evaluator.evaluate_in_turns`` with the steal share of the whole block (the configs
    took turns through it) in every measurement's ``raw``; measured again, all together, while
    it was disturbed, as ``measure_undisturbed`` does; the discarded runs per config."""

    def once() -> list[Any]:
        before = cpu_times()
        ms = evaluator.evaluate_in_turns(configs, turn_s)
        pct = steal_pct(before, cpu_times())
        for m in ms:
            if pct is not None and isinstance(getattr(m, "raw", None), dict):
                m.raw["cpu_steal_pct"] = pct
        return ms

    ms = once()
    discarded: list[list[dict[str, Any]]] = [[] for _ in configs]
    while (any(disturbed(m) for m in ms) and len(discarded[0]) < DISTURBED_RERUNS
           and may_rerun()):
        for k, m in enumerate(ms):
            discarded[k].append({"cpu_steal_pct": m.raw.get("cpu_steal_pct"),
                                 "throughput_tps": m.throughput_tps})
        if on_rerun is not None:
            on_rerun(next(m.raw.get("cpu_steal_pct") for m in ms if disturbed(m)))
        ms = once()
    return ms, discarded
