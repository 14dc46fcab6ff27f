"""Simtracker's effect builders: what a task may change in the tracker, and to what.

Templates declare their intended effect (simweb.effects) from these builders; the engine
judges every other changed field as collateral damage. What the site derives on the row
a task changes (an issue's modification day, its closing day when its state changes) is
claimed here, on that row only, so that the same derived change on any other issue (the
trace of a change made and undone there) still counts as damage.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from simweb.judging.effects import ANY, Check, Expect, NewRow, Row, eq, text
from simweb.judging.verify import normalise_text, split_items


def issue(issue_id: int, label: str, **fields: Expect) -> Row:
    """Issue ``issue_id`` may change only in ``fields`` (each with its expectation), plus
    the modification day the site sets on it, and the closing day when the state is one
    of the fields. ``fields`` may be empty: a row that only gets a new comment."""
    claimed: dict[str, Expect] = {"updated_day": ANY, **fields}
    if "state" in fields:
        claimed["closed_day"] = ANY
    return Row("issues", issue_id, claimed, label=label)


def comment(issue_id: int, author_id: int, body: str, label: str) -> NewRow:
    """One new user comment by ``author_id`` on the issue with exactly ``body``."""
    return NewRow("comments", {"issue_id": eq(issue_id), "author_id": eq(author_id), "body": text(body),
                               "system": eq(False)}, label=label)


def member(project_id: int, user_id: int, role: str, label: str) -> NewRow:
    """One new membership of the user in the project with ``role``."""
    return NewRow("members", {"project_id": eq(project_id), "user_id": eq(user_id), "role": eq(role)}, label=label)


def listed(items: Iterable[str], label: str, prefix: str = "") -> Check:
    """The answer lists exactly ``items``, in any order, separated by commas, semicolons,
    new lines or "and"; a leading ``prefix`` ('@' of a username, '#' of an issue number)
    may be written or left out, as the site shows the item with it."""
    want = {_bare(x, prefix) for x in items}

    def test(app: Any, start: dict, final: dict, answer: str | None) -> tuple[bool, str]:
        got = {_bare(x, prefix) for x in split_items(answer)}
        return got == want, f"expected {sorted(want)}, got {answer!r}"

    return Check(f"answer lists the {label}", test)


def _bare(item: str, prefix: str) -> str:
    s = normalise_text(item)
    return s[len(prefix):].strip() if prefix and s.startswith(prefix) else s
