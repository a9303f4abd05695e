"""What a check or a recommendation is for: the engine named, the installed server's version,
the host's memory as given, and the host's probe profile. Shared by `recommend` and the gate
(issue 55 moved them out of cli/recommend.py so the gate's library does not import the CLI)."""

from __future__ import annotations

import json
import os

from pmem_advisor.errors import InputError, UsageError
from pmem_advisor.knobs.units import parse_bytes


def load_profile(profile: str | None, root: str | None, paths: list[str]) -> dict:
    """A profile from a JSON file, from a machine tree (``--root``), or from this machine."""
    if profile and root:
        raise UsageError("give either --profile or --root, not both")
    if profile:
        try:
            with open(profile, "rb") as f:
                raw = f.read(PROFILE_CAP + 1)
        except OSError as e:
            raise InputError(f"{profile}: cannot read: {e.strerror}") from None
        if len(raw) > PROFILE_CAP:
            raise InputError(f"{profile}: larger than {PROFILE_CAP >> 20} MiB: not a probe profile")
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise InputError(f"{profile}: not text (binary data): not a probe profile") from None
        except json.JSONDecodeError as e:
            raise InputError(f"{profile}:{e.lineno}: not JSON: {e.msg}") from None
        from pmem_advisor.rules.facts import validate_profile

        return validate_profile(data, profile)
    from pmem_advisor.probes.profile import probe
    from pmem_advisor.probes.sysaccess import SysAccess

    if root is not None and not os.path.isdir(root):
        raise UsageError(f"--root {root}: not a directory")
    return probe(SysAccess(root or "/"), [p for p in paths if p])


def split_engine(engine: str) -> tuple[str, str | None]:
    """An engine name or alias -> (engine, flavour it picks): 'pg' -> ('postgres',
    'postgresql'), 'mariadb' -> ('mysql', 'mariadb'), 'mysql' -> ('mysql', None). The names
    are data (advisor/engines/*/<name>.yaml); UsageError for an unknown one."""
    from pmem_advisor.engines.registry import resolve

    eng, flavour = resolve(engine)
    return eng.name, flavour


def installed_version(engine: str, flavour: str | None) -> tuple[str | None, str | None]:
    """The best installed server's (flavour, version), when --version is not given."""
    from pmem_advisor.engines.registry import get_engine

    return get_engine(engine).installed_version(flavour)


MIB = 1 << 20
PROFILE_CAP = 64 << 20  # a probe profile is kilobytes; anything this big is the wrong file
# No host has more: x86-64 and arm64 address at most 52 bits (4 PiB) of physical memory.
MAX_HOST_MEMORY = 1 << 52


def parse_memory(text: str) -> int:
    """--memory: a size with a unit; a bare number below 1 MiB is surely missing its unit, and
    more than any host can address is surely a typo. Any other size is a target host's RAM,
    whatever this machine has (rules.budget.effective_budget's ``target``)."""
    n = parse_bytes(text, "--memory")
    if str(text).strip().isdigit() and n < MIB:
        raise UsageError(f"--memory {text}: a bare number is bytes, which cannot be meant; "
                         f"give a unit, e.g. --memory {text.strip()}G")
    if n > MAX_HOST_MEMORY:
        raise UsageError(f"--memory {text}: more RAM than any host can address "
                         "(4 PiB, 52-bit physical addresses)")
    return n


