"""A variant's phrases inside longer text (simweb.runtime.variants, Site.words): a phrase
meant for a button or a link ("All", "Apply", "Submit", "Search") also matches where it
is one word of a longer text ("All posts", "Apply filters"), and the site then writes
"All posts posts" or "OK filters". The options carry the longer text where it reads
wrong; these tests hold the cases found, and no rewrite of any template's text by any
option, or by a variant's merged phrases, repeats a word."""
from __future__ import annotations

import re
from importlib import resources

import pytest

from simweb.runtime.registry import definition
from simweb.runtime.variants import catalogue

APPS = ["shopping", "forum", "issues", "cms", "booking"]
_TEXT = re.compile(r">([^<{}]*[A-Za-z][^<{}]*)<")
_REPEAT = re.compile(r"\b(\w{3,})\s+\1\b", re.I)


def _template_texts(app: str) -> set[str]:
    """Every text between two tags, without Jinja, in the app's templates."""
    folder = resources.files(definition(app).package) / "templates"
    return {m.group(1).strip() for f in folder.iterdir() if f.name.endswith(".html")
            for m in _TEXT.finditer(f.read_text(encoding="utf-8"))}


def _site_with(app: str, **want: str):
    cat = catalogue(app)
    k = next(k for k in range(1, cat.count) if all(cat.values(k)[f] == v for f, v in want.items()))
    return cat.site(k)


@pytest.mark.parametrize("app", APPS)
def test_no_option_s_phrases_repeat_a_word_of_a_template_s_text(app: str) -> None:
    """Each option's phrases alone, and the merged phrases of the first 60 variants, on
    every template text: no word comes twice in a row where today's text has no repeat."""
    texts = sorted(t for t in _template_texts(app) if not _REPEAT.search(t))
    cat = catalogue(app)
    bad = []
    for factor in cat.factors:
        for option in factor.options:
            if not option.text:
                continue
            pattern = re.compile(r"(?<![\w])(" + "|".join(re.escape(p) for p in sorted(option.text, key=len, reverse=True))
                                 + r")(?![\w])")
            phrases: dict[str, str] = option.text

            def replace(m: re.Match[str], phrases: dict[str, str] = phrases) -> str:
                return phrases[m.group(1)]

            for t in texts:
                out = pattern.sub(replace, t)
                if _REPEAT.search(out):
                    bad.append((f"{factor.name}/{option.label}", t, out))
    for k in range(1, 61):
        site = cat.site(k)
        bad += [(f"variant {k}", t, site.words(t)) for t in texts if _REPEAT.search(site.words(t))]
    assert not bad, bad[:10]


@pytest.mark.parametrize("app, want, text, shown", [
    ("forum", {"nav_words": "groups", "action_words": "plain"}, "All posts", "All posts"),
    ("forum", {"nav_words": "boards"}, "All posts", "Everything"),
    ("forum", {"nav_words": "boards", "action_words": "plain"}, "Submit a post", "New post"),
    ("forum", {"nav_words": "spaces", "action_words": "plain"}, "Submit a post", "Start a thread"),
    ("shopping", {"checkout_words": "terse"}, "Apply filters", "Apply filters"),
    ("shopping", {"checkout_words": "terse"}, "Apply", "OK"),
    ("shopping", {"account_words": "my-stuff"}, "Your wishlist is empty.", "You have no saved items."),
    ("issues", {"action_words": "verbose", "nav_words": "workspace"}, "Filter projects", "Show matching workspaces"),
    ("issues", {"action_words": "terse"}, "Assign to", "Assignee"),
    ("issues", {"action_words": "verbose"}, "Assign to", "Assign to"),
    ("cms", {"admin_nav_words": "studio"}, "Comments on this site are published at once, without moderation.",
     "Feedback on this site is published at once, without moderation."),
    ("cms", {"public_words": "magazine"}, "Search media", "Search media"),
])
def test_a_button_s_word_inside_a_longer_text_reads_as_the_site_means(app: str, want: dict[str, str], text: str,
                                                                      shown: str) -> None:
    """The collisions found: the longer text as the option writes it."""
    labels = {f.name: {o.label for o in f.options} for f in catalogue(app).factors}
    assert all(v in labels[f] for f, v in want.items()), labels
    assert text in _template_texts(app) or text == "Apply"
    assert _site_with(app, **want).words(text) == shown
