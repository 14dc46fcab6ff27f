"""The text interface of LLM policies (simweb.textenv): any text is read without raising
and either runs one action or comes back as last_action_error; every oracle action
round-trips through its text form; the LLM agent and the text env share one reader; the
oracle solves a task through the text env; group starts are forks of one state."""
from __future__ import annotations

import pytest
from conftest import APPS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simweb
from simweb.agents import prompts
from simweb.agents.llm import LLMAgent
from simweb.episodes.textenv import (
    MAX_REPLY_CHARS,
    TEXT_ACTIONS,
    GroupStarts,
    TextEnv,
    call_text,
    observation_text,
    parse_reply,
    prompt_text,
)
from simweb.web.actions import ACTIONS, parse_action

TASK, SEED = "forum/upvote_post", 3

# Replies: free text, and text built around calls (known and unknown names, good and bad
# arguments, fenced, two calls), which is where a reader's edge cases are.
_names = st.sampled_from([*ACTIONS, "eval", "exec", "__import__", "click_", "Click"])
_args = st.lists(st.one_of(st.text(max_size=12), st.integers(-5, 10**6), st.floats(allow_nan=True),
                           st.none(), st.lists(st.text(max_size=4), max_size=2)), max_size=3)
_calls = st.builds(lambda n, a: f"{n}({', '.join(map(repr, a))})", _names, _args)
_replies = st.one_of(
    st.text(max_size=300),
    st.builds(lambda pre, c, post: f"{pre}{c}{post}", st.text(max_size=40), _calls, st.text(max_size=40)),
    st.builds(lambda c: f"```python\n{c}\n```", _calls),
    st.builds(lambda a, b: f"{a}\n{b}", _calls, _calls),
)


@settings(max_examples=400, deadline=None)
@given(_replies)
def test_any_text_parses_or_is_a_reading_error(text: str):
    got = parse_reply(text)
    if got.action is None:
        assert got.error and "\n" not in got.error
    else:
        action = parse_action(got.action)        # what the reader lets through, the env can run
        assert action.name in TEXT_ACTIONS and not got.error


def test_reader_refuses_what_is_not_text_or_too_long():
    assert parse_reply(None).action is None and "TypeError" in parse_reply(None).error
    assert parse_reply(b"click('1')").action is None
    long = "click('1') " + "x" * MAX_REPLY_CHARS
    assert parse_reply(long).action is None and "at most" in parse_reply(long).error


@pytest.fixture(scope="module")
def forum_text() -> TextEnv:
    return TextEnv(simweb.make("forum"), max_axtree_chars=2000)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_replies)
def test_any_reply_is_a_step_never_an_exception(forum_text: TextEnv, text: str):
    forum_text.reset(task=TASK, seed=SEED)
    step = forum_text.step(text)
    assert step.observation["step"] == 1                      # a reply always takes one step
    if step.action is None:
        assert step.observation["last_action_error"] == parse_reply(text).error
        assert step.observation["last_action_error"] in step.text    # the next prompt shows it
        assert step.reward == 0.0


@pytest.mark.parametrize("app", APPS)
def test_every_oracle_action_round_trips_through_its_text_form(app: str):
    env = simweb.make(app)
    n = 0
    for task in env.app.tasks:
        env.reset(seed=0, options={"task": task})
        for action in env.oracle_plan():
            n += 1
            assert parse_reply(action).action == action, (task, action)
            assert parse_reply(f"I will do this.\n```{action}```").action == action, (task, action)
            parsed = parse_action(action)
            assert parse_action(call_text(parsed.name, *parsed.args)) == parsed, (task, action)
    assert n > 50


def test_the_llm_agent_and_the_text_env_share_one_reader():
    # The LLM agent's BrowserGym format reads with the same function (BrowserGym's action set),
    # and the text env adds only check / uncheck to the names it accepts.
    assert prompts.BrowserGymPrompt().read("```click('12')```") == prompts.read_reply("```click('12')```")
    assert prompts.read_reply("check('a')").action is None
    assert parse_reply("check('a')").action == "check('a')"
    assert set(TEXT_ACTIONS) == set(prompts.BROWSERGYM_ACTIONS) | {"check", "uncheck"}
    assert LLMAgent.act.__globals__["unreadable_action"] is prompts.unreadable_action


def test_oracle_solves_a_task_through_the_text_env():
    env = TextEnv(simweb.make("forum"))
    first = env.reset(task=TASK, seed=SEED)
    assert first.text.startswith("# Goal\n" + first.observation["goal"])
    assert "# Action syntax" in first.text and "check('b31')" in first.text
    step = first
    for action in env.env.oracle_plan():
        step = env.step(f"The next step.\n```{action}```")
        assert step.action == action and not step.observation["last_action_error"]
    assert step.done and step.reward == 1.0 and step.info["verdict"]["success"]
    assert "# Action syntax" not in step.text


def test_prompt_text_cuts_the_tree_and_shows_the_error():
    obs = {"goal": "G", "url": "http://x/", "axtree": "RootWebArea 'T'\n" + "\tlink 'a'\n" * 500,
           "last_action_error": "ValueError: Received an empty action."}
    text = observation_text(obs, max_axtree_chars=300)
    assert "Title: T" in text and "is cut)" in text and "# Error from the last action" in text
    assert len(text) < 700 and prompt_text(obs).endswith("Reply with one action.\n")


def test_group_starts_are_forks_of_one_root():
    starts = GroupStarts(capacity=2)
    a = starts.fork("forum", TASK, SEED)
    b = starts.fork("forum", TASK, SEED)
    assert a is not b and a.state_hash() == b.state_hash()
    a.step(a.oracle_plan()[0])
    assert a.state_hash() != b.state_hash()                  # children never touch each other...
    assert starts.fork("forum", TASK, SEED).state_hash() == b.state_hash()   # ...nor the root
    plan = b.oracle_plan()
    mid = starts.fork("forum", TASK, SEED, prefix=plan[:2])
    assert mid.state["meta"]["step"] == 2
    starts.fork("forum", TASK, SEED + 1)
    assert len(starts._roots) == 2                             # bounded
