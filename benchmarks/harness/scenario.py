"""Benchmark scenarios as data: benchmarks/scenarios/<name>.yaml, validated by schema.json.

A scenario fixes everything a measurement depends on except the config: server, workload,
scale, clients, where the data lives (disk or /dev/shm), the memory budget the server is held
to (a memory cgroup, see pmem_advisor.instances.cgroup) and the trial length.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from pmem_advisor.errors import UsageError
from pmem_advisor.knobs.units import parse_bytes

SCENARIO_DIR = Path(__file__).parent.parent / "scenarios"  # benchmarks/scenarios
SCHEMA_FILE = SCENARIO_DIR / "schema.json"
DURABILITY_FILE = SCENARIO_DIR / "ceiling" / "durability-off.yaml"


@dataclass(frozen=True)
class Scenario:
    name: str
    engine: str
    flavour: str
    version: str
    workload: str
    scale: int
    clients: int
    medium: str  # disk | shm
    path: str
    memory_budget: str
    duration_s: float
    warmup_s: float
    why: str
    workload_options: dict[str, Any] = field(default_factory=dict)
    rules_workload: str = "oltp"
    cpus: int = 2
    data_bytes_approx: str = ""
    repeats: int = 3
    workload_class: str = "oltp-write"
    # What a seed paper measured for this medium against the other (direction and section),
    # and whether the screens here reproduced it on emulated PMEM: written once measured.
    seed_direction: str = ""

    @property
    def memory_bytes(self) -> int:
        return parse_bytes(self.memory_budget, f"scenario {self.name}: memory_budget")

    @property
    def emulated_pmem(self) -> bool:
        return self.medium == "shm"

    def title(self) -> str:
        where = ("/dev/shm (tmpfs standing in for PMEM)" if self.emulated_pmem
                 else f"disk ({self.path})")
        return (f"{self.flavour} {self.version} {self.workload} scale {self.scale}, "
                f"{self.clients} clients, data on {where}, memory budget {self.memory_budget}")

    def to_dict(self) -> dict[str, Any]:
        """The scenario as a dataset's provenance records it: what ``validate`` reads back
        (an unwritten seed_direction is left out, as in the YAML: the schema wants a text)."""
        out = dict(self.__dict__)
        if not out["seed_direction"]:
            del out["seed_direction"]
        return out


def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_FILE.read_text())


def validate(data: Any, where: str = "scenario") -> Scenario:
    """A ``Scenario`` from parsed YAML; UsageError naming the first schema violation."""
    try:
        jsonschema.validate(data, _schema())
    except jsonschema.ValidationError as e:
        at = "/".join(str(p) for p in e.absolute_path) or "(top)"
        raise UsageError(f"{where}: {at}: {e.message}") from None
    return Scenario(**data)


def load(path: Path) -> Scenario:
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise UsageError(f"cannot read scenario {path}: {e}") from None
    scn = validate(data, str(path))
    if scn.name != path.stem:
        raise UsageError(f"{path}: name {scn.name!r} differs from the file name")
    return scn


def load_all(directory: Path = SCENARIO_DIR) -> dict[str, Scenario]:
    return {p.stem: load(p) for p in sorted(directory.glob("*.yaml"))}


def get(name: str, directory: Path = SCENARIO_DIR) -> Scenario:
    scenarios = load_all(directory)
    if name not in scenarios:
        raise UsageError(f"unknown scenario {name!r} (known: {', '.join(scenarios)})")
    return scenarios[name]


def durability_off(flavour: str, path: Path = DURABILITY_FILE) -> dict[str, Any]:
    """The settings that make the unsafe ceiling for ``flavour`` (empty if none known)."""
    data = yaml.safe_load(path.read_text()) or {}
    return dict(data.get(flavour) or {})
