"""WebGym's task format: JSONL, one task a line.

A line is a JSON object with the fields

- ``task_name`` (alias ``task``): the goal given to the agent;
- ``website``: the start URL;
- ``domain``, ``subdomain``: free-text categories (optional here, default ``""``);
- ``evaluator_reference``: the facts a judge checks, as a list of fact groups
  ``{"id", "description", "facts": [str]}``.  Legacy forms are accepted and normalised
  to fact groups: a single string (one group, one fact), a list of strings (one group of
  one fact per string) and a list of ``{"description", "difficulty"}`` objects (one group
  of one fact per object, the fact being the description; any other keys of a group,
  such as that per-item ``difficulty``, are kept in :attr:`FactGroup.extra`);
- ``difficulty`` (optional): an int; when missing it is the number of facts;
- ``definite_answer`` (alias ``reference_answer``, which WebGym's async branch reads): a
  string, ``""`` when the task has no definite answer (WebGym's judge calls ``.strip()``
  on it; a number is read as its text, ``null`` as ``""``);
- ``attempt_level`` (optional);
- ``task_id``: when missing, a stable id is derived from the goal and the website.

Integers are read as WebGym's loader reads them (``pandas.read_json`` then ``int(...)``):
a float or a numeric string is accepted for ``difficulty``, ``task_id`` and
``attempt_level``.

Other keys are kept in :attr:`LiveTask.extra` and written back by :func:`dump_tasks`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..judging.taskmodel import STEP_BUDGETS, FactGroup, bucket_for, episode_budget

__all__ = [
    "STEP_BUDGETS",
    "FactGroup",
    "LiveTask",
    "TaskFormatError",
    "bucket_for",
    "dump_tasks",
    "load_tasks",
    "normalise_fact_groups",
    "export_task",
    "start_url",
    "to_webgym",
]

_KNOWN_KEYS = {
    "task_name", "task", "domain", "subdomain", "website", "difficulty",
    "evaluator_reference", "definite_answer", "reference_answer", "attempt_level", "task_id",
}


class TaskFormatError(ValueError):
    """A task file or task object does not follow WebGym's format (one-line message)."""


@dataclass(frozen=True)
class LiveTask:
    """One WebGym task.  ``goal`` is an alias of ``task_name``."""

    task_id: str | int
    task_name: str
    website: str
    evaluator_reference: tuple[FactGroup, ...] = ()
    definite_answer: str = ""
    domain: str = ""
    subdomain: str = ""
    difficulty: int = 0
    attempt_level: int | str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def goal(self) -> str:
        """The instruction shown to the agent."""
        return self.task_name

    @property
    def fact_count(self) -> int:
        """The number of facts over all fact groups."""
        return sum(len(g.facts) for g in self.evaluator_reference)

    def bucket(self) -> str:
        """``easy``, ``medium`` or ``hard`` from :attr:`difficulty`."""
        return bucket_for(self.difficulty)

    def step_budget(self, split: str = "test") -> int:
        """WebGym's step budget for this task's bucket in ``split`` (``train`` or ``test``)."""
        return episode_budget(self.bucket(), split=split, cap=None)

    def to_dict(self) -> dict[str, Any]:
        """The task as one WebGym JSON object.

        The answer is written under both ``definite_answer`` and ``reference_answer`` so
        that both WebGym's main and async branches read it.
        """
        out: dict[str, Any] = {
            "task_id": self.task_id,
            "task_name": self.task_name,
            "domain": self.domain,
            "subdomain": self.subdomain,
            "website": self.website,
            "difficulty": self.difficulty,
            "evaluator_reference": [g.to_dict() for g in self.evaluator_reference],
            "definite_answer": self.definite_answer,
            "reference_answer": self.definite_answer,
        }
        if self.attempt_level is not None:
            out["attempt_level"] = self.attempt_level
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> LiveTask:
        """Build a task from one WebGym JSON object; raises :class:`TaskFormatError`."""
        if not isinstance(obj, Mapping):
            raise TaskFormatError(f"a task must be a JSON object, not {type(obj).__name__}")
        name = obj.get("task_name", obj.get("task"))
        if not isinstance(name, str) or not name.strip():
            raise TaskFormatError("'task_name' (or 'task') must be a non-empty string")
        website = obj.get("website")
        if not isinstance(website, str) or not website.strip():
            raise TaskFormatError("'website' must be a non-empty string (the start URL)")
        for key in ("domain", "subdomain"):
            if obj.get(key) is not None and not isinstance(obj[key], str):
                raise TaskFormatError(f"'{key}' must be a string, not {type(obj[key]).__name__}")
        groups = normalise_fact_groups(obj.get("evaluator_reference"))
        difficulty = obj.get("difficulty")
        if difficulty is None:
            difficulty = sum(len(g.facts) for g in groups)
        else:
            difficulty = _int("difficulty", difficulty)
            if difficulty < 0:
                raise TaskFormatError(f"'difficulty' must be a non-negative int, not {obj['difficulty']!r}")
        answer = _answer_of(obj)
        level = obj.get("attempt_level")
        if level is not None:
            if isinstance(level, (bool, list, dict)):
                raise TaskFormatError(f"'attempt_level' must be an int or a string, not {level!r}")
            level = _int("attempt_level", level) if _int_like(level) else level
        task_id = obj.get("task_id")
        if task_id is None:
            digest = hashlib.sha1(f"{name}\n{website}".encode()).hexdigest()[:12]
            task_id = f"task-{digest}"
        elif isinstance(task_id, bool) or not isinstance(task_id, (str, int, float)):
            raise TaskFormatError(f"'task_id' must be a string or an int, not {task_id!r}")
        elif _int_like(task_id) and not (isinstance(task_id, float) and not task_id.is_integer()):
            task_id = _int("task_id", task_id)
        elif isinstance(task_id, float):
            raise TaskFormatError(f"'task_id' must be an int or a string, not {task_id!r}")
        return cls(
            task_id=task_id,
            task_name=name,
            website=website.strip(),
            evaluator_reference=groups,
            definite_answer=answer,
            domain=obj.get("domain") or "",
            subdomain=obj.get("subdomain") or "",
            difficulty=difficulty,
            attempt_level=level,
            extra={k: v for k, v in obj.items() if k not in _KNOWN_KEYS},
        )


def _int_like(value: Any) -> bool:
    """Whether WebGym's ``int(value)`` reads ``value`` as an integer (bools excluded)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, str):
        return re.fullmatch(r"\s*[+-]?\d+\s*", value) is not None
    return False


def _int(key: str, value: Any) -> int:
    """``int(value)`` as WebGym's loader applies it, or a one-line error."""
    if not _int_like(value):
        raise TaskFormatError(f"'{key}' must be an int (or a float or numeric string), not {value!r}")
    return int(value)


def _answer_of(obj: Mapping[str, Any]) -> str:
    values = []
    for key in ("definite_answer", "reference_answer"):
        value = obj.get(key)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if isinstance(value, (bool, list, dict)):
            raise TaskFormatError(f"'{key}' must be a string or a number, not {value!r}")
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        values.append(str(value))
    if len(values) == 2 and values[0] != values[1] and values[1]:
        raise TaskFormatError("'definite_answer' and 'reference_answer' differ")
    return values[0] if values else ""


def normalise_fact_groups(ref: Any) -> tuple[FactGroup, ...]:
    """Normalise any accepted form of ``evaluator_reference`` to fact groups.

    ``None``, ``""`` and ``[]`` give no groups.  A single object is read as one group.
    Raises :class:`TaskFormatError` on anything else.
    """
    if ref is None:
        return ()
    if isinstance(ref, str):
        return (FactGroup("1", ref, (ref,)),) if ref.strip() else ()
    if isinstance(ref, Mapping):
        ref = [ref]
    if isinstance(ref, (int, float)) and not isinstance(ref, bool) and math.isfinite(ref):
        ref = str(ref)   # WebGym's loader reads any other value as its text
        return (FactGroup("1", ref, (ref,)),)
    if not isinstance(ref, (list, tuple)):
        raise TaskFormatError(f"'evaluator_reference' must be a string or a list, not {type(ref).__name__}")
    groups = []
    for i, item in enumerate(ref):
        default_id = str(i + 1)
        where = f"evaluator_reference[{i}]"
        if isinstance(item, (int, float)) and not isinstance(item, bool) and math.isfinite(item):
            item = str(item)   # a list item is one fact, as WebGym reads it
        if isinstance(item, str):
            groups.append(FactGroup(default_id, item, (item,)))
        elif isinstance(item, FactGroup):
            groups.append(item)
        elif isinstance(item, Mapping):
            groups.append(_group_from_mapping(item, default_id, where))
        else:
            raise TaskFormatError(f"{where} must be a string or an object, not {type(item).__name__}")
    return tuple(groups)


def _group_from_mapping(item: Mapping[str, Any], default_id: str, where: str) -> FactGroup:
    gid = item.get("id", default_id)
    if isinstance(gid, bool) or not isinstance(gid, (str, int)):
        raise TaskFormatError(f"{where}.id must be a string or an int, not {gid!r}")
    description = item.get("description", "")
    if not isinstance(description, str):
        raise TaskFormatError(f"{where}.description must be a string, not {type(description).__name__}")
    if "facts" in item:
        facts = item["facts"]
        if isinstance(facts, str):
            facts = [facts]
        if not isinstance(facts, list) or not all(isinstance(f, str) for f in facts):
            raise TaskFormatError(f"{where}.facts must be a list of strings")
    elif description:
        facts = [description]  # legacy {description, difficulty}: the description is the fact
    else:
        raise TaskFormatError(f"{where} has neither 'facts' nor 'description'")
    extra = {k: v for k, v in item.items() if k not in ("id", "description", "facts")}
    return FactGroup(str(gid), description, tuple(facts), extra)


def load_tasks(path: str | os.PathLike[str]) -> list[LiveTask]:
    """Read a WebGym task JSONL file (blank lines ignored).

    Raises :class:`TaskFormatError` naming file and line for a malformed line or a
    duplicate ``task_id``.
    """
    where = os.fspath(path)
    tasks: list[LiveTask] = []
    first_line: dict[str, int] = {}
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TaskFormatError(f"{where}:{lineno}: invalid JSON: {exc.msg} (column {exc.colno})") from None
            try:
                task = LiveTask.from_dict(obj)
            except TaskFormatError as exc:
                raise TaskFormatError(f"{where}:{lineno}: {exc}") from None
            key = str(task.task_id)
            if key in first_line:
                raise TaskFormatError(f"{where}:{lineno}: duplicate task_id {key!r} (first on line {first_line[key]})")
            first_line[key] = lineno
            tasks.append(task)
    return tasks


def task_line(task: LiveTask | Mapping[str, Any]) -> str:
    """One task as a line of WebGym JSONL (without the newline)."""
    if not isinstance(task, LiveTask):
        task = LiveTask.from_dict(task)
    return json.dumps(task.to_dict(), ensure_ascii=False)


def dump_tasks(tasks: Iterable[LiveTask | Mapping[str, Any]], path: str | os.PathLike[str]) -> int:
    """Write tasks as WebGym JSONL (UTF-8, one object a line); returns how many were written."""
    count = 0
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for task in tasks:
            fh.write(task_line(task) + "\n")
            count += 1
    return count


def to_webgym(
    task_id: str | int,
    goal: str,
    start_url: str,
    fact_groups: Any,
    answer: str | int | float | None = None,
    *,
    domain: str = "",
    subdomain: str = "",
    difficulty: int | None = None,
    attempt_level: int | str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> LiveTask:
    """Build a WebGym task, e.g. to export one of simweb's synthetic tasks.

    ``fact_groups`` takes any form ``evaluator_reference`` accepts (fact groups as
    :class:`FactGroup` or dicts, or the legacy forms); ``difficulty`` defaults to the
    number of facts; ``answer`` None is written as ``""``; ``extra`` keys are written
    after the standard ones.
    """
    obj: dict[str, Any] = {
        "task_id": task_id,
        "task_name": goal,
        "website": start_url,
        "evaluator_reference": fact_groups,
        "definite_answer": answer,
        "domain": domain,
        "subdomain": subdomain,
        "difficulty": difficulty,
        "attempt_level": attempt_level,
    }
    for key, value in (extra or {}).items():
        obj.setdefault(key, value)
    return LiveTask.from_dict(obj)


#: The served app's path that starts a task (signs in, sets the task up, redirects).
def start_url(base_url: str, task_id: str, seed: int, variant: int = 0) -> str:
    """The GET start URL of a simweb task on a served app: ``<base>/_simweb/start?task=<id>&seed=<n>``
    (``&variant=<k>`` on a site variant, simweb.variants)."""
    from ..serving.omnibox.start import start_url as start_path

    return f"{base_url.rstrip('/')}{start_path(task_id, seed, variant)}"


def export_task(app: Any, template_id: str, seed: int, base_url: str, task_id: int, *,
                domain: str = "simweb", subdomain: str = "", variant: int = 0) -> LiveTask:
    """One simweb task instance as a WebGym task.

    ``task_id`` and ``difficulty`` (the number of facts) are ints; ``definite_answer``
    is the answer the oracle gives (information tasks), else ``""``; ``website`` is
    :func:`start_url`, so WebGym's ``visit_page(website)`` signs in and sets the task up.
    The simweb template and seed are kept as ``simweb_task`` and ``simweb_seed``.
    """
    from ..web.actions import ActionError, parse_action

    template = app.tasks[template_id]
    inst = template.instantiate(app, seed, variant=variant)   # the variant's instance: its policies (goal, answer)
    answer = ""
    plan = template.oracle(app, inst.params)
    if plan:
        try:
            last = parse_action(plan[-1])
        except ActionError:
            last = None
        if last is not None and last.name == "send_msg_to_user":
            answer = str(last.arguments["text"])
    extra: dict[str, Any] = {"simweb_task": template_id, "simweb_seed": int(seed)}
    if variant:   # a site variant is a website of its own (simweb.variants)
        extra["simweb_variant"] = int(variant)
    return to_webgym(task_id, inst.goal, start_url(base_url, template_id, seed, variant),
                     [g.to_json() for g in inst.fact_groups], answer, domain=domain, subdomain=subdomain,
                     difficulty=inst.n_facts, extra=extra)
