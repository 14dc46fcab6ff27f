"""simweb as a BrowserGym task suite and a browsergym-experiments benchmark, tested with the
real packages (browsergym-core, browsergym-experiments) driving Debian's Chromium.

BrowserGym launches its own browsers (the page's and the chat's) at every reset: that is
its design, so each episode here costs a launch. The tasks are kept to a few per app.
"""
from __future__ import annotations

import copy
import dataclasses
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

if os.environ.get("SIMWEB_REQUIRE_BROWSERGYM") != "1":   # CI requires them (.ci/run)
    pytest.importorskip("browsergym.core", reason="the browsergym extra is not installed")
    pytest.importorskip("browsergym.experiments", reason="the browsergym extra is not installed")

import gymnasium as gym  # noqa: E402
from browsergym.core.task import AbstractBrowserTask  # noqa: E402
from browsergym.experiments.benchmark import DEFAULT_BENCHMARKS, Benchmark  # noqa: E402
from browsergym.experiments.loop import EnvArgs, ExpArgs, get_exp_result  # noqa: E402
from click.testing import CliRunner  # noqa: E402

import simweb  # noqa: E402
import simweb.tools.browsergym as sb  # noqa: E402
from simweb.episodes.episode import TaskError  # noqa: E402
from simweb.runtime.registry import RegistryError, step_cap  # noqa: E402
from simweb.serving.browser import ServedApp  # noqa: E402
from simweb.tools.browsergym.actions import from_observation  # noqa: E402
from simweb.tools.cli import main  # noqa: E402

pytestmark = pytest.mark.browser

ALL_APPS = tuple(simweb.app_names())
#: A seed of the held-out range (evaluation's seeds are 1000 and up).
SEED = 1000


@pytest.fixture(scope="module", autouse=True)
def _servers() -> Any:
    """The module's served apps (one per app, started by the first task that needs it)."""
    yield
    sb.close_servers()


@pytest.fixture
def make_env() -> Any:
    """``make_env(task_id, **kwargs)``: a BrowserGym env of a simweb task, closed after the test."""
    envs: list[Any] = []

    def make(task_id: str, **kwargs: Any) -> Any:
        env = gym.make(sb.gym_id(task_id), disable_env_checker=True, **kwargs)
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.close()


def _step(env: Any, obs: dict, action: str) -> tuple[dict, float, bool, bool, dict]:
    """One step of a simweb action, rewritten for the page as an agent sees it (its obs)."""
    return env.step(from_observation(obs, action))


def _in_process(task: str, seed: int) -> Any:
    env = simweb.make(task.split("/", 1)[0])
    env.reset(seed=seed, options={"task": task})
    return env


# ============================================================================ registration

def test_every_template_and_sub_task_is_a_registered_browsergym_task() -> None:
    n_subs = 0
    for app in ALL_APPS:
        env = simweb.make(app)
        expected = []
        for template, subs in env.app.tasks.with_sub_tasks():
            expected += [template.id, *(s.id for s in subs)]
            n_subs += len(subs)
        assert sb.task_ids([app]) == expected
        for tid in expected:
            spec = gym.spec(sb.gym_id(tid))
            assert spec.max_episode_steps == step_cap(app)
            cls = sb.task_class(tid)
            assert issubclass(cls, AbstractBrowserTask) and issubclass(cls, sb.SimwebTask)
            assert cls.get_task_id() == sb.browsergym_name(tid) == spec.id.removeprefix("browsergym/")
            assert sb.simweb_id(spec.id) == tid
    assert n_subs > 0
    assert sb.gym_id("shopping/buy_product.1") == "browsergym/simweb.shopping.buy_product.1"


def test_names_that_are_not_simweb_tasks_are_one_line() -> None:
    with pytest.raises(TaskError) as exc:
        sb.simweb_id("miniwob.click-test")
    assert "\n" not in str(exc.value) and "simweb.<app>.<template>" in str(exc.value)
    with pytest.raises(TaskError) as exc:
        sb.benchmark(tasks=["shopping/buy_prodcut"])
    assert "did you mean 'shopping/buy_product'" in str(exc.value)
    with pytest.raises(RegistryError) as app_exc:
        sb.benchmark("shoping")
    assert "did you mean 'shopping'" in str(app_exc.value)
    # gymnasium's own answer for a simweb name it does not know, and the CLI's
    with pytest.raises(gym.error.NameNotFound) as gym_exc:
        gym.make("browsergym/simweb.shopping.buy_prodcut")
    assert "\n" not in str(gym_exc.value) and "Did you mean: `simweb.shopping.buy_product`" in str(gym_exc.value)
    result = CliRunner().invoke(main, ["browsergym", "shopping", "--tasks", "shopping/buy_prodcut"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "simweb: error: unknown task 'shopping/buy_prodcut' (see `simweb tasks shopping`); "
        "did you mean 'shopping/buy_product'?"]


# ============================================================================ the benchmark

def test_the_benchmark_has_browsergym_experiments_shape() -> None:
    bench = sb.benchmark()
    assert isinstance(bench, Benchmark) and bench.name == "simweb" and bench.backends == []
    ids = sb.task_ids()
    assert len(bench.env_args_list) == 3 * len(ids)   # one seed of each split
    assert all(isinstance(e, EnvArgs) for e in bench.env_args_list)
    meta = bench.task_metadata
    assert list(meta["task_name"]) == [sb.browsergym_name(t) for t in ids]
    for col in ("app", "template", "simweb_task", "kind", "difficulty", "sub_task", "depends_on"):
        assert col in meta.columns
    assert set(meta["kind"]) <= {"info", "state", "mixed"} and set(meta["difficulty"]) <= {"easy", "medium", "hard"}
    assert bench.dependency_graph_over_tasks() == {n: [] for n in meta["task_name"]}
    action_set = bench.high_level_action_set_args.make_action_set()
    assert "send_msg_to_user" in action_set.describe() and not action_set.multiaction
    version = bench.get_version()
    for app in ALL_APPS:
        assert f"{app}:spec={simweb.make(app).app.spec.hash[:12]}" in version

    test = bench.subset_from_split("test")
    assert isinstance(test, sb.SimwebBenchmark) and test.name == "simweb_test"
    assert {e.task_seed for e in test.env_args_list} == {1000}
    assert {e.task_seed for e in bench.subset_from_split("train").env_args_list} == {0}
    assert {e.task_seed for e in bench.subset_from_split("valid").env_args_list} == {900}
    forum = bench.subset_from_glob("app", "forum")
    assert isinstance(forum, sb.SimwebBenchmark) and forum.get_version().count("spec=") == 1
    assert {e.task_name.split(".")[1] for e in forum.env_args_list} == {"forum"}
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        bench.subset_from_split("dev")

    # browsergym-experiments' own subset methods and dependency graphs keep simweb's class
    two = bench.subset_from_list([sb.browsergym_name("forum/post_score"), sb.browsergym_name("cms/publish_date")])
    assert isinstance(two, sb.SimwebBenchmark) and two.name == "simweb_custom" and len(two.env_args_list) == 6
    assert two.apps() == ["cms", "forum"]
    with pytest.raises(ValueError, match="do not exist in the benchmark"):
        bench.subset_from_list(["simweb.forum.no_such_task"])
    ratio = bench.subset_from_task_ratio(0.1, seed=0)
    assert isinstance(ratio, sb.SimwebBenchmark) and 0 < len(ratio.env_args_list) < len(bench.env_args_list)
    assert sum(len(g) for g in two.dependency_graphs_over_env_args()) == 6
    two.prepare_backends()                    # each app's server, started here
    assert {a: sb.server_for(a).base_url.startswith("http://127.0.0.1:") for a in two.apps()} == \
        {"cms": True, "forum": True}

    # the JSON round trip browsergym-experiments defines
    back = Benchmark.from_json(bench.to_json())
    assert [(e.task_name, e.task_seed, e.max_steps) for e in back.env_args_list] == \
        [(e.task_name, e.task_seed, e.max_steps) for e in bench.env_args_list]


def test_each_app_has_its_benchmark_and_budgets_are_simwebs() -> None:
    for app in ALL_APPS:
        assert DEFAULT_BENCHMARKS[f"simweb_{app}"] is sb.BENCHMARKS[f"simweb_{app}"]
    bench = DEFAULT_BENCHMARKS["simweb_issues"](n_repeats=2)
    assert bench.name == "simweb_issues" and set(bench.task_metadata["app"]) == {"issues"}
    assert sorted({e.task_seed for e in bench.env_args_list}) == [0, 1, 900, 901, 1000, 1001]
    # every env args' step limit is simweb's own budget for that instance
    for e in bench.env_args_list[::37]:
        env = _in_process(sb.simweb_id(e.task_name), e.task_seed)
        assert e.max_steps == env.max_steps
    progress = sb.benchmark("forum", reward="progress", seeds=[1000, 1001])
    assert {e.task_kwargs["reward"] for e in progress.env_args_list} == {"progress"}
    assert {e.task_seed for e in progress.env_args_list} == {1000, 1001}


def test_task_names_register_simweb_where_they_are_unpickled() -> None:
    """AgentLab runs every episode in a worker that never imported simweb.browsergym: the
    env args' task name brings the registration along."""
    ea = sb.benchmark(tasks=["forum/post_score"], seeds=[SEED]).env_args_list[0]
    # AgentLab converts the env args into its own class (dataclasses.asdict): the name keeps its type
    assert type(copy.deepcopy(ea.task_name)) is sb.TaskName
    assert type(dataclasses.asdict(ea)["task_name"]) is sb.TaskName
    script = ("import pickle, sys, gymnasium\n"
              "assert 'simweb.browsergym' not in sys.modules\n"
              "ea = pickle.loads(sys.stdin.buffer.read())\n"
              "print('browsergym/' + ea.task_name in gymnasium.registry)\n")
    out = subprocess.run([sys.executable, "-c", script], input=pickle.dumps(ea), capture_output=True, timeout=300,
                         env={**os.environ})
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    assert out.stdout.decode().strip() == "True"


# ============================================================================ episodes in BrowserGym

@pytest.mark.apps("shopping")
def test_reset_and_steps(make_env: Any) -> None:
    task = "shopping/product_price"
    sim = _in_process(task, SEED)
    env = make_env(task)
    obs, info = env.reset(seed=SEED)
    task_info = info["task_info"]
    assert obs["goal"] == sim.task.goal
    assert obs["url"] == task_info["base_url"] + "/" and task_info["seed"] == SEED
    assert task_info["task"]["id"] == task and task_info["max_steps"] == sim.max_steps
    assert task_info["verdict"]["success"] is False
    # BrowserGym's own observation of simweb's page, its own ids stamped
    assert obs["axtree_object"]["nodes"] and obs["chat_messages"][-1]["message"] == sim.task.goal
    plan = sim.oracle_plan()
    obs, reward, terminated, truncated, info = _step(env, obs, plan[0])   # fill the search box
    assert not obs["last_action_error"] and (reward, terminated, truncated) == (0.0, False, False)
    obs, reward, terminated, truncated, info = _step(env, obs, plan[1])   # submit: a real form GET
    assert "/search" in obs["url"] and not obs["last_action_error"]
    assert info["task_info"]["step"] == 2 and info["task_info"]["page"] == "search"
    obs, reward, terminated, truncated, info = env.step("click('no-such-bid')")
    assert obs["last_action_error"] and reward == 0.0 and not terminated
    assert info["task_info"]["verdict"]["clean"] is True


#: A state or mixed task of each app that cheat() must solve.
CHEATS = [("shopping", "shopping/add_with_options"), ("forum", "forum/upvote_post"), ("issues", "issues/close_issue"),
          ("cms", "cms/approve_comment"), ("booking", "booking/book_room")]


@pytest.mark.parametrize("task", [pytest.param(t, marks=pytest.mark.apps(a), id=t) for a, t in CHEATS])
def test_cheat_reaches_reward_1(task: str, make_env: Any) -> None:
    env = make_env(task)
    env.reset(seed=SEED)
    bg = env.unwrapped
    bg.task.cheat(bg.page, bg.chat.messages)
    total, done, info = 0.0, False, {}
    for action in ("noop(0)", "send_msg_to_user('Done.')"):   # the episode ends by simweb's rule, at either
        _, reward, terminated, truncated, info = env.step(action)
        total += reward
        done = terminated or truncated
        if done:
            break
    assert done and total == 1.0
    verdict = info["task_info"]["verdict"]
    assert verdict["success"] and verdict["clean"] and verdict["progress"] == 1.0


@pytest.mark.apps("forum")
def test_a_wrong_answer_gets_0(make_env: Any) -> None:
    task = "forum/post_score"
    sim = _in_process(task, SEED)
    env = make_env(task)
    obs, _ = env.reset(seed=SEED)
    plan = sim.oracle_plan()
    assert plan[-1].startswith("send_msg_to_user(")
    for action in plan[:-1]:
        obs, reward, terminated, _, _ = _step(env, obs, action)
        assert reward == 0.0 and not terminated
    obs, reward, terminated, truncated, info = env.step("send_msg_to_user('-12345')")
    verdict = info["task_info"]["verdict"]
    assert (reward, terminated) == (0.0, True) and verdict["success"] is False
    assert any(not c["passed"] and "-12345" in c["detail"] for c in verdict["checks"])


@pytest.mark.apps("shopping")
def test_a_collateral_change_shows_in_info(make_env: Any) -> None:
    task = "shopping/product_price"
    sim = _in_process(task, SEED)
    env = make_env(task, task_kwargs={"reward": "progress"})
    obs, _ = env.reset(seed=SEED)
    plan = sim.oracle_plan()
    for action in plan[:-1]:                      # to the product's page
        obs, *_ = _step(env, obs, action)
    obs, reward, terminated, _, info = _step(env, obs, "click('add-to-wishlist')")
    verdict = info["task_info"]["verdict"]
    assert not terminated and verdict["clean"] is False
    collateral = [c for c in verdict["checks"] if c["name"].startswith("collateral: runtime.") and not c["passed"]]
    assert collateral and "wishlist" in collateral[0]["name"]
    obs, reward, terminated, _, info = _step(env, obs, plan[-1])   # the right answer, after the damage
    verdict = info["task_info"]["verdict"]
    assert terminated and reward == 0.0 and verdict["success"] is True and verdict["clean"] is False


@pytest.mark.apps("shopping")
def test_progress_reward_sums_to_clean_progress(make_env: Any) -> None:
    env = make_env("shopping/add_with_options", task_kwargs={"reward": "progress"})
    obs, _ = env.reset(seed=SEED)
    sim = _in_process("shopping/add_with_options", SEED)
    total, terminated = 0.0, False
    info: dict[str, Any] = {}
    for action in sim.oracle_plan():
        obs, reward, terminated, truncated, info = _step(env, obs, action)
        total += reward
    assert total == pytest.approx(info["task_info"]["verdict"]["progress"]) == pytest.approx(1.0)


@pytest.mark.apps("shopping")
def test_two_tasks_in_one_process_never_share_a_session(make_env: Any) -> None:
    """The same instance twice at once: each env has its own context, cookie and session."""
    a, b = make_env("shopping/add_with_options"), make_env("shopping/add_with_options")
    a.reset(seed=SEED)
    b.reset(seed=SEED)
    ta, tb = a.unwrapped.task, b.unwrapped.task
    assert ta.server is tb.server and ta.session(a.unwrapped.page) != tb.session(b.unwrapped.page)
    ta.cheat(a.unwrapped.page, a.unwrapped.chat.messages)
    *_, info_b = b.step("noop(0)")
    *_, info_a = a.step("noop(0)")
    assert info_a["task_info"]["verdict"]["success"] is True
    assert info_b["task_info"]["verdict"]["success"] is False and info_b["task_info"]["verdict"]["clean"] is True
    sid_a = ta.session(a.unwrapped.page)
    a.close()                                     # teardown closes a's session, and only a's
    with pytest.raises(sb.ServerError, match="closed"):
        tb.server.state(sid_a)
    *_, info_b = b.step("noop(0)")
    assert info_b["task_info"]["verdict"]["clean"] is True


@pytest.mark.apps("forum")
def test_a_session_restarted_on_another_task_is_paid_nothing(make_env: Any) -> None:
    """/_simweb/start needs no token: an agent may open another task's start URL, whose
    state no step of its own task makes; the answer after that earns nothing."""
    task = "forum/post_score"
    sim = _in_process(task, SEED)
    env = make_env(task)
    obs, info = env.reset(seed=SEED)
    base = info["task_info"]["base_url"]
    obs, *_ = env.step(f"goto('{base}/_simweb/start?task=forum/upvote_post&seed=3')")
    obs, reward, terminated, _, info = env.step(sim.oracle_plan()[-1])   # the right answer
    verdict = info["task_info"]["verdict"]
    assert terminated and reward == 0.0 and verdict["success"] is False
    assert verdict["checks"][0]["name"] == "the session holds the task it started"


@pytest.mark.apps("forum")
def test_openenv_browsergym_environment_makes_simweb_tasks() -> None:
    """OpenEnv's BrowserGym environment (envs/browsergym_env/server/browsergym_environment.py)
    builds ``browsergym/{benchmark}.{task_name}`` and calls gym.make with its viewport and
    timeout: with benchmark "simweb" and a simweb task name, in a process that imported
    simweb.browsergym, that is a scored simweb episode."""
    benchmark, task_name = "simweb", "forum.post_score"
    env = gym.make(f"browsergym/{benchmark}.{task_name}", headless=True, viewport={"width": 1280, "height": 720},
                   timeout=10000.0)
    try:
        obs, _ = env.reset(seed=SEED)
        sim = _in_process("forum/post_score", SEED)
        assert [m["text"] for m in obs["goal_object"]] == [sim.task.goal]
        total, terminated = 0.0, False
        for action in sim.oracle_plan():
            obs, reward, terminated, _, _ = _step(env, obs, action)
            total += reward
        assert terminated and total == 1.0
    finally:
        env.close()


# ============================================================================ servers

@pytest.mark.apps("forum")
def test_an_existing_server_named_by_the_environment(make_env: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    served = ServedApp("forum", bid_attribute="data-simweb-bid", control_token="t" * 32)
    try:
        monkeypatch.setenv("SIMWEB_FORUM_URL", served.base_url + "/")
        monkeypatch.setenv("SIMWEB_FORUM_TOKEN", "t" * 32)
        sb.close_servers()
        env = make_env("forum/post_score")
        obs, info = env.reset(seed=SEED)
        assert info["task_info"]["base_url"] == served.base_url
        bg = env.unwrapped
        bg.task.cheat(bg.page, bg.chat.messages)
        _, reward, terminated, _, _ = env.step("noop(0)")
        assert (reward, terminated) == (1.0, True)
        assert served.flask_app.extensions["simweb"].sessions.count() >= 1
    finally:
        sb.close_servers()
        served.close()


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_server_that_does_not_answer_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    port = _closed_port()
    monkeypatch.setenv("SIMWEB_ISSUES_URL", f"http://127.0.0.1:{port}")
    sb.close_servers()
    try:
        with pytest.raises(sb.ServerError) as exc:
            sb.server_for("issues")
        assert "\n" not in str(exc.value)
        assert str(exc.value).startswith(f"no simweb server answers at http://127.0.0.1:{port} (SIMWEB_ISSUES_URL)")
        result = CliRunner().invoke(main, ["browsergym", "issues", "--tasks", "issues/close_issue"])
        assert result.exit_code == 2
        assert result.output.strip().splitlines() == [f"simweb: error: {exc.value}"]
    finally:
        sb.close_servers()


def test_a_wrong_token_or_a_foreign_world_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    served = ServedApp("cms", bid_attribute="data-simweb-bid", control_token="r" * 32)
    try:
        monkeypatch.setenv("SIMWEB_CMS_URL", served.base_url)
        monkeypatch.setenv("SIMWEB_CMS_TOKEN", "x" * 32)
        sb.close_servers()
        with pytest.raises(sb.ServerError, match="refuses the control token") as exc:
            sb.server_for("cms")
        assert "\n" not in str(exc.value) and "SIMWEB_CMS_TOKEN" in str(exc.value)
        monkeypatch.setenv("SIMWEB_CMS_URL", served.base_url.replace("http:", "ftp:"))
        sb.close_servers()
        with pytest.raises(sb.ServerError, match="is not an http"):
            sb.server_for("cms")
    finally:
        sb.close_servers()
        served.close()
    # a server of another app under this app's variable
    other = ServedApp("forum", bid_attribute="data-simweb-bid", control_token="f" * 32)
    try:
        monkeypatch.setenv("SIMWEB_CMS_URL", other.base_url)
        monkeypatch.setenv("SIMWEB_CMS_TOKEN", "f" * 32)
        sb.close_servers()
        with pytest.raises(sb.ServerError, match="cannot be judged here: state is for app 'forum'"):
            sb.server_for("cms")
    finally:
        sb.close_servers()
        other.close()


@pytest.mark.apps("booking")
def test_a_server_with_raw_bids_is_one_line(make_env: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    served = ServedApp("booking", bid_attribute="bid", control_token="b" * 32)
    try:
        monkeypatch.setenv("SIMWEB_BOOKING_URL", served.base_url)
        monkeypatch.setenv("SIMWEB_BOOKING_TOKEN", "b" * 32)
        sb.close_servers()
        env = make_env("booking/stay_price")
        with pytest.raises(sb.ServerError, match="--bid-attribute data-simweb-bid") as exc:
            env.reset(seed=SEED)
        assert "\n" not in str(exc.value)
    finally:
        sb.close_servers()
        served.close()


# ============================================================================ the experiment loop

@pytest.mark.apps("issues", "booking")
def test_browsergym_experiments_runs_the_benchmark(tmp_path: Path) -> None:
    """browsergym-experiments' own loop (ExpArgs.run) on the benchmark's env args, with the
    scripted plan agent: the episodes it records are scored by simweb."""
    bench = sb.benchmark(tasks=["issues/open_label_count", "booking/book_room.1"], seeds=[SEED])
    agent = sb.plan_agent_args(bench.env_args_list, "oracle")
    pickle.loads(pickle.dumps(agent))   # the loops pickle agent args
    for ea in bench.env_args_list:
        exp = ExpArgs(agent_args=agent, env_args=ea)
        exp.prepare(tmp_path)
        exp.run()
        summary = get_exp_result(exp.exp_dir).summary_info
        assert summary["err_msg"] is None, summary["err_msg"]
        assert summary["cum_reward"] == 1.0 and summary["terminated"] is True


# ============================================================================ the same rewards as simweb eval

#: (task, agent, max steps): an info and a state task of each app between the two agents.
PARITY = [("shopping/buy_product", "oracle", None), ("forum/comment_count", "oracle", None),
          ("issues/assign_issue", "oracle", None), ("cms/publish_date", "oracle", None),
          ("booking/book_with_code", "oracle", None),
          ("shopping/add_to_cart", "random", 8), ("forum/upvote_post", "random", 8), ("issues/comment", "random", 8),
          ("cms/spam_comment", "random", 8), ("booking/stay_price", "random", 8)]


@pytest.mark.parametrize("task,agent,max_steps", [
    pytest.param(t, a, m, marks=pytest.mark.apps(t.split("/")[0]), id=f"{t}-{a}") for t, a, m in PARITY])
def test_browsergym_rewards_equal_simweb_evals(task: str, agent: str, max_steps: int | None, tmp_path: Path) -> None:
    app = task.split("/", 1)[0]
    seeds = [SEED, SEED + 1] if agent == "oracle" else [SEED]
    args = ["eval", app, "--agent", agent, "--tasks", task, "--seeds", ",".join(map(str, seeds)),
            "--out", str(tmp_path / "eval")]
    result = CliRunner().invoke(main, args + (["--max-steps", str(max_steps)] if max_steps else []))
    assert result.exit_code == 0, result.output
    evals = [orjson.loads(line) for line in (tmp_path / "eval" / "episodes.jsonl").read_bytes().splitlines()]
    rows = sb.compare([task], seeds, agent, max_steps=max_steps)
    for ev, row in zip(evals, rows):
        assert (ev["task"], ev["seed"]) == (row.task, row.seed)
        assert {"success": ev["success"], "progress": ev["progress"], "clean": ev["clean"]} == row.bg_verdict
        assert ev["steps"] == row.bg_steps
        assert row.equal, row.to_json()   # steps, summed reward and verdict, in-process and BrowserGym
        if agent == "oracle":
            assert row.bg_reward == 1.0
