"""The bundled learned policy and `simweb train`: candidates read from the observation
alone, checkpoints that round-trip bit for bit, the same weights from the same seed (two
runs, 1 or 2 local workers, Ray, a kill and a resume), `simweb eval --agent learned`, and
one-line errors for bad checkpoints."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import simweb
from simweb.episodes.learner import FEATURES, CheckpointError, LearnedPolicy, load_checkpoint, save_checkpoint
from simweb.episodes.rollout import run_episode
from simweb.tools.cli import main
from simweb.tools.train import TRAIN_SEEDS, TrainConfig, TrainError, read_metrics, train

pytestmark = pytest.mark.apps("issues")

#: a run short enough for CI whose groups do get different rewards (so the weights move)
#: (advance_at=0: the adaptive curriculum moves every template's start each iteration, so a
#: resume must restore the frontiers too)
TINY = dict(app="issues", tasks=["issues/mark_all_read"], iterations=3, group=6, instances=2, max_steps=3, seed=1,
            clean_bonus=0.1, advance_at=0.0)


def tiny(**kw) -> TrainConfig:
    return TrainConfig(**{**TINY, **kw})


AXTREE = """RootWebArea 'Submit a post — Site', focused
\t[nav-home] link 'Home', url='/'
\t[q] searchbox 'Search posts'
\t[go] button 'Search'
\t[title] textbox 'Title'
\t[community] combobox 'Community' value='', hasPopup='menu', expanded=False
\t\toption 'c/python', selected=False
\t\toption 'c/chess', selected=False
\t[up] button '▲ Upvote', pressed='false'
\tStaticText '12 points'
"""


def test_candidates_come_from_the_observation_alone():
    """No env, no state: a goal and an AX tree are all the policy needs; the final message
    is always a candidate (the answer action ends an episode under every rule)."""
    pol = LearnedPolicy()
    pol.reset(object(), seed=3)
    obs = {"goal": "Post in c/chess with the title “Hello there” and upvote it.", "axtree": AXTREE,
           "last_action_error": "", "url": "http://example.test/submit"}
    acts, effects, x, probs = pol.scores(obs)
    assert x.shape == (len(acts), len(FEATURES))
    # untrained: a kind uniformly (click, fill, select, the final message, back), then one of its candidates
    kinds = sorted({e[0] for e in effects})
    assert kinds == ["back", "click", "done", "fill", "select"]
    assert abs(probs.sum() - 1) < 1e-12
    for k in kinds:
        mine = probs[[i for i, e in enumerate(effects) if e[0] == k]]
        assert abs(mine.sum() - 1 / len(kinds)) < 1e-12 and np.allclose(mine, mine[0])
    for a in ("click('up')", "fill('title', 'Hello there')", "fill('q', 'Hello there')",
              "select_option('community', 'c/chess')", "send_msg_to_user('done')", "go_back()"):
        assert a in acts, a
    assert not any(a.startswith("send_msg_to_user('12") for a in acts)    # no answers to a non-question
    q = dict(obs, goal="How many points does the post have? Answer with the number.")
    assert "send_msg_to_user('12 points')" in pol.scores(q)[0]
    out = pol.act(obs)
    assert out.text in acts and out.logprob is not None and out.logprob < 0


def test_policy_acts_the_same_for_the_same_seed():
    env = simweb.make("issues")
    trajs = []
    for _ in range(2):
        pol = LearnedPolicy(np.linspace(-1, 1, len(FEATURES)))
        trajs.append(run_episode(env, pol, task="issues/mark_all_read", seed=1000, max_steps=8))
    assert [s["action"] for s in trajs[0].steps] == [s["action"] for s in trajs[1].steps]
    assert [s["logprob"] for s in trajs[0].steps] == [s["logprob"] for s in trajs[1].steps]


def test_checkpoint_round_trips_bit_for_bit(tmp_path):
    w = np.random.default_rng(0).normal(size=len(FEATURES)) * 1e-3
    save_checkpoint(tmp_path / "c", LearnedPolicy(w, app="forum"))
    back = load_checkpoint(tmp_path / "c", "forum")
    assert back.weights.tobytes() == w.tobytes()
    with pytest.raises(CheckpointError, match="trained for app 'forum', not 'shopping'"):
        load_checkpoint(tmp_path / "c", "shopping")


def _weights(out: Path) -> bytes:
    return load_checkpoint(out).weights.tobytes()


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """The uninterrupted tiny run, on one in-process worker."""
    out = tmp_path_factory.mktemp("ref")
    train(tiny(), out)
    return out


def test_training_moves_the_weights_and_writes_its_files(reference):
    w = load_checkpoint(reference).weights
    assert np.any(w != 0), "no group had different rewards: the run learned nothing (pick another TINY seed)"
    assert not np.any(load_checkpoint(reference / "init").weights)
    rows = read_metrics(reference)
    assert [r["iteration"] for r in rows] == [0, 1, 2]
    for key in ("success", "clean", "progress", "reward", "loss", "steps", "wall"):
        assert all(isinstance(r[key], (int, float)) for r in rows), key
    doc = json.loads((reference / "policy.json").read_text())
    assert doc["format_version"] == 5 and doc["app"] == "issues" and doc["features"] == list(FEATURES)
    assert doc["train"]["iteration"] == 3 and "rng" in doc["train"]
    # the curriculum's frontier moved (advance_at=0) and is part of the state a resume restores
    # (two site actions: 1 -> 2 -> 3, the start, and no further: a frontier past the
    # plan's length has no group to judge it)
    assert doc["train"]["reach"] == {"issues/mark_all_read": 3}
    assert [r["reach"] for r in rows] == [{"issues/mark_all_read": i} for i in (2, 3, 3)]


def test_same_seed_same_weights_again_and_on_two_workers(reference, tmp_path):
    train(tiny(), tmp_path / "again")
    assert _weights(tmp_path / "again") == _weights(reference)
    train(tiny(), tmp_path / "two", workers=2)
    assert _weights(tmp_path / "two") == _weights(reference)
    train(tiny(seed=2), tmp_path / "other")
    assert _weights(tmp_path / "other") != _weights(reference)


def test_stop_and_resume_gives_the_same_weights(reference, tmp_path):
    out = tmp_path / "resumed"
    train(tiny(), out, stop_after=1)
    assert len(read_metrics(out)) == 1
    train(tiny(), out)
    assert _weights(out) == _weights(reference)
    assert [r["iteration"] for r in read_metrics(out)] == [0, 1, 2]
    with pytest.raises(TrainError, match="other settings"):
        train(tiny(group=4), out)


def test_killed_run_resumes_to_the_same_weights(reference, tmp_path):
    """A real SIGKILL in the middle of a run, then the same command again."""
    out = tmp_path / "killed"
    args = [sys.executable, "-m", "simweb.cli", "train", "--app", "issues", "--tasks", "issues/mark_all_read",
            "--iterations", "3", "--group", "6", "--instances", "2", "--max-steps", "3", "--seed", "1",
            "--clean-bonus", "0.1", "--advance-at", "0",
            "--out", str(out)]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and len(read_metrics(out)) < 1 and proc.poll() is None:
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert 1 <= len(read_metrics(out)) <= 3
    res = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert _weights(out) == _weights(reference)


def test_ray_gives_the_same_weights(reference, tmp_path):
    pytest.importorskip("ray")
    train(tiny(), tmp_path / "ray", backend="ray", workers=2)
    assert _weights(tmp_path / "ray") == _weights(reference)


def test_training_seeds_never_reach_the_held_out_ones():
    assert TRAIN_SEEDS <= 1000
    from simweb.tools.train import _starts

    env = simweb.make("issues")
    rng = np.random.default_rng(0)
    cfg = tiny(instances=200, curriculum="none")
    assert all(0 <= seed < TRAIN_SEEDS for _t, seed, _k, _s, _j in _starts(env, cfg, rng, {}))
    for curriculum in ("adaptive", "plan"):
        starts = _starts(env, tiny(instances=50, curriculum=curriculum), np.random.default_rng(0),
                         {"issues/mark_all_read": 9})
        assert all(0 <= seed < TRAIN_SEEDS for _t, seed, _k, _s, _j in starts)


def test_training_never_draws_a_sim2live_instance():
    """The pairs' portable instances (seeds from 0, inside the training range) are held out."""
    from simweb.tools.train import _starts, sim2live_instances

    held = sim2live_instances("issues")
    assert ("issues/close_issue", min(s for t, s in held if t == "issues/close_issue")) in held
    cfg = tiny(tasks=["issues/close_issue"], instances=300, curriculum="none")
    drawn = {(t, s) for t, s, _k, _b, _j in _starts(simweb.make("issues"), cfg, np.random.default_rng(0), {})}
    assert len(drawn) > 100 and not drawn & held


def test_curriculum_starts_before_a_site_action_and_moves_earlier_on_success():
    """A group never starts after the plan's last change (its final message is not a start
    point: a start there teaches "done" on a page the policy never changed); the frontier
    moves one action earlier only where its groups succeeded often enough."""
    from simweb.tools.train import _starts, advance_reach

    env = simweb.make("issues")
    env.reset(seed=5, options={"task": "issues/mark_all_read"})
    plan = env.oracle_plan()
    assert plan[-1].startswith("send_msg_to_user(") and len(plan) == 3
    starts = _starts(env, tiny(instances=40), np.random.default_rng(0), {})
    assert {k for _t, _s, k, _b, _j in starts} == {1}          # frontier 1: before the last site action
    starts = _starts(env, tiny(instances=40), np.random.default_rng(0), {"issues/mark_all_read": 5})
    assert {k for _t, _s, k, _b, _j in starts} == {0, 1}       # beyond the plan: the task's start
    r = advance_reach({}, [("a/x", 1, 0.75), ("a/x", 1, 0.25), ("a/y", 1, 0.25)], 0.5)
    assert r == {"a/x": 2}
    assert advance_reach(r, [("a/x", 1, 1.0), ("a/x", 2, 0.0)], 0.5) == r    # nearer the end does not count


def _traj(final: dict, last: str, steps: int = 2, reward: float = 0.0):
    from simweb.episodes.rollout import Trajectory

    return Trajectory({"group_reward": reward, "budget": 10},
                      [{"action": "click('x')", "verdict": None}] * (steps - 1) + [{"action": last, "verdict": final}])


def test_advantages_rank_success_above_clean_and_clean_above_damage():
    """A clean success ended with the final message gets the largest advantage; doing
    nothing beats doing damage, by the small clean term only; a success the agent never
    reported gets less than one it did."""
    from simweb.tools.train import group_weights

    done = "send_msg_to_user('done')"
    ok = {"success": True, "clean": True, "progress": 1.0}
    nothing = {"success": False, "clean": True, "progress": 0.0}
    damage = {"success": False, "clean": False, "progress": 0.0}
    trajs = [_traj(ok, done, reward=1.0), _traj(ok, "click('y')", reward=1.0), _traj(nothing, done),
             _traj(damage, done), _traj(nothing, done)]
    rewards, weights, wins = group_weights(trajs, tiny(clean_bonus=0.2))
    assert wins == [1.0, 0.0, 0.0, 0.0, 0.0]
    adv = [w[0] * 10 for w in weights]           # constant normaliser: A / budget
    assert adv[0] > adv[1] > adv[2] == adv[4] > adv[3]
    assert adv[2] - adv[3] < 0.25 < adv[1] - adv[2]
    # a group with no task reward: only the damage is charged, doing nothing gets 0 (a
    # reward for it would teach "say done at once" before any success is found; no charge
    # let forum learn to press buttons on wrong posts)
    _r, w2, _w = group_weights([_traj(nothing, done), _traj(damage, done)], tiny(clean_bonus=0.2))
    assert w2[0] == [0.0, 0.0] and w2[1][0] < 0 and w2[1][0] == w2[1][1]


# ----------------------------------------------------------------------------- the CLI

def cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def one_line_error(res, needle: str) -> None:
    assert res.exit_code == 2, (res.exit_code, res.output)
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("simweb: error:") and needle in lines[0], res.stderr


def test_eval_learned_writes_the_same_summary(reference, tmp_path):
    for ckpt in (reference, reference / "init"):
        out = tmp_path / ckpt.name
        res = cli("eval", "issues", "--agent", "learned", "--checkpoint", str(ckpt), "--tasks",
                  "issues/mark_all_read", "--seeds", "1000-1001", "--max-steps", "5", "--out", str(out))
        assert res.exit_code == 0, res.output
        summary = json.loads((out / "summary.json").read_text())
        assert summary[-1]["template"] == "total" and summary[-1]["episodes"] == 2
        assert set(summary[-1]) == {"template", "episodes", "success", "progress", "clean", "steps"}


def test_bad_checkpoints_are_one_line(reference, tmp_path):
    base = ["eval", "issues", "--agent", "learned", "--tasks", "issues/mark_all_read", "--seeds", "1000",
            "--out", str(tmp_path / "o")]
    one_line_error(cli(*base, "--checkpoint", str(tmp_path / "nowhere")), "no checkpoint at")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "policy.json").write_text("{not json")
    one_line_error(cli(*base, "--checkpoint", str(bad)), "not a readable checkpoint")
    (bad / "policy.json").write_text(json.dumps({"format": "something else"}))
    one_line_error(cli(*base, "--checkpoint", str(bad)), "not a simweb learned-policy checkpoint")
    doc = json.loads((reference / "policy.json").read_text())
    doc["weights"] = doc["weights"][:-1]
    (bad / "policy.json").write_text(json.dumps(doc))
    one_line_error(cli(*base, "--checkpoint", str(bad)), "weights are not")
    other = ["eval", "forum", "--agent", "learned", "--checkpoint", str(reference), "--seeds", "1000",
             "--out", str(tmp_path / "o2")]
    one_line_error(cli(*other), "trained for app 'issues', not 'forum'")
    one_line_error(cli(*base), "--agent learned needs --checkpoint")


def test_train_cli_bad_input_is_one_line(tmp_path):
    one_line_error(cli("train", "--app", "nope", "--out", str(tmp_path / "a")), "nope")
    one_line_error(cli("train", "--app", "issues", "--tasks", "forum/upvote_post", "--out", str(tmp_path / "b")),
                   "forum/upvote_post")
    one_line_error(cli("train", "--app", "issues", "--group", "1", "--out", str(tmp_path / "c")), "--group")
    corrupt = tmp_path / "d"
    corrupt.mkdir()
    (corrupt / "policy.json").write_text("{half a checkpoint")
    one_line_error(cli("train", "--app", "issues", "--out", str(corrupt)), "cannot resume")


# ----------------------------------------------------------------------------- sim2live (offline parts)

def _ep(family: str, index: int, sim: bool, live: bool) -> dict:
    return {"family": family, "index": index, "parting": None, "divergences": [],
            "sim": {"success": sim, "clean": True}, "live": {"success": live, "clean": True}}


def test_retained_gain_pairs_instances():
    from simweb.live.sim2live import retained_gain

    init = {"pair": "forum:spirit", "families": [{"family": "f"}],
            "episodes": [_ep("f", i, False, False) for i in range(4)]}
    trained = {"pair": "forum:spirit", "families": [{"family": "f"}],
               "episodes": [_ep("f", 0, True, True), _ep("f", 1, True, False), _ep("f", 2, True, True),
                            _ep("f", 3, False, False)]}
    g = retained_gain(init, trained)
    assert g["total"]["n"] == 4
    assert g["total"]["sim_gain"] == 0.75 and g["total"]["live_gain"] == 0.5
    assert abs(g["total"]["retained_gain"] - 2 / 3) < 1e-12
    lo, hi = g["total"]["retained_gain_ci"]
    assert 0 <= lo <= 2 / 3 <= hi <= 1
    assert g["families"]["f"]["sim_gain"] == 0.75


def test_sim2live_learned_bad_checkpoint_is_one_line_before_any_counterpart(reference, tmp_path):
    one_line_error(cli("sim2live", "--pair", "forum:spirit", "--agent", "learned", "--checkpoint",
                       str(tmp_path / "nowhere"), "--out", str(tmp_path / "s")), "no checkpoint at")
    one_line_error(cli("sim2live", "--pair", "forum:spirit", "--agent", "learned", "--checkpoint",
                       str(reference), "--out", str(tmp_path / "s")), "trained for app 'issues', not 'forum'")
    assert not (tmp_path / "s").exists()


def test_metrics_file_is_one_json_object_a_line(reference):
    lines = (reference / "metrics.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(line.strip() for line in lines[:-1])


def test_post_page_button_and_prior_buckets():
    """On a post's own page the instruction's button counts as the post's only for the
    first button of its name (a comment's ▲ Upvote gets the repeat feature); the prior's
    buckets make the button the goal names likelier than one click among all, and a
    kind still gets 1/kinds of the mass with all weights 0."""
    from simweb.episodes.env import SimEnv
    from simweb.episodes.learner import FEATURES as F
    from simweb.episodes.learner import LearnedPolicy, kind_offsets

    env = SimEnv("forum")
    obs, _ = env.reset(seed=1000, options={"task": "forum/upvote_post"})
    plan = env.oracle_plan()
    pol = LearnedPolicy(app="forum")
    pol.reset(env, 0)
    for a in plan[:3]:                           # search, Search, the post's title: its page
        acts, effects, _x, _p = pol.scores(obs)
        pol.remember(effects[acts.index(a)])
        obs, *_ = env.step(a)
    acts, effects, x, p = pol.scores(obs)
    title, repeat = F.index("click:button:instruction_x_title"), F.index("click:button:instruction_x_title_repeat")
    ctx = F.index("click:button:instruction_x_context")
    up = acts.index("click('post-up')")
    comment_ups = [i for i, a in enumerate(acts) if a.startswith("click('comment-") and a.endswith("-up')")]
    assert comment_ups and x[up, title] + x[up, ctx] == 1.0 and x[up, repeat] == 0.0
    assert all(x[i, title] == x[i, ctx] == 0.0 and x[i, repeat] == 1.0 for i in comment_ups)
    clicks = [i for i, e in enumerate(effects) if e[0] == "click"]
    kinds = {e[0] for e in effects}
    assert p[up] > 1.0 / len(kinds) / len(clicks)          # more than one click among all
    assert abs(sum(p[i] for i in clicks) - 1.0 / len(kinds)) < 1e-9
    assert np.allclose(np.exp(kind_offsets(effects)).sum(), len(kinds))


def test_curriculum_never_starts_right_after_a_fill():
    """A start state forked right after the plan's fill would leave the policy without its
    memory of filling the field (what points it at the button that submits it): such a
    start moves back before the fill, and its ``j`` says how far before the end it is."""
    from simweb.tools.train import _starts

    env = simweb.make("forum")
    env.reset(seed=5, options={"task": "forum/upvote_post"})
    plan = [a for a in env.oracle_plan() if not a.startswith("send_msg_to_user(")]
    assert plan[0].startswith("fill(") and len(plan) == 4     # fill, Search, the post, its button
    cfg = TrainConfig(app="forum", tasks=["forum/upvote_post"], instances=30)
    for reach in (3, 4):
        starts = _starts(env, cfg, np.random.default_rng(0), {"forum/upvote_post": reach})
        at_frontier = [(k, j) for _t, _s, k, _b, j in starts if j >= 3]
        assert at_frontier and all(k == 0 and j == 4 for k, j in at_frontier)   # before the fill: the start
        assert {k for _t, _s, k, _b, _j in starts} <= {0, 2, 3}                   # never k = 1 (after the fill)


PAGE = """RootWebArea 'Front page — Site', focused
\t[q] searchbox 'Search posts'
\t[go] button 'Search'
\t[p1] link 'Other post'
\t[c1] link 'c/python'
"""


def test_a_fill_seeking_a_text_and_one_repeating_it_share_no_weight():
    """Filling a field with a text the page does not show (searching for the goal's post)
    and with one it already shows (searching again on the results page) have features of
    disjoint families, so learning that the second is useless does not unlearn the first."""
    from simweb.episodes.learner import FEATURES as F

    pol = LearnedPolicy()
    pol.reset(object(), seed=0)
    goal = "Upvote the post “Best chess openings” in c/python."
    seek = {"goal": goal, "axtree": PAGE, "last_action_error": "", "url": "http://x.test/"}
    shown = dict(seek, axtree=PAGE.replace("'Other post'", "'Best chess openings'"))
    fill_features = [i for i, n in enumerate(F) if n.startswith("fill:") or n == "kind:fill"]
    rows = []
    for obs in (seek, shown):
        acts, _e, x, _p = pol.scores(obs)
        rows.append(x[acts.index("fill('q', 'Best chess openings')")])
    absent = {F[i] for i in fill_features if rows[0][i]}
    present = {F[i] for i in fill_features if rows[1][i]}
    assert absent and present and not absent & present
    assert all(n.startswith("fill:absent") for n in absent) and "kind:fill" in present


def test_reference_links_and_title_links_are_told_apart():
    """A link named as the goal's quoted title and one named as its reference (c/python)
    light different features; and on a thing's own page, the button whose name comes
    before the goal's quote (its verb) is told from another the instruction also names."""
    from simweb.episodes.learner import FEATURES as F

    pol = LearnedPolicy()
    pol.reset(object(), seed=0)
    page = PAGE.replace("'Other post'", "'Best chess openings'")
    obs = {"goal": "Upvote the post “Best chess openings” in c/python.", "axtree": page,
           "last_action_error": "", "url": "http://x.test/"}
    acts, _e, x, _p = pol.scores(obs)
    span, ref = F.index("click:link:name_is_span"), F.index("click:link:name_is_ref")
    title, community = x[acts.index("click('p1')")], x[acts.index("click('c1')")]
    assert (title[span], title[ref], community[span], community[ref]) == (1.0, 0.0, 0.0, 1.0)
    post = """RootWebArea 'Best chess openings — Site', focused
\t[lock] button 'Lock'
\t[add] button 'Add comment'
""" + "".join(f"\tStaticText 'comment {i}'\n" for i in range(30))   # a page, not a row: > 24 nodes
    obs = dict(obs, axtree=post, goal="Lock the post “Best chess openings” so nobody can add new comments.")
    acts, _e, x, _p = pol.scores(obs)
    lead, inst = F.index("click:button:lead_x_title"), F.index("click:button:instruction_x_title")
    lock, add = x[acts.index("click('lock')")], x[acts.index("click('add')")]
    assert lock[inst] == add[inst] == 1.0 and lock[lead] == 1.0 and add[lead] == 0.0


def test_a_link_the_instruction_names_counts_apart_where_the_goal_thing_is_shown():
    """"Add “X” to my cart": the Cart link is the instruction's on every page, but on a
    page that shows X (the search results) it is a weight of its own, so a policy that
    learned to open the cart to remove an item need not leave X's results for it."""
    from simweb.episodes.learner import FEATURES as F

    pol = LearnedPolicy()
    pol.reset(object(), seed=0)
    page = "RootWebArea 'Shop', focused\n\t[cart] link 'Cart'\n\t[p] link 'The Little Field'\n"
    goal = "Add one “The Little Field” to my shopping cart."
    plain, shown = F.index("click:link:name_in_instruction"), F.index("click:link:name_in_instruction_shown")
    rows = []
    for tree in (page.replace("The Little Field", "Another book"), page):
        acts, _e, x, _p = pol.scores({"goal": goal, "axtree": tree, "last_action_error": "", "url": "http://x.test/"})
        rows.append(x[acts.index("click('cart')")])
    assert (rows[0][plain], rows[0][shown]) == (1.0, 0.0)
    assert (rows[1][plain], rows[1][shown]) == (0.0, 1.0)
