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
        if tps is None:  # a failed trial, as the tuner tells one
            study.tell(t, state=optuna.trial.TrialState.FAIL)
        else:
            study.tell(t, tps)
    return study


class FakeDemoEvaluator:
    """The demo's evaluator without servers: each config runs at ``rates[shared_buffers]``
    tps (None: the run fails), and every call is recorded with the duration it ran at."""

    def __init__(self, rates, duration=28):
        from types import SimpleNamespace

        self.rates, self.duration, self.calls, self.closed = rates, duration, [], False
        self.workload = SimpleNamespace(turn_s=1)

    def _measure(self, config, turns=None):
        from pmem_advisor.tuner.evaluator import Measurement

        tps = self.rates[config.params["shared_buffers"]]
        if tps is None:
            return Measurement(ok=False, failure="server crashed")
        return Measurement(ok=True, throughput_tps=tps,
                           raw={"turn_tps": [tps] * turns} if turns else {})

    def evaluate(self, config):
        self.calls.append(("one", [config.params["shared_buffers"]], self.duration))
        return self._measure(config)

    def evaluate_in_turns(self, configs, turn_s):
        self.calls.append(("turns", [c.params["shared_buffers"] for c in configs],
                           self.duration))
        return [self._measure(c, turns=int(self.duration // turn_s)) for c in configs]


def with_fake_demo(monkeypatch, rates):
    """Swap the demo's real evaluator (benchmarks.noise.open_demo) for a FakeDemoEvaluator."""
    from benchmarks import noise

    ev = FakeDemoEvaluator(rates)

    def close():
        ev.closed = True

    monkeypatch.setattr(noise, "open_demo", lambda log, memory: (ev, close, {"server": "fake"}))
    return ev
