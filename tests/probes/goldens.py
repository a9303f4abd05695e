"""Probe a built fake machine the way the golden files were produced."""

from __future__ import annotations

import json
from pathlib import Path

from pmem_advisor.probes.profile import probe
from pmem_advisor.probes.sysaccess import SysAccess
from tests.probes.machine_builder import build, load_description

GOLDEN = Path(__file__).resolve().parent / "golden"


def probe_machine(name: str, workdir: Path) -> dict:
    """Build machine ``name`` under ``workdir`` and probe it with its ``paths``."""
    root = build(name, workdir / name)
    desc = load_description(name)
    profile = probe(SysAccess(str(root), kind="root"), desc.get("paths", []),
                    cgroup=desc.get("probe_cgroup"))
    profile["source"]["root"] = f"<machines/{name}>"  # the temp dir differs on every run
    return profile


def golden_path(name: str) -> Path:
    return GOLDEN / f"{name}.json"


def dump(profile: dict) -> str:
    return json.dumps(profile, indent=2) + "\n"
