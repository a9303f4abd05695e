"""What recommend writes for InnoDB never trips its own CK019: the redo follows the pool.

CK019 found it first: on a budget the pool could not keep (MEM-FIT lowered it to 128 MiB), the
redo stayed sized for the pool it had assumed (2 GB beside 128 MB on a 4 GiB MariaDB host,
1 GB on MySQL 8.4 at 1 GiB) and the reason still said "as large as the buffer pool".
"""

from __future__ import annotations

import pytest

BUDGETS = ("512M", "1G", "4G", "64G")


@pytest.mark.parametrize("memory", BUDGETS)
@pytest.mark.parametrize("target", [("mariadb", "10.11", "oltp"), ("mysql", "8.4", "oltp"),
                                    ("mysql", "8.0", "olap")])
def test_written_innodb_config_passes_ck019(run_cli, tmp_path, memory, target):
    engine, version, workload = target
    out = tmp_path / "my.cnf"
    args = ("--version", version, "--memory", memory, "--medium", "ssd", "--clients", "40")
    code, _, err = run_cli("recommend", engine, *args, "--workload", workload, "--out", str(out))
    assert code == 0, err
    code, cout, cerr = run_cli("check", "--db", engine, "--config", str(out), *args)
    assert "CK019" not in cout + cerr, cout + cerr
    for line in out.read_text().splitlines():  # a reason never claims what the value is not
        if line.startswith(("innodb_redo_log_capacity", "innodb_log_file_size")) and \
                "as large as the buffer pool (" in line:
            pool = next(ln for ln in out.read_text().splitlines()
                        if ln.startswith("innodb_buffer_pool_size"))
            value = line.split("=")[1].split("#")[0].strip()
            assert "lowered with the buffer pool" in line or \
                value == pool.split("=")[1].split("#")[0].strip(), line
