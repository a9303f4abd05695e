"""What-if sizing: --memory, --cpus, --medium and --version describe the target host for
recommend and check, whatever this machine has (pgtune and timescaledb-tune size for a host
described by flags the same way)."""

from __future__ import annotations

import json
import os

import pytest

from pmem_advisor.errors import EXIT_USAGE

GIB = 1 << 30


def _host_gib() -> float:
    with open("/proc/meminfo", encoding="ascii") as f:
        kb = next(int(line.split()[1]) for line in f if line.startswith("MemTotal:"))
    return kb / (1 << 20)


def test_recommend_sizes_a_bigger_host_than_this_one(run_cli):
    if _host_gib() >= 64 or (os.cpu_count() or 1) >= 16:
        pytest.skip("this machine is as big as the target: nothing to size beyond it")
    code, out, err = run_cli("recommend", "postgres", "--version", "17", "--memory", "64G",
                             "--cpus", "16", "--medium", "nvme", "--json")
    assert code == 0, err
    doc = json.loads(out)
    got = {s["name"]: s["value"] for s in doc["settings"]}
    assert got["shared_buffers"] == "16GB" and got["effective_cache_size"] == "48GB"
    assert got["max_worker_processes"] == "16" and got["max_parallel_workers"] == "16"
    assert got["effective_io_concurrency"] == "1000"  # nvme, without --data-dir
    t = doc["target"]
    assert (t["memory_bytes"], t["memory_source"], t["cpus"]) == (64 * GIB, "--memory", 16)
    assert (t["version"], t["data_medium"]) == ("17", "nvme")
    line = doc["notes"][0]
    assert line.startswith("sizes for a target host") and "(--memory)" in line
    assert "16 CPUs (--cpus)" in line and "nvme (--medium)" in line and "(--version)" in line
    assert doc["memory"]["total_bytes"] <= 64 * GIB


def test_the_table_says_it_sizes_for_a_target_host(run_cli):
    code, out, err = run_cli("recommend", "postgres", "--version", "17", "--memory", "64G",
                             "--cpus", "16")
    assert code == 0, err
    assert "sizes for a target host: 64.0 GiB RAM (--memory), 16 CPUs (--cpus)" in err
    assert "cpus: 16 from --cpus" in err and "is more than" not in err


def test_other_spelling_of_version_is_the_same_target(run_cli):
    a = run_cli("recommend", "postgres", "--version", "16", "--memory", "8G", "--json")
    b = run_cli("recommend", "postgres", "--server-version", "16", "--memory", "8G", "--json")
    assert a[0] == b[0] == 0
    assert json.loads(a[1])["settings"] == json.loads(b[1])["settings"]
    code, _, err = run_cli("recommend", "postgres", "--version", "16", "--server-version", "17")
    assert code == EXIT_USAGE and "contradict" in err


@pytest.mark.parametrize("cmd", [["recommend", "postgres"], ["check", "--db", "postgres"]])
def test_unknown_medium_is_exit_2_listing_the_valid_ones(run_cli, cmd):
    code, out, err = run_cli(*cmd, "--medium", "floppy")
    assert code == EXIT_USAGE, out + err
    assert err.count("\n") == 1 and "floppy" in err
    assert all(m in err for m in ("pmem", "cxl", "nvme", "ssd", "hdd", "tmpfs")), err


def test_medium_without_data_dir_reaches_the_rules(run_cli):
    hdd = json.loads(run_cli("recommend", "postgres", "--version", "16", "--medium", "hdd",
                             "--json")[1])
    nvme = json.loads(run_cli("recommend", "postgres", "--version", "16", "--medium", "nvme",
                              "--json")[1])
    rpc = {d["target"]["data_medium"]: next(s["value"] for s in d["settings"]
                                             if s["name"] == "random_page_cost")
           for d in (hdd, nvme)}
    assert rpc == {"hdd": "4", "nvme": "1.1"}


def test_check_takes_the_target_host_too(run_cli, tmp_path):
    conf = tmp_path / "postgresql.conf"
    conf.write_text("shared_buffers = 16GB\nmax_parallel_workers = 16\n"
                    "max_worker_processes = 16\n")
    code, out, err = run_cli("check", "--db", "postgres", "--version", "17", "--config",
                             str(conf), "--memory", "64G", "--cpus", "16", "--medium", "nvme",
                             "--format", "json")
    doc = json.loads(out)
    assert code == 0, doc["findings"]
    assert "memory: 64.0 GiB from --memory (host " in doc["budget"][0]
    assert doc["budget"][1].startswith("cpus: 16 from --cpus")
    assert not [f for f in doc["findings"] if f["rule"] in ("CK004", "CK005")], doc["findings"]
    assert doc["notes"][0].startswith("checks for a target host: 64.0 GiB RAM (--memory), "
                                      "16 CPUs (--cpus), data on nvme (--medium)")


def test_memory_no_host_has_is_refused(run_cli):
    code, _, err = run_cli("recommend", "postgres", "--memory", "99999T")
    assert code == EXIT_USAGE and "any host" in err


@pytest.mark.parametrize("db,version,name", [("postgres", "17", "postgresql.conf"),
                                             ("mariadb", "10.11", "my.cnf")])
def test_what_recommend_writes_for_a_target_host_passes_check_there(run_cli, tmp_path, db,
                                                                     version, name):
    target = ["--version", version, "--memory", "64G", "--cpus", "16", "--medium", "nvme"]
    out_file = tmp_path / name
    code, _, err = run_cli("recommend", db, *target, "--out", str(out_file))
    assert code == 0, err
    code, out, err = run_cli("check", "--db", db, "--config", str(out_file), *target,
                             "--format", "json")
    found = json.loads(out)["findings"]
    assert code == 0 and not [f for f in found if f["severity"] == "fail"
                              or f["rule"] in ("CK002", "CK004", "CK005")], found
