"""What `tune` decides before the study runs: the engine (aliases are data), the extra it
needs, the production target (--dsn, --memory) and the request the tuner session runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pmem_advisor.knobs.units import parse_bytes
from pmem_advisor.library.target import resolve_engine


def tune(engine: str, workload: str, *, flavour: str | None = None, memory: str | None = None,
         dsn: str | None = None, dsn_file: str | None = None, console: Any = None,
         say: Callable[[str], None] = lambda note: None, **request: Any) -> dict[str, Any]:
    """Run (or resume) a study and return its summary (schema pmem-advisor.tune-summary/1).

    ``request`` holds the other fields of ``tuner.session.TuneRequest`` (trials, duration,
    data_dir, out, ...); ``memory`` is a size with a unit ("4G"); ``dsn``/``dsn_file`` a live
    server whose max_connections is the production one. ``console`` (a rich Console) shows
    the live progress and the tuner's lines; ``say`` receives notes (a password in argv).
    UsageError (exit 2) for bad input, CapabilityMissing (3) without the [tune] extra,
    EnvironmentProblem (3) when no trial was measured, Interrupted/Terminated on signals."""
    from pmem_advisor.capabilities import require_extra

    engine, flavour = resolve_engine(engine, flavour)  # 'pg', 'mariadb': aliases are data
    require_extra("tune", "pmem-advisor tune")  # before any server starts or data loads
    from pmem_advisor.connection import resolve_dsn
    from pmem_advisor.tuner.session import TuneRequest, run_tune

    notes: list[str] = []
    live_dsn = resolve_dsn(dsn, dsn_file, notes=notes) if (dsn or dsn_file) else None
    for note in notes:
        say(note)
    req = TuneRequest(engine=engine, workload=workload, flavour=flavour, dsn=live_dsn,
                      memory_bytes=parse_bytes(memory, "--memory") if memory else None,
                      **request)
    progress = None
    if console is not None:
        from pmem_advisor.report.progress import LiveProgress

        def progress(space, catalog):
            return LiveProgress(console, space, req.trials, req.objective, catalog,
                                trial_estimate_s=req.trial_seconds())

    return run_tune(req, progress=progress, console=console)
