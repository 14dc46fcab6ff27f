"""docs/apps.md's tutorial, followed: its files build an app that registers, runs and
passes the whole contract (a throw-away app outside the tree, as a contributor's would be)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import simweb
from simweb.runtime import registry

DOC = Path(__file__).resolve().parents[1] / "docs" / "apps.md"
_BLOCK = re.compile(r"```[a-z]*\n(?:# file: |\{# file: )(?P<path>[^\s#]+)(?: #\})?\n(?P<body>.*?)```", re.S)


@pytest.fixture(scope="module")
def notes_app(tmp_path_factory):
    root = tmp_path_factory.mktemp("tutorial")
    files = {m["path"]: m["body"] for m in _BLOCK.finditer(DOC.read_text())}
    assert "notes/__init__.py" in files and "notes/notes.yaml" in files, sorted(files)
    for rel, body in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    sys.path.insert(0, str(root))
    registry.register("notes", "notes:APP")
    yield files
    del registry._REGISTRY["notes"]
    sys.path.remove(str(root))
    for name in [m for m in sys.modules if m == "notes" or m.startswith("notes.")]:
        del sys.modules[name]


def test_the_tutorial_app_solves_its_tasks(notes_app):
    env = simweb.make("notes")
    for tid in ("notes/newest_tagged", "notes/add_note"):
        env.reset(seed=0, options={"task": tid})
        for action in env.oracle_plan():
            obs, reward, terminated, truncated, info = env.step(action)
            assert obs["last_action_error"] == ""
        assert info["verdict"]["success"] and info["verdict"]["clean"] and reward == 1.0


def test_the_tutorial_app_passes_the_contract(notes_app):
    report = simweb.check_app("notes", seeds=range(3))
    assert report.passed, str(report)
    assert len(report.results) >= 7


def test_the_tutorial_app_catches_damage(notes_app):
    env = simweb.make("notes", end_on_success=False)
    env.reset(seed=1, options={"task": "notes/add_note"})
    for action in env.oracle_plan(final=False):
        env.step(action)
    env.step("click('home')")
    env.step("click('note-1')")
    *_, info = env.step("click('delete')")
    v = info["verdict"]
    assert v["success"] and not v["clean"]
    assert "collateral: runtime.entities.notes.1" in [c["name"] for c in v["checks"]]


def test_the_tutorial_answers_cannot_be_guessed(notes_app):
    from simweb.tools.redteam import GUESS_RATE_LIMIT, guess_rates

    rates = guess_rates(simweb.make("notes"), "notes/newest_tagged", range(40))
    assert max(rates.values()) <= GUESS_RATE_LIMIT, rates


_COUNTS = {"three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
           "eleven": 11, "twelve": 12}


def test_the_tutorial_heading_counts_the_files_it_asks_for():
    """The heading's "in N files" is the number of files the tutorial writes (the code
    blocks that start with a ``file:`` line, which the fixture above creates)."""
    text = DOC.read_text()
    heading = re.search(r"^## Tutorial: .* in (\w+) files$", text, re.M)
    assert heading is not None, "the tutorial's heading names its file count"
    files = [m["path"] for m in _BLOCK.finditer(text)]
    assert len(set(files)) == len(files), files
    assert _COUNTS[heading.group(1)] == len(files), (heading.group(0), files)
