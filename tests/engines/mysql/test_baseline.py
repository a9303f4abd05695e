"""engines/mysql/baseline.py: the dedicated-server sizing of MariaDB on a small budget gives the
buffer pool what the side caches (MyISAM key cache, Aria page cache, log buffer) do not need."""

from __future__ import annotations

import json

from pmem_advisor.rules.memory import MB

POOL_DEFAULT = 128 * MB  # MariaDB's and MySQL's own default


def _recommend(run_cli, *args: str) -> tuple[dict, dict]:
    code, out, err = run_cli("recommend", *args, "--json")
    assert code == 0, err
    doc = json.loads(out)
    return {s["name"]: s["value"] for s in doc["settings"]}, doc["memory"]


def _bytes(v) -> int:
    s = str(v)
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * units[s[-1]] if s[-1] in units else int(s)


def test_a_1g_mariadb_gets_a_pool_larger_than_the_default(run_cli):
    got, mem = _recommend(run_cli, "mariadb", "--version", "10.11", "--memory", "1G",
                          "--clients", "8")
    # the 128 MB key cache and 128 MB Aria cache defaults took the pool down to its own
    # default before: an InnoDB server's budget goes to InnoDB
    assert _bytes(got["key_buffer_size"]) == 16 * MB  # 1/64 of the budget
    assert _bytes(got["aria_pagecache_buffer_size"]) == 32 * MB  # 1/32 of the budget
    assert _bytes(got["innodb_log_buffer_size"]) == 16 * MB
    assert _bytes(got["innodb_buffer_pool_size"]) >= 3 * POOL_DEFAULT
    assert mem["total_bytes"] <= mem["budget_bytes"]


def test_a_large_budget_keeps_the_side_cache_defaults(run_cli):
    got, _ = _recommend(run_cli, "mariadb", "--version", "10.11", "--memory", "64G",
                        "--clients", "100")
    assert _bytes(got["key_buffer_size"]) == 128 * MB
    assert _bytes(got["aria_pagecache_buffer_size"]) == 128 * MB
    assert _bytes(got["innodb_log_buffer_size"]) == 64 * MB


def test_mysql_has_no_aria_cache_to_size(run_cli):
    got, _ = _recommend(run_cli, "mysql", "--version", "8.0", "--memory", "1G", "--clients", "8")
    assert "aria_pagecache_buffer_size" not in got and "key_buffer_size" not in got
    assert _bytes(got["innodb_buffer_pool_size"]) == 512 * MB


def test_under_1g_the_pool_s_reason_says_the_default_is_kept(run_cli):
    """At 768M the dedicated-server formula keeps 128 MB; the reason said "50% of RAM" beside a
    value that is not half, so a DBA could not tell a bug from the rule."""
    code, out, err = run_cli("recommend", "mariadb", "--version", "10.11", "--memory", "768M",
                             "--clients", "8", "--json")
    assert code == 0, err
    pool = next(s for s in json.loads(out)["settings"]
                if s["name"] == "innodb_buffer_pool_size")
    assert _bytes(pool["value"]) == POOL_DEFAULT
    assert "under 1 GB of RAM the 128 MB default is kept" in pool["reason"]
