"""Run one action list through two envs (e.g. sim and live) and compare them step by step.

The envs are duck-typed: anything with ``reset(seed=..., options=...) -> (obs, info)`` and
``step(action) -> (obs, reward, terminated, truncated, info)`` whose observations carry
``url``, ``axtree`` and ``last_action_error``.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

__all__ = ["AGREE_ON", "LIVE_AGREE_ON", "StepEnv", "axtree_elements", "axtree_roles_names", "compare_runs", "jaccard", "match_bids", "path_of",
           "write_report"]


#: What two runs must share to agree (see :func:`compare_runs`).
AGREE_ON = ("url", "error", "axtree", "done")
#: What a sim and a live run are compared on.
LIVE_AGREE_ON = ("url", "error")


class StepEnv(Protocol):
    """What :func:`compare_runs` needs of an env."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, Any]: ...

    def step(self, action: Any) -> tuple[Any, float, bool, bool, Any]: ...


_LINE = re.compile(r"^\s*(?:\[[^\]]*\]\s+)?([A-Za-z][\w-]*)(?:\s+('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"))?")


def axtree_roles_names(axtree: str) -> set[tuple[str, str]]:
    """The set of ``(role, name)`` pairs of a flattened AX tree (bids ignored)."""
    pairs = set()
    for line in axtree.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        role, quoted = match.group(1), match.group(2)
        name = quoted[1:-1] if quoted else ""
        pairs.add((role, " ".join(name.split())))
    return pairs


_ELEMENT = re.compile(r"^\s*\[([^\]]+)\]\s+([A-Za-z][\w-]*)(?:\s+('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"))?")


def axtree_elements(axtree: str) -> list[tuple[str, str, str]]:
    """The ``(bid, role, name)`` of every line of a flattened AX tree that has a bid, in order."""
    out = []
    for line in axtree.splitlines():
        match = _ELEMENT.match(line)
        if match:
            quoted = match.group(3)
            name = " ".join(quoted[1:-1].split()) if quoted else ""
            out.append((match.group(1), match.group(2), name))
    return out


_BID_ACTIONS = frozenset({"click", "dblclick", "hover", "fill", "clear", "check", "uncheck", "select_option",
                          "press", "focus"})


def match_bids(action: Any, obs_a: Any, obs_b: Any) -> Any:
    """``action`` (run on side a) with its element bid replaced by side b's bid of the
    same element, found by role and name (the k-th element with that role and name on
    a is the k-th on b; failing that, by name, then by role), and a ``select_option``'s
    option values replaced by their labels (from side a's HTML).  Actions without a
    bid, and bids that cannot be matched, are returned unchanged.

    Use it as ``compare_runs(sim, live, plan, map_action=match_bids)``: a sim and a live
    page number their elements differently (simweb bids vs set-of-marks labels).
    """
    from ..web.actions import Action, ActionError, parse_action

    if not isinstance(action, str) or not isinstance(obs_a, Mapping) or not isinstance(obs_b, Mapping):
        return action
    try:
        parsed = parse_action(action)
    except ActionError:
        return action
    if parsed.name not in _BID_ACTIONS:
        return action
    bid = str(parsed.args[0])
    a = axtree_elements(obs_a.get("axtree") or "")
    b = axtree_elements(obs_b.get("axtree") or "")
    target = next(((role, name) for eb, role, name in a if eb == bid), None)
    if target is None:
        return action
    role, name = target
    rest = tuple(parsed.args[1:])
    if parsed.name == "select_option" and obs_a.get("html"):
        rest = (_option_labels(obs_a["html"], bid, rest[0]),) + rest[1:]
    for same in (lambda r, n: (r, n) == (role, name), lambda r, n: n == name and bool(name),
                 lambda r, n: r == role):
        k = sum(1 for eb, r, n in a if same(r, n) and eb != bid and _before(a, eb, bid))
        hits = [eb for eb, r, n in b if same(r, n)]
        if k < len(hits):
            return Action(parsed.name, (hits[k],) + rest).to_code()
    return action


def _option_labels(html: str, bid: str, options: Any) -> Any:
    """The labels of the options a select_option names by value (a live page lists
    options by label only)."""
    from ..web.axtree import parse_page

    element = parse_page(html).elements.get(bid)
    if element is None or not element.options:
        return options
    labels = {value: label for value, label, _ in element.options}
    if isinstance(options, tuple):
        return tuple(labels.get(o, o) for o in options)
    return labels.get(options, options)


def _before(elements: list[tuple[str, str, str]], first: str, second: str) -> bool:
    order = [e[0] for e in elements]
    return order.index(first) < order.index(second)


def jaccard(a: set[Any], b: set[Any]) -> float:
    """|a & b| / |a | b|, and 1.0 for two empty sets."""
    union = a | b
    return 1.0 if not union else len(a & b) / len(union)


def path_of(url: str) -> str:
    """A URL without scheme and host: path, query and fragment (the default URL key)."""
    parts = urllib.parse.urlsplit(url or "")
    out = parts.path or "/"
    if parts.query:
        out += "?" + parts.query
    if parts.fragment:
        out += "#" + parts.fragment
    return out


def _answer(obs: Any, info: Any) -> Any:
    if isinstance(info, Mapping) and info.get("answer") is not None:
        return info["answer"]
    messages = obs.get("chat_messages") if isinstance(obs, Mapping) else None
    if isinstance(messages, list):
        for message in reversed(messages):
            if isinstance(message, Mapping) and message.get("role") == "assistant":
                return message.get("message", message.get("content"))
    return None


def _side(obs: Any, reward: float | None, terminated: bool, truncated: bool, info: Any) -> dict[str, Any]:
    obs = obs if isinstance(obs, Mapping) else {}
    axtree = obs.get("axtree") or ""
    return {
        "url": obs.get("url", ""),
        "error": obs.get("last_action_error") or "",
        "axtree_lines": len([line for line in axtree.splitlines() if line.strip()]),
        "reward": reward,
        "terminated": bool(terminated),
        "truncated": bool(truncated),
        "answer": _answer(obs, info),
        "_pairs": axtree_roles_names(axtree),
    }


def _record(index: int, action: Any, a: dict[str, Any] | None, b: dict[str, Any] | None,
            url_key: Callable[[str], str], agree_on: Sequence[str] = ("url", "error", "axtree")) -> dict[str, Any]:
    record: dict[str, Any] = {"step": index, "action": action if isinstance(action, (str, type(None))) else repr(action)}
    record["a"] = None if a is None else {k: v for k, v in a.items() if not k.startswith("_")}
    record["b"] = None if b is None else {k: v for k, v in b.items() if not k.startswith("_")}
    if a is None or b is None:
        record.update(url_match=None, error_match=None, axtree_jaccard=None, agree=False)
        return record
    record["url_match"] = url_key(a["url"]) == url_key(b["url"])
    record["error_match"] = bool(a["error"]) == bool(b["error"])
    record["axtree_jaccard"] = round(jaccard(a["_pairs"], b["_pairs"]), 6)
    checks = {"url": record["url_match"], "error": record["error_match"], "axtree": record["axtree_jaccard"] == 1.0}
    record["agree"] = all(checks[k] for k in agree_on if k in checks)
    return record


def compare_runs(
    env_a: StepEnv,
    env_b: StepEnv,
    actions: Iterable[Any],
    *,
    task_a: Any = None,
    task_b: Any = None,
    seed: int | None = None,
    url_key: Callable[[str], str] = path_of,
    map_action: Callable[[Any, Any, Any], Any] | None = None,
    agree_on: Sequence[str] = AGREE_ON,
) -> dict[str, Any]:
    """Reset both envs, then feed them the same actions and compare after each step.

    ``task_a``/``task_b`` go to ``reset(options={"task": ...})`` (no options when None).
    URLs are compared through ``url_key``, by default path, query and fragment only,
    since a sim and a live env serve the same page under different hosts (pass
    ``url_key=str`` for exact comparison).  ``map_action(action, obs_a, obs_b)`` gives
    the action env b runs (e.g. :func:`match_bids`), from both envs' observations before
    the step; a record whose b action differs carries it as ``action_b``.  ``agree_on``
    names what a record's ``agree`` needs: ``url``, ``error``, ``axtree`` (identical
    (role, name) sets) and, for the summary's ``full_agreement``, ``done`` (both runs end
    together); a sim and a live page are compared on ``("url", "error")`` since their
    AX trees come from different builders and a live run has no verifier to end it.  An env that
    has terminated or truncated is not stepped again; its side of later records is None.

    Returns ``{"steps": [...], "summary": {...}}``.  Record 0 is the reset.  Each record
    has ``step``, ``action``, ``a`` and ``b`` (``url``, ``error``, ``axtree_lines``,
    ``reward``, ``terminated``, ``truncated``, ``answer``), ``url_match``,
    ``error_match``, ``axtree_jaccard`` (Jaccard similarity of the AX trees' (role, name)
    sets) and ``agree`` (all three match).  The summary has ``steps`` (actions run),
    ``compared`` (records with both sides), ``url_agreement``, ``error_agreement``,
    ``mean_jaccard``, ``min_jaccard``, ``first_divergence`` (step of the first record
    that does not agree, or None), ``answer_a``, ``answer_b``, ``answers_match``,
    ``done_a``, ``done_b`` and ``full_agreement``.
    """
    obs_a, info_a = env_a.reset(seed=seed, options=None if task_a is None else {"task": task_a})
    obs_b, info_b = env_b.reset(seed=seed, options=None if task_b is None else {"task": task_b})
    side_a: dict[str, Any] | None = _side(obs_a, None, False, False, info_a)
    side_b: dict[str, Any] | None = _side(obs_b, None, False, False, info_b)
    steps = [_record(0, None, side_a, side_b, url_key, agree_on)]
    done_a = done_b = False
    answer_a = answer_b = None
    count = 0
    for action in actions:
        if done_a and done_b:
            break
        count += 1
        side_a = side_b = None
        action_b = map_action(action, obs_a, obs_b) if map_action is not None else action
        if not done_a:
            obs_a, reward, term, trunc, info = env_a.step(action)
            side_a = _side(obs_a, reward, term, trunc, info)
            done_a = bool(term or trunc)
            answer_a = side_a["answer"] if side_a["answer"] is not None else answer_a
        if not done_b:
            obs_b, reward, term, trunc, info = env_b.step(action_b)
            side_b = _side(obs_b, reward, term, trunc, info)
            done_b = bool(term or trunc)
            answer_b = side_b["answer"] if side_b["answer"] is not None else answer_b
        record = _record(count, action, side_a, side_b, url_key, agree_on)
        if action_b != action:
            record["action_b"] = action_b
        steps.append(record)
    both = [r for r in steps if r["a"] is not None and r["b"] is not None]
    jaccards = [r["axtree_jaccard"] for r in both]
    divergent = [r["step"] for r in steps if not r["agree"]]
    summary = {
        "steps": count,
        "compared": len(both),
        "url_agreement": _fraction(r["url_match"] for r in both),
        "error_agreement": _fraction(r["error_match"] for r in both),
        "mean_jaccard": round(sum(jaccards) / len(jaccards), 6) if jaccards else None,
        "min_jaccard": min(jaccards) if jaccards else None,
        "first_divergence": divergent[0] if divergent else None,
        "answer_a": answer_a,
        "answer_b": answer_b,
        "answers_match": answer_a == answer_b,
        "done_a": done_a,
        "done_b": done_b,
    }
    summary["full_agreement"] = (not divergent and summary["answers_match"]
                                 and (done_a == done_b or "done" not in agree_on))
    return {"steps": steps, "summary": summary}


def _fraction(flags: Iterable[bool]) -> float | None:
    values = list(flags)
    return round(sum(values) / len(values), 6) if values else None


def write_report(report: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Write a :func:`compare_runs` report as JSONL: one ``{"type": "step", ...}`` line
    per record, then one ``{"type": "summary", ...}`` line."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for record in report["steps"]:
            fh.write(json.dumps({"type": "step", **record}, ensure_ascii=False, default=str) + "\n")
        fh.write(json.dumps({"type": "summary", **report["summary"]}, ensure_ascii=False, default=str) + "\n")
