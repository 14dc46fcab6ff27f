"""WebGym task JSONL: fact-group forms, difficulty, budgets, errors, round trips."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simweb.live.tasks import (
    STEP_BUDGETS,
    FactGroup,
    LiveTask,
    TaskFormatError,
    bucket_for,
    dump_tasks,
    load_tasks,
    normalise_fact_groups,
    to_webgym,
)


def write_lines(path, lines):
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


def task(**over):
    base = {"task_id": "t1", "task_name": "Find the price", "website": "https://example.com",
            "domain": "shopping", "subdomain": "widgets",
            "evaluator_reference": [{"id": "g1", "description": "price", "facts": ["price is $9.99"]}],
            "definite_answer": "$9.99"}
    base.update(over)
    return base


def test_fact_groups_form(tmp_path):
    ref = [{"id": "a", "description": "site", "facts": ["on the site", "on the page"]},
           {"id": "b", "description": "price", "facts": ["price shown"]}]
    [t] = load_tasks(write_lines(tmp_path / "tasks.jsonl", [task(evaluator_reference=ref)]))
    assert t.evaluator_reference == (FactGroup("a", "site", ("on the site", "on the page")),
                                     FactGroup("b", "price", ("price shown",)))
    assert t.fact_count == 3 and t.difficulty == 3 and t.goal == "Find the price"


@pytest.mark.parametrize("ref, facts", [
    ("The price is $9.99", [("The price is $9.99",)]),
    (["fact one", "fact two"], [("fact one",), ("fact two",)]),
    ([{"description": "opened the page", "difficulty": 1}, {"description": "found it", "difficulty": 2}],
     [("opened the page",), ("found it",)]),
    ({"description": "one object", "facts": ["x", "y"]}, [("x", "y")]),
    (["plain", {"id": "z", "description": "d", "facts": "single"}], [("plain",), ("single",)]),
    (None, []),
    ("", []),
    ([], []),
])
def test_legacy_forms_normalise_to_fact_groups(ref, facts):
    groups = normalise_fact_groups(ref)
    assert [g.facts for g in groups] == facts
    assert all(isinstance(g, FactGroup) and isinstance(g.id, str) for g in groups)


def test_legacy_item_difficulty_is_kept_as_extra_and_written_back(tmp_path):
    ref = [{"description": "opened the page", "difficulty": 2}]
    [t] = load_tasks(write_lines(tmp_path / "t.jsonl", [task(evaluator_reference=ref)]))
    assert t.evaluator_reference[0].id == "1"
    assert t.evaluator_reference[0].extra == {"difficulty": 2}
    assert t.to_dict()["evaluator_reference"] == [
        {"id": "1", "description": "opened the page", "facts": ["opened the page"], "difficulty": 2}]


@pytest.mark.parametrize("n, bucket, train, test", [
    (0, "easy", 10, 30), (3, "easy", 10, 30), (4, "medium", 20, 50), (6, "medium", 20, 50),
    (7, "hard", 30, 70), (12, "hard", 30, 70),
])
def test_difficulty_from_facts_buckets_and_budgets(n, bucket, train, test):
    t = LiveTask.from_dict(task(evaluator_reference=[f"fact {i}" for i in range(n)]))
    assert t.difficulty == n
    assert t.bucket() == bucket == bucket_for(n)
    assert t.step_budget("train") == train and t.step_budget("test") == test
    assert t.step_budget() == test
    assert STEP_BUDGETS["train"][bucket] == train and STEP_BUDGETS["test"][bucket] == test


def test_explicit_difficulty_wins_over_fact_count():
    t = LiveTask.from_dict(task(difficulty=8))
    assert t.fact_count == 1 and t.difficulty == 8 and t.bucket() == "hard"


def test_unknown_split_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        LiveTask.from_dict(task()).step_budget("dev")


def test_aliases_and_optional_fields(tmp_path):
    line = {"task": "Do it", "website": "example.org", "reference_answer": 42, "attempt_level": 2,
            "evaluator_reference": "done", "custom": {"k": 1}}
    [t] = load_tasks(write_lines(tmp_path / "t.jsonl", [line]))
    assert t.task_name == "Do it" and t.definite_answer == "42" and t.attempt_level == 2
    assert t.domain == "" and t.subdomain == ""
    assert str(t.task_id).startswith("task-")  # derived, stable
    assert LiveTask.from_dict(line).task_id == t.task_id
    assert t.extra == {"custom": {"k": 1}}


def test_blank_lines_are_ignored(tmp_path):
    path = write_lines(tmp_path / "t.jsonl", ["", task(task_id="a"), "   ", task(task_id="b"), ""])
    assert [t.task_id for t in load_tasks(path)] == ["a", "b"]


@pytest.mark.parametrize("bad, what", [
    ("{not json", "invalid JSON"),
    ("[1, 2]", "must be a JSON object"),
    (json.dumps(task(website="")), "'website'"),
    (json.dumps({"website": "https://x"}), "'task_name'"),
    (json.dumps(task(difficulty="hard")), "'difficulty'"),
    (json.dumps(task(difficulty=-1)), "'difficulty'"),
    (json.dumps(task(evaluator_reference=[{"id": "g", "facts": [1, 2]}])), "evaluator_reference[0].facts"),
    (json.dumps(task(evaluator_reference=[None])), "evaluator_reference[0]"),
    (json.dumps(task(evaluator_reference=True)), "'evaluator_reference'"),
    (json.dumps(task())[:-1] + ', "difficulty": NaN}', "'difficulty'"),
    (json.dumps(task(difficulty="3.0")), "'difficulty'"),
    (json.dumps(task(task_id=1.5)), "'task_id'"),
    (json.dumps(task(definite_answer=["a"])), "'definite_answer'"),
    (json.dumps(task(evaluator_reference=[{"id": "g"}])), "neither 'facts' nor 'description'"),
    (json.dumps(task(definite_answer="a", reference_answer="b")), "differ"),
    (json.dumps(task(task_id=[1])), "'task_id'"),
    (json.dumps(task(task_id="t0")), "duplicate task_id 't0' (first on line 2)"),
])
def test_malformed_line_names_file_and_line(tmp_path, bad, what):
    path = tmp_path / "tasks.jsonl"
    write_lines(path, ["", task(task_id="t0"), "", "", "", "", bad, task(task_id="t9")])
    with pytest.raises(TaskFormatError) as info:
        load_tasks(path)
    message = str(info.value)
    assert message.startswith(f"{path}:7: ")
    assert what in message
    assert "\n" not in message


def test_dump_load_round_trip(tmp_path):
    tasks = [
        LiveTask.from_dict(task(task_id="a", extra_field=[1, 2], attempt_level=1)),
        LiveTask.from_dict(task(task_id=7, evaluator_reference=["x", "y", "z", "w"], definite_answer=None)),
        LiveTask.from_dict(task(task_id="c", evaluator_reference=[{"description": "legacy", "difficulty": 3}])),
    ]
    path = tmp_path / "out" / "tasks.jsonl"
    assert dump_tasks(tasks, path) == 3
    again = load_tasks(path)
    assert again == tasks
    first = json.loads(path.read_text().splitlines()[0])
    assert first["definite_answer"] == first["reference_answer"] == "$9.99"
    assert first["evaluator_reference"][0] == {"id": "g1", "description": "price", "facts": ["price is $9.99"]}
    assert first["extra_field"] == [1, 2]


def test_to_webgym_exports_a_synthetic_task(tmp_path):
    t = to_webgym("shopping/find_price-3", "What does the Widget cost?", "http://127.0.0.1:5000/",
                  [{"id": "price", "description": "the price", "facts": ["answer is 9.99", "widget page visited"]}],
                  "9.99", domain="shopping")
    assert t.difficulty == 2 and t.bucket() == "easy" and t.definite_answer == "9.99"
    dump_tasks([t], tmp_path / "x.jsonl")
    assert load_tasks(tmp_path / "x.jsonl") == [t]
    t2 = to_webgym("id", "goal", "https://e.com", (FactGroup("g", "d", ("f",)),), difficulty=5)
    assert t2.evaluator_reference == (FactGroup("g", "d", ("f",)),) and t2.bucket() == "medium"


def test_tasks_are_hashable():
    assert len({LiveTask.from_dict(task()), LiveTask.from_dict(task())}) == 1


_text = st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=20).filter(str.strip)


@settings(max_examples=40, deadline=None)
@given(groups=st.lists(st.tuples(_text, st.lists(_text, max_size=4)), max_size=4), answer=st.none() | _text)
def test_round_trip_property(tmp_path_factory, groups, answer):
    ref = [{"id": f"g{i}", "description": d, "facts": f} for i, (d, f) in enumerate(groups)]
    t = to_webgym("p", "goal ✓", "https://example.com/ü", ref, answer)
    assert t.difficulty == sum(len(f) for _, f in groups)
    path = tmp_path_factory.mktemp("rt") / "t.jsonl"
    dump_tasks([t], path)
    assert load_tasks(path) == [t]


# --------------------------------------------------------------------------- as WebGym reads them

def webgym_reads(obj):
    """What WebGym's loader does with one task row (rollout.py + AsyncWebGym._prepare_tasks +
    the judge's answer check), without pandas: the operations that raise on a bad row."""
    website = obj["website"]
    assert website.startswith("http")
    difficulty = int(obj["difficulty"])
    task_id = int(obj["task_id"])
    answer = obj["definite_answer"]
    has_answer = bool(answer and answer.strip())       # the judge calls .strip()
    ref = obj["evaluator_reference"]
    assert isinstance(ref, list) and ref and isinstance(ref[0], dict) and "facts" in ref[0]
    return task_id, difficulty, has_answer


def test_integers_may_come_as_floats_or_numeric_strings(tmp_path):
    path = write_lines(tmp_path / "t.jsonl", [task(task_id=3.0, difficulty="4", attempt_level=1.0),
                                              task(task_id="7", difficulty=2.0), task(task_id=" 9 ", difficulty=5.9)])
    tasks = load_tasks(path)
    assert [(t.task_id, t.difficulty) for t in tasks] == [(3, 4), (7, 2), (9, 5)]  # int() truncates, as WebGym's
    assert tasks[0].attempt_level == 1 and isinstance(tasks[0].task_id, int)


@pytest.mark.parametrize("ref, facts", [
    ("the price is shown", [("the price is shown",)]),
    (["a", "b"], [("a",), ("b",)]),
    ([{"description": "a", "difficulty": 1}, {"description": "b", "difficulty": 2}], [("a",), ("b",)]),
    ([{"id": "g", "description": "d", "facts": ["x", "y"]}], [("x", "y")]),
    (7, [("7",)]),
    ([3, "b"], [("3",), ("b",)]),
    (None, []),
    ([], []),
])
def test_every_evaluator_reference_form_webgym_reads(tmp_path, ref, facts):
    [t] = load_tasks(write_lines(tmp_path / "t.jsonl", [task(evaluator_reference=ref)]))
    assert [g.facts for g in t.evaluator_reference] == facts


def test_definite_answer_is_always_a_string(tmp_path):
    lines = [task(task_id=1, definite_answer=None), task(task_id=2, definite_answer=12.0),
             task(task_id=3, definite_answer=0.5), {k: v for k, v in task(task_id=4).items() if k != "definite_answer"}]
    tasks = load_tasks(write_lines(tmp_path / "t.jsonl", lines))
    assert [t.definite_answer for t in tasks] == ["", "12", "0.5", ""]
    out = tmp_path / "out.jsonl"
    dump_tasks(tasks, out)
    for line in out.read_text().splitlines():
        obj = json.loads(line)
        assert isinstance(obj["definite_answer"], str) and obj["definite_answer"] == obj["reference_answer"]


def test_export_writes_what_webgym_reads(tmp_path):
    from click.testing import CliRunner

    from simweb.tools.cli import main

    out = tmp_path / "forum.jsonl"
    result = CliRunner().invoke(main, ["export-webgym", "forum", "--out", str(out), "--per-template", "2",
                                       "--base-url", "http://127.0.0.1:8123/"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    read = [webgym_reads(r) for r in rows]
    assert [task_id for task_id, _, _ in read] == list(range(len(rows)))
    import simweb

    env = simweb.make("forum", seed=0)
    for row, (_, difficulty, has_answer) in zip(rows, read):
        template = env.app.tasks[row["simweb_task"]]
        assert row["website"] == (f"http://127.0.0.1:8123/_simweb/start?task={row['simweb_task']}"
                                  f"&seed={row['simweb_seed']}")
        assert difficulty == sum(len(g["facts"]) for g in row["evaluator_reference"])
        inst = template.instantiate(env.app, row["simweb_seed"])
        plan = template.oracle(env.app, inst.params)
        if plan[-1].startswith("send_msg_to_user"):   # information tasks: the answer the oracle gives
            assert has_answer and plan[-1] == f"send_msg_to_user({row['definite_answer']!r})"
        else:                                          # state changes and refusals
            assert row["definite_answer"] == ""
    assert any(h for _, _, h in read) and not all(h for _, _, h in read)
    again = load_tasks(out)
    assert [t.to_dict() for t in again] == rows
