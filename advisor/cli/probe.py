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
from pmem_advisor.fileio import write_file_safely
from pmem_advisor.library.probe import emulated, resource_lines
from pmem_advisor.library.probe import probe as run_probe
from pmem_advisor.probes.summary import render_summary


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
    profile = run_probe(root=root, save=save, paths=list(path), medium=list(medium),
                        cgroup=cgroup, measure=not no_measure, bandwidth=list(bandwidth),
                        quick=quick, plot=plot, destructive=destructive, numa_node=numa_node,
                        say=note, progress=progress)
    if out_file:
        backup = write_file_safely(out_file, json.dumps(profile, indent=2) + "\n")
        if backup:
            note(f"kept the previous {out_file} as {backup}")
    if chosen_format(fmt, json_out) == "json":
        print_json(profile)
    else:
        _print_summary(profile)
    if emulated(profile):
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
    for line in resource_lines(profile):
        out.print(line, markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    app.command("probe")(probe)
