"""`simweb sim2live --agent learned` without a counterpart: the two halves (untrained,
trained) and how they are run, kept and paired. The live end-to-end form is in
tests/test_roundup_live.py (test_learned_pair_after_a_short_training_run)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from simweb.episodes.learner import FEATURES, LearnedPolicy, save_checkpoint
from simweb.live import sim2live_learned
from simweb.live.sim2live import retained_gain


def checkpoint(root: Path, trained: list[float] | None) -> Path:
    """A training folder: init/ all zeros, the trained policy's weights ``trained`` (zeros if None)."""
    save_checkpoint(root / "init", LearnedPolicy(app="issues"))
    save_checkpoint(root, LearnedPolicy(trained, app="issues"))
    return root


def ep(index: int, sim: bool, live: bool) -> dict:
    return {"family": "close_issue", "index": index, "parting": {"step": 1}, "divergences": [{"class": "page"}],
            "sim": {"success": sim, "clean": True}, "live": {"success": live, "clean": True}}


class FakeRun:
    """Stands in for simweb.sim2live.run: the untrained policy wins nothing, the trained one
    wins sim on every instance and live on the even ones."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, settings, on_episode=None, progress=False) -> dict:
        which = Path(settings.out).name
        self.calls.append(which)
        won = which == "trained"
        eps = [ep(i, won, won and i % 2 == 0) for i in range(settings.instances)]
        Path(settings.out).mkdir(parents=True, exist_ok=True)
        report = {"pair": settings.pair, "families": [{"family": "close_issue"}], "episodes": eps}
        (Path(settings.out) / "report.json").write_text(json.dumps(report))
        return report


@pytest.fixture()
def fake(monkeypatch) -> FakeRun:
    f = FakeRun()
    monkeypatch.setattr(sim2live_learned, "run", f)
    return f


def test_trained_and_untrained_run_on_the_same_instances_and_pair(fake, tmp_path):
    ck = checkpoint(tmp_path / "ck", [0.5] * len(FEATURES))
    g = sim2live_learned.run_learned("issues:roundup", ck, tmp_path / "out", instances=4)
    assert fake.calls == ["init", "trained"]
    t = g["total"]
    assert t["n"] == 4 and t["sim_before"] == 0.0 and t["sim_after"] == 1.0
    assert t["live_before"] == 0.0 and t["live_after"] == 0.5
    assert t["sim_gain"] == 1.0 and t["live_gain"] == 0.5 and t["retained_gain"] == 0.5
    assert g["same_policy"] is False and g["timing"]["init"]["how"] == "run"
    assert len(g["parting"]) == len(g["parting_init"]) == 4
    assert json.loads((tmp_path / "out" / "retained.json").read_text())["total"]["retained_gain"] == 0.5


def test_a_finished_half_is_kept_only_for_the_same_policy_and_instances(fake, tmp_path):
    ck = checkpoint(tmp_path / "ck", [0.5] * len(FEATURES))
    sim2live_learned.run_learned("issues:roundup", ck, tmp_path / "out", instances=4)
    fake.calls.clear()
    g = sim2live_learned.run_learned("issues:roundup", ck, tmp_path / "out", instances=4)
    assert fake.calls == [] and g["timing"]["trained"]["how"] == "kept from an earlier run"
    assert g["total"]["retained_gain"] == 0.5
    # Other weights behind the same folder: the untrained half is kept, the trained one runs again.
    checkpoint(tmp_path / "ck", [0.25] * len(FEATURES))
    sim2live_learned.run_learned("issues:roundup", ck, tmp_path / "out", instances=4)
    assert fake.calls == ["trained"]
    # Other instances: both run again.
    fake.calls.clear()
    sim2live_learned.run_learned("issues:roundup", ck, tmp_path / "out", instances=3)
    assert fake.calls == ["init", "trained"]


def test_an_untrained_checkpoint_runs_once_and_has_no_retained_gain(fake, tmp_path):
    ck = checkpoint(tmp_path / "ck", None)
    g = sim2live_learned.run_learned("issues:roundup", ck, tmp_path / "out", instances=3)
    assert fake.calls == ["init"] and g["same_policy"] is True
    assert g["total"]["sim_gain"] == 0.0 and g["total"]["live_gain"] == 0.0
    assert g["total"]["retained_gain"] is None and g["total"]["retained_gain_ci"] is None


def test_bad_checkpoint_is_a_sim2live_error(tmp_path):
    from simweb.live.sim2live import Sim2LiveError

    (tmp_path / "policy.json").write_text("{not json")
    with pytest.raises(Sim2LiveError, match="not a readable checkpoint"):
        sim2live_learned.policy_key(tmp_path)


def test_paired_gain_reports_both_rates_per_side():
    init = {"pair": "p", "families": [{"family": "close_issue"}], "episodes": [ep(i, False, i == 0) for i in range(4)]}
    trained = {"pair": "p", "families": [{"family": "close_issue"}], "episodes": [ep(i, True, True) for i in range(4)]}
    t = retained_gain(init, trained)["families"]["close_issue"]
    assert (t["sim_before"], t["sim_after"], t["live_before"], t["live_after"]) == (0.0, 1.0, 0.25, 1.0)
    assert t["live_gain"] == 0.75 and t["retained_gain"] == 0.75
