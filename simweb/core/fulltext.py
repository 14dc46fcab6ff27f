"""Full-text search helpers the apps' worlds share (SQLite FTS5).

A user's query never reaches FTS5 as syntax: :func:`match_expression` turns it into
quoted words ANDed together, the last one a prefix (search-as-you-type), and
:class:`PrefixPolicy` drops that prefix when the word alone is common, because merging
the postings of every word a common prefix starts dominates a query's cost on big
worlds (and the user almost surely typed the word whole).
"""
from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable

WORD_RE = re.compile(r"[^\W_]+")


def words(text: str | None) -> list[str]:
    """Runs of letters and digits, lowercased (everything else, FTS5 syntax included,
    separates words)."""
    return WORD_RE.findall((text or "").lower())


def match_expression(query: str | None, stopwords: Iterable[str] = (), max_terms: int = 10) -> str | None:
    """The FTS5 MATCH expression for a user's query, or None if it has no usable words.

    Words minus ``stopwords``, deduplicated, at most ``max_terms``; each is quoted, so it
    can never be read as an operator; they are ANDed; the last one (3+ characters) is a
    prefix."""
    stop = stopwords if isinstance(stopwords, (set, frozenset)) else frozenset(stopwords)
    kept: list[str] = []
    for w in words(query):
        if w not in stop and w not in kept:
            kept.append(w)
    if not kept:
        return None
    kept = kept[:max_terms]
    parts = [f'"{w}"' for w in kept]
    if len(kept[-1]) >= 3:
        parts[-1] += "*"
    return " AND ".join(parts)


class PrefixPolicy:
    """Whether a match expression keeps its trailing prefix: not when the last word
    alone is in ``threshold`` or more rows of ``fts_table``. Word counts are cached
    (bounded), so the check costs one bounded query per new word."""

    def __init__(self, fts_table: str, threshold: int, cache_size: int = 50_000) -> None:
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", fts_table):
            raise ValueError(f"bad FTS table name {fts_table!r}")
        self.fts_table = fts_table
        self.threshold = threshold
        self._common: dict[str, bool] = {}
        self._cache_size = cache_size

    def forget(self) -> None:
        """Drop the cached word counts."""
        self._common.clear()

    def apply(self, conn: sqlite3.Connection, expr: str | None) -> str | None:
        """``expr`` as it should run: without its trailing ``*`` if the last word is common."""
        if expr is None or not expr.endswith("*"):
            return expr
        exact = expr[:-1]
        last = exact.rsplit(" AND ", 1)[-1]
        common = self._common.get(last)
        if common is None:
            try:
                t, n = self.fts_table, int(self.threshold)
                sql = f"SELECT count(*) FROM (SELECT 1 FROM {t} WHERE {t} MATCH ? LIMIT {n})"
                common = conn.execute(sql, (last,)).fetchone()[0] >= n
            except sqlite3.OperationalError:
                common = False
            if len(self._common) < self._cache_size:
                self._common[last] = common
        return exact if common else expr
