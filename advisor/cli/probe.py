"""`pmem-advisor probe`: what PMEM/CXL/storage this machine (or a snapshot) has."""

from __future__ import annotations

import json

import typer
from rich.table import Table

from pmem_advisor.cli.output import (
    EMULATION_NOTE,
    chosen_format,
    console,
    format_option,
    note,
    out,
    print_json,
    print_table,
    progress,
)
from pmem_advisor.errors import CapabilityMissing, InputError, UsageError
from pmem_advisor.fileio import write_file_safely
from pmem_advisor.probes.medium_source import parse_overrides
from pmem_advisor.probes.profile import probe as run_probe
from pmem_advisor.probes.snapshot import open_root, save_snapshot
from pmem_advisor.probes.summary import render_summary
from pmem_advisor.probes.sysaccess import SysAccess


def _measure(paths: list[str], **options) -> list[dict]:
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


def probe(
    root: str | None = typer.Option(
        None, "--root", help="Analyse a captured tree shaped like / or a snapshot .tar.gz."),
    save: str | None = typer.Option(
        None, "--save", help="Save exactly what the probe read to this .tar.gz snapshot."),
    path: list[str] = typer.Option(
        [], "--path", help="A path to place (data dir, WAL dir): mount, medium, DAX. Repeatable."),
    fmt: str = format_option(("table", "json"),
                             help="table: the summary, its tables one row per line when piped; "
                             "json: the profile (schema pmem-advisor.probe/1)."),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
    out_file: str | None = typer.Option(None, "--out", help="Write the profile JSON to FILE."),
    bandwidth: list[str] = typer.Option(
        [], "--bandwidth", help="Measure read/write bandwidth on this path. Repeatable."),
    quick: bool = typer.Option(True, "--quick/--full", help="Bandwidth: short run or full sweep."),
    plot: str | None = typer.Option(None, "--plot", help="Bandwidth: write a plot to FILE."),
    destructive: bool = typer.Option(
        False, "--destructive", help="Bandwidth: allow writing to a raw device (erases it)."),
    numa_node: int | None = typer.Option(
        None, "--numa-node", help="Bandwidth: bind the measuring threads to this NUMA node."),
    cgroup: str | None = typer.Option(
        None, "--cgroup", help="Read the limits of this cgroup path or systemd unit "
        "(postgresql@18-main.service) instead of this process's."),
    no_measure: bool = typer.Option(
        False, "--no-measure", help="Do not measure the medium of virtual disks (the kernel's "
        "flag is then reported as unverified)."),
    medium: list[str] = typer.Option(
        [], "--medium", help="PATH=hdd|ssd|nvme: the medium of a path, known better than the "
        "kernel's flag. Repeatable."),
) -> None:
    """Probe CPU, NUMA, PMEM (regions, namespaces, platform mode), CXL, mounts and paths."""
    access = open_root(root) if root else SysAccess("/", record=save is not None)
    if save and access.recording is None:  # re-read a root/snapshot while recording
        access = SysAccess(access.root, record=True, kind=access.kind)
    try:
        overrides = parse_overrides(list(medium))
    except ValueError as e:
        raise UsageError(str(e)) from None
    paths = list(path) + [p for p in overrides if p not in path]
    profile = run_probe(access, paths, cgroup=cgroup, measure=not no_measure,
                        medium_overrides=overrides)
    if bandwidth:
        if plot:
            from pmem_advisor.capabilities import require_extra

            require_extra("plot", "--plot")  # fail before measuring, not after
        if not access.live:
            raise InputError("--bandwidth measures this machine; it cannot be combined with --root")
        profile["bandwidth"] = _measure(list(bandwidth), quick=quick, destructive=destructive,
                                        numa_node=numa_node, plot=plot)
    if save:
        count = save_snapshot(access, save, profile)
        note(f"saved snapshot {save} ({count} entries)")
    if out_file:
        backup = write_file_safely(out_file, json.dumps(profile, indent=2) + "\n")
        if backup:
            note(f"kept the previous {out_file} as {backup}")
    if chosen_format(fmt, json_out) == "json":
        print_json(profile)
    else:
        _print_summary(profile)
    if any(p.get("medium") == "tmpfs" for p in profile["paths"]):
        console.print(EMULATION_NOTE, style="dim")


def _print_summary(profile: dict) -> None:
    """The human summary is the result: stdout (`probe > probe.txt`), its tables through
    print_table (one row per line when piped); notes and progress stay on stderr."""
    for part in render_summary(profile).renderables:
        if isinstance(part, Table):
            print_table([str(c.header) for c in part.columns],
                        zip(*(list(c.cells) for c in part.columns), strict=True),
                        title=str(part.title) if part.title else None)
        else:
            out.print(part)
    for line in _resource_lines(profile):
        out.print(line, markup=False, highlight=False)


def _resource_lines(profile: dict) -> list[str]:
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


def register(app: typer.Typer) -> None:
    app.command("probe")(probe)
