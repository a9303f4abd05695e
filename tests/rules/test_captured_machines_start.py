"""recommend on every captured machine of the probe tests gives a config a real server starts.

One PostgreSQL and one MariaDB/MySQL instance each, restarted once per machine (batched). The
machines' RAM and CPUs are overridden (--memory 1G --cpus 2) to fit this test host; the rules,
placement and PMEM facts come from each captured tree.
"""

from __future__ import annotations

import pytest

from tests.probes.machine_builder import build, machine_names

pytestmark = [pytest.mark.server, pytest.mark.slow]


def _configs(engine: str, tmp_path) -> list[tuple[str, str]]:
    from pmem_advisor.library.recommend import build_recommendation, emit

    out = []
    for name in machine_names():
        root = build(name, tmp_path / name)
        from pmem_advisor.probes.profile import probe
        from pmem_advisor.probes.sysaccess import SysAccess

        mounts = probe(SysAccess(str(root)))["mounts"]
        pm = next((m["mountpoint"] for m in mounts if m.get("medium") in ("pmem", "cxl")), "/")
        rec = build_recommendation(engine, root=str(root), data_dir=f"{pm.rstrip('/')}/db",
                                   memory="1G", cpus=2, clients=20, version=None)
        out.append((name, emit(rec)))
    return out


@pytest.mark.parametrize("engine", ["postgres", "mysql"])
def test_recommended_configs_start(engine, tmp_path):
    from pmem_advisor.errors import EnvironmentProblem
    from pmem_advisor.instances import create_instance, pick_server

    try:
        binary = pick_server(engine)
    except EnvironmentProblem as e:
        pytest.skip(f"no {engine} server: {e}")
    configs = _configs(engine if engine == "postgres" else binary.flavour, tmp_path)
    assert configs, "no captured machines"
    with create_instance(binary) as inst:
        inst.initialize()
        inst.start("")
        for name, text in configs:
            inst.restart(text)  # raises ServerError with the server's reason when it refuses
            assert inst.is_running(), name
