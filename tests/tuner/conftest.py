from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from pmem_advisor.tuner.space import build_space
from pmem_advisor.tuner.storage import open_storage
from pmem_advisor.tuner.study import open_study
from tests.tuner.synthetic import BOUNDS, IMPORTANT, PRIORS, RULE_SETTINGS, SPECS

META = {"engine": "postgres", "flavour": "postgresql", "version": "18.6",
        "workload": "pgbench-tpcb", "objective": "throughput"}


def make_space(**kw):
    args = dict(engine="postgres", flavour="postgresql", version="18.6", important=IMPORTANT,
                bounds=BOUNDS, priors=PRIORS, rule_settings=RULE_SETTINGS,
                reasons={"shared_buffers": "PM001: a quarter of RAM"})
    args.update(kw)
    return build_space(SPECS, **args)


@pytest.fixture
def space():
    return make_space()


@pytest.fixture
def study_factory(tmp_path):
    def make(space=None, resume=False, meta=None, name="s", url=None, sampler=None):
        storage = open_storage(url or f"sqlite:///{tmp_path / 'study.db'}", heartbeat_s=2)
        return open_study(storage, name, meta or META, space, resume=resume, sampler=sampler)

    return make


@pytest.fixture
def shm_dir():
    """A data directory on /dev/shm (tmpfs, the stand-in for PMEM) not yet made, in a new
    directory the unprivileged server user can reach; removed afterwards."""
    d = tempfile.mkdtemp(prefix="pa-tune-", dir="/dev/shm" if os.path.isdir("/dev/shm")
                         else None)
    os.chmod(d, 0o755)
    yield Path(d) / "data"
    subprocess.run(["rm", "-rf", d], check=False)
