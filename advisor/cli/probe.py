"""`pmem-advisor probe`: what PMEM/CXL/storage this machine (or a snapshot) has."""

from __future__ import annotations

import json

import typer

from pmem_advisor.cli.output import EMULATION_NOTE, console, print_json
from pmem_advisor.errors import CapabilityMissing, InputError
from pmem_advisor.fileio import write_keeping_backup
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

    def progress(message: str, fraction: float) -> None:
        console.print(f"[dim]bandwidth {fraction:4.0%} {message}[/]")

    return measure_paths(paths, progress=progress, **options)


def probe(
    root: str | None = typer.Option(
        None, "--root", help="Analyse a captured tree shaped like / or a snapshot .tar.gz."),
    save: str | None = typer.Option(
        None, "--save", help="Save exactly what the probe read to this .tar.gz snapshot."),
    path: list[str] = typer.Option(
        [], "--path", help="A path to place (data dir, WAL dir): mount, medium, DAX. Repeatable."),
    json_out: bool = typer.Option(False, "--json", help="Print the profile as JSON on stdout."),
    out_file: str | None = typer.Option(None, "--out", help="Write the profile JSON to FILE."),
    bandwidth: list[str] = typer.Option(
        [], "--bandwidth", help="Measure read/write bandwidth on this path. Repeatable."),
    quick: bool = typer.Option(True, "--quick/--full", help="Bandwidth: short run or full sweep."),
    plot: str | None = typer.Option(None, "--plot", help="Bandwidth: write a plot to FILE."),
    destructive: bool = typer.Option(
        False, "--destructive", help="Bandwidth: allow writing to a raw device (erases it)."),
    numa_node: int | None = typer.Option(
        None, "--numa-node", help="Bandwidth: bind the measuring threads to this NUMA node."),
) -> None:
    """Probe CPU, NUMA, PMEM (regions, namespaces, platform mode), CXL, mounts and paths."""
    access = open_root(root) if root else SysAccess("/", record=save is not None)
    if save and access.recording is None:  # re-read a root/snapshot while recording
        access = SysAccess(access.root, record=True, kind=access.kind)
    profile = run_probe(access, list(path))
    if bandwidth:
        if not access.live:
            raise InputError("--bandwidth measures this machine; it cannot be combined with --root")
        profile["bandwidth"] = _measure(list(bandwidth), quick=quick, destructive=destructive,
                                        numa_node=numa_node, plot=plot)
    if save:
        count = save_snapshot(access, save, profile)
        console.print(f"saved snapshot {save} ({count} entries)")
    if out_file:
        backup = write_keeping_backup(out_file, json.dumps(profile, indent=2) + "\n")
        if backup:
            console.print(f"kept the previous {out_file} as {backup}")
    if json_out:
        print_json(profile)
    else:
        console.print(render_summary(profile))
    if any(p.get("medium") == "tmpfs" for p in profile["paths"]):
        console.print(EMULATION_NOTE, style="dim")


def register(app: typer.Typer) -> None:
    app.command("probe")(probe)
