"""The bad-input check the tools that re-measure a finished demo share (benchmarks.demo_study):
every argv names files in tmp_path; each bad input is one line and exit 2 before any server."""

import json

import pytest

FILES = ("absent.db", "plain.txt", "empty.db", "rows.jsonl", "other.jsonl", "absent.jsonl")


def assert_bad_input(module, tmp_path, capsys, monkeypatch, args, said):
    import optuna

    monkeypatch.setattr(module, "measure", lambda *a: pytest.fail("measured"))
    optuna.create_study(storage=f"sqlite:///{tmp_path / 'empty.db'}", study_name="s")
    (tmp_path / "plain.txt").write_text("not sqlite\n")
    (tmp_path / "other.jsonl").write_text(json.dumps({"scenario": "demo"}) + "\n")
    argv = [str(tmp_path / a) if a in FILES else a for a in args]
    assert module.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and said in err[0], err
    assert not (tmp_path / "absent.db").exists()  # nothing made where nothing was


def demo_study(path, trials):
    """A study at ``path`` shaped like a finished demo's: per trial (role, shared_buffers,
    measured tps or None); returns the study for its own attributes."""
    import optuna

    from pmem_advisor.tuner.study import CONFIG_ATTR, ROLE_ATTR

    study = optuna.create_study(storage=f"sqlite:///{path}", study_name="s",
                                direction="maximize")
    for role, shared_buffers, tps in trials:
        t = study.ask()
        t.set_user_attr(ROLE_ATTR, role)
        t.set_user_attr(CONFIG_ATTR, {"params": {"shared_buffers": shared_buffers},
                                      "init_params": {}})
        if tps is not None:
            t.set_user_attr("throughput_tps", tps)
        study.tell(t, tps or 0.0)
    return study
