"""What `probe` decides: where to read (this machine, a tree or a snapshot, recording or not),
the medium overrides, the optional bandwidth measurement, and the lines the summary adds."""

from __future__ import annotations

from collections.abc import Callable

from pmem_advisor.errors import CapabilityMissing, InputError, UsageError


def _quiet(line: str) -> None:
    """No progress: the default where no one is watching."""


def probe(*, root: str | None = None, save: str | None = None, paths: list[str] = (),
          medium: list[str] = (), cgroup: str | None = None, measure: bool = True,
          bandwidth: list[str] = (), quick: bool = True, plot: str | None = None,
          destructive: bool = False, numa_node: int | None = None,
          say: Callable[[str], None] = _quiet,
          progress: Callable[[str], None] = _quiet) -> dict:
    """The probe profile (schema pmem-advisor.probe/1) of this machine, or of ``root`` (a tree
    shaped like / or a snapshot .tar.gz); ``save`` records what was read to a snapshot;
    ``medium`` holds PATH=hdd|ssd|nvme overrides; ``bandwidth`` paths are measured (this
    machine only). UsageError/InputError (exit 2) for bad input, CapabilityMissing (3)
    without the bandwidth kernel or the plot extra."""
    from pmem_advisor.probes.medium_source import parse_overrides
    from pmem_advisor.probes.profile import probe as run_probe
    from pmem_advisor.probes.snapshot import open_root, save_snapshot
    from pmem_advisor.probes.sysaccess import SysAccess

    access = open_root(root) if root else SysAccess("/", record=save is not None)
    if save and access.recording is None:  # re-read a root/snapshot while recording
        access = SysAccess(access.root, record=True, kind=access.kind)
    try:
        overrides = parse_overrides(list(medium))
    except ValueError as e:
        raise UsageError(str(e)) from None
    paths = list(paths) + [p for p in overrides if p not in paths]
    profile = run_probe(access, paths, cgroup=cgroup, measure=measure,
                        medium_overrides=overrides)
    if bandwidth:
        if plot:
            from pmem_advisor.capabilities import require_extra

            require_extra("plot", "--plot")  # fail before measuring, not after
        if not access.live:
            raise InputError("--bandwidth measures this machine; it cannot be combined with --root")
        profile["bandwidth"] = measure_bandwidth(list(bandwidth), progress, quick=quick,
                                                 destructive=destructive, numa_node=numa_node,
                                                 plot=plot)
    if save:
        count = save_snapshot(access, save, profile)
        say(f"saved snapshot {save} ({count} entries)")
    return profile


def measure_bandwidth(paths: list[str], progress: Callable[[str], None] = _quiet,
                      **options) -> list[dict]:
    """The bandwidth probe is optional and built separately: import it only when asked."""
    try:
        from pmem_advisor.probes.bandwidth import measure_paths
    except ImportError as e:
        raise CapabilityMissing(
            f"the bandwidth probe is not available ({e})",
            hint="reinstall with `make install`; see `pmem-advisor doctor`",
        ) from e

    def report(message: str, fraction: float) -> None:
        progress(f"bandwidth {fraction:4.0%} {message}")

    return measure_paths(paths, progress=report, **options)


def emulated(profile: dict) -> bool:
    """Whether a probed path is tmpfs standing in for PMEM (the caveat every output carries)."""
    return any(p.get("medium") == "tmpfs" for p in profile["paths"])


def resource_lines(profile: dict) -> list[str]:
    """The budget the limits give and each path's medium sentence (the human summary)."""
    from pmem_advisor.rules.budget import effective_budget

    limits = profile.get("limits") or {}
    cg = limits.get("cgroup") or {}
    lines = [f"cgroup: v{cg.get('version')} {cg.get('path')} ({cg.get('source')})"
             if cg.get("path") else "cgroup: none found (the host's resources apply)"]
    budget = effective_budget(profile).describe()
    lines += [f"budget {line}" for line in budget[:2]] + budget[2:]
    huge = limits.get("hugepages") or {}
    pools = ", ".join(f"{p['size_bytes'] >> 20} MiB x {p.get('total')} ({p.get('free')} free)"
                      for p in huge.get("pools") or [])
    lines.append(f"huge pages: {pools or 'none'}; transparent huge pages: {limits.get('thp')}")
    lines += [f"{p['path']}: {p['medium_note']}" for p in profile["paths"]
              if p.get("medium_note")]
    return lines
