"""World text as a person writes it: the generators assemble titles, posts, product names
and descriptions from parts, and :func:`simweb.core.text.tidy_generated` writes "an" before a
vowel sound and a word doubled where two parts meet once. Every text of every default world
is tidy (before it, forum wrote "a underrated lens" and "get a API design" in 1,783 texts and
"my old old map", shopping "A Orphan in Eastwick" and "The the Lighthouse Affair", cms "A old
logo" and "Release notes notes, v1"). A spam comment that repeats a word on purpose is not
assembled text and is left as it is."""
from __future__ import annotations

import sqlite3

import pytest
from conftest import APPS

import simweb
from simweb.core.text import tidy_generated

CASES = [
    ("Just upgraded from a lens to a underrated sunset shot", "Just upgraded from a lens to an underrated sunset shot"),
    ("I would return it and get a API design.", "I would return it and get an API design."),
    ("A oversized desk lamp", "An oversized desk lamp"),
    ("The Owl Who Wanted a Umbrella", "The Owl Who Wanted an Umbrella"),
    ("A Orphan in Eastwick", "An Orphan in Eastwick"),
    ("The the Lighthouse Affair", "The Lighthouse Affair"),
    ("Compared to my old old map, this one", "Compared to my old map, this one"),
    ("Have you tried a budget budget?", "Have you tried a budget?"),
    ("Release notes notes, v1", "Release notes, v1"),
    ("This quick-dry dry bag packs down", "This quick-dry dry bag packs down"),   # a hyphenated word's part
    ("what a idea. A egg", "what an idea. An egg"),
    # a consonant sound keeps "a"
    ("A USB-C port handles charging", "A USB-C port handles charging"),
    ("a user, a unit, a University, a useful and a usual one", "a user, a unit, a University, a useful and a usual one"),
    ("a one-off, a euro coin", "a one-off, a euro coin"),
    # already right, or not an article
    ("an apple, a lens, a hour", "an apple, a lens, a hour"),
    ("Sofa a", "Sofa a"),
    ("Then the theatre", "Then the theatre"),
]


@pytest.mark.parametrize("raw,expected", CASES)
def test_tidy_generated_writes_the_article_and_the_once(raw: str, expected: str) -> None:
    assert tidy_generated(raw) == expected
    assert tidy_generated(expected) == expected   # idempotent


#: Texts that repeat a word on purpose: cms's spam comments ("SEO services cheap cheap cheap,
#: contact now"), the comments its moderation tasks flag.
ON_PURPOSE = {("cms", "comments", "body"): "SEO services cheap cheap cheap"}


@pytest.mark.parametrize("app", APPS)
def test_every_text_of_the_default_world_is_tidy(app: str) -> None:
    world = simweb.make(app).unwrapped.app.world
    con = sqlite3.connect(f"file:{world.path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                  if not r[0].startswith("sqlite_") and "fts" not in r[0]]
        texts, untidy = 0, []
        for table in tables:
            for (column,) in con.execute(f"SELECT name FROM pragma_table_info('{table}')").fetchall():
                for (value,) in con.execute(f'SELECT "{column}" FROM "{table}"'):
                    if isinstance(value, str):
                        texts += 1
                        if tidy_generated(value) != value and \
                                not value.startswith(ON_PURPOSE.get((app, table, column), "\0")):
                            untidy.append((table, column, value[:80]))
    finally:
        con.close()
    assert texts > 1000, (app, texts)
    assert not untidy, (app, len(untidy), untidy[:5])
