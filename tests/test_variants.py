"""Site variants (simweb.variants, docs/variants.md): the id -> factors mapping, the
train/test split, the variant in the state, the page's words, and every template's
oracle on a few variants per app (the full form: `simweb demo --variants 0-49`)."""
from __future__ import annotations

import pickle
import re
import subprocess
import sys

import gymnasium
import pytest
from conftest import APPS

import simweb
from simweb.core.state import StateError
from simweb.runtime.variants import VariantError, catalogue, parse_ids

#: A few variants per app for CI: a train one and two test ones, different enough to change
#: every app factor at least once between them.
SAMPLE = 3


def _sample(app: str) -> list[int]:
    cat = catalogue(app)
    train = cat.listing("train", 1, start=1)[0]["variant"]
    return [train, *[r["variant"] for r in cat.listing("test", SAMPLE - 1, start=1)]]


def test_mapping_is_a_deterministic_bijection(app_name):
    cat = catalogue(app_name)
    assert cat.count >= 200
    assert all(i == 0 for i in cat.choice(0)), "variant 0 must be today's site"
    seen = {cat.choice(k) for k in range(min(cat.count, 3000))}
    assert len(seen) == min(cat.count, 3000), "two variant ids share a site"
    # the same in a fresh process (no hash seed, no global random)
    code = (f"from simweb.variants import catalogue; c = catalogue({app_name!r}); "
            f"print([c.choice(k) for k in (1, 17, 903)])")
    env = {"PYTHONHASHSEED": "123"}
    import os

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, **env}).stdout.strip()
    assert out == str([cat.choice(k) for k in (1, 17, 903)])


def test_held_out_values_never_in_train(app_name):
    cat = catalogue(app_name)
    train = cat.listing("train", 200)
    test = cat.listing("test", 200)
    assert len(train) == 200 and len(test) == 200
    held = {(f.name, f.options[i].label) for f in cat.factors for i in f.held_out}
    for row in train:
        assert not held & set(row["factors"].items()), row
    for row in test:
        assert held & set(row["factors"].items()), row
    # every held-out value does appear in some test variant
    seen = {kv for row in cat.listing("test", 2000) for kv in row["factors"].items()}
    assert held <= seen


@pytest.mark.parametrize("bad", [-1, 10**9, "x", True, 1.5, None])
def test_bad_variant_ids_are_refused(bad):
    with pytest.raises(VariantError):
        catalogue("forum").check(bad)
    with pytest.raises((VariantError, TypeError)):
        simweb.make("forum", variant=bad)


def test_parse_ids():
    assert parse_ids("0-3,7", "shopping") == [0, 1, 2, 3, 7]
    for bad in ("3-1", "a", "1-", "", "99999999"):
        with pytest.raises(VariantError):
            parse_ids(bad, "shopping")


@pytest.mark.parametrize("args", [["variants", "shopping", "--start", "99999999"], ["demo", "--apps", "forum", "--variants", "-3"],
                                  ["demo", "--apps", "forum", "--variants", "99999999"]])
def test_cli_bad_variant_one_line_exit_2(args):
    p = subprocess.run([sys.executable, "-m", "simweb.cli", *args], capture_output=True, text=True)
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr


def test_cli_lists_200_variants_with_factors():
    p = subprocess.run([sys.executable, "-m", "simweb.cli", "variants", "issues", "--split", "test"],
                       capture_output=True, text=True, check=True)
    rows = p.stdout.strip().splitlines()
    names = "\t".join(f.name for f in catalogue("issues").factors)
    assert len(rows) == 201 and rows[0] == "variant\tsplit\t" + names and "site_name" in names
    assert all(r.split("\t")[1] == "test" for r in rows[1:])


def test_variant_zero_is_todays_site(app_name, env_of):
    base = env_of(app_name)
    v0 = simweb.make(app_name, variant=0)
    for env in (base, v0):
        env.reset(seed=1, options={"task": next(iter(base.app.tasks))})
    assert "variant" not in v0.snapshot()["meta"]
    assert v0.browser.html() == base.browser.html()
    assert v0.state_hash() == base.state_hash()


def test_variant_is_part_of_the_state(app_name, env_of):
    k = _sample(app_name)[1]
    env = simweb.make(app_name, variant=k)
    task = next(iter(env.app.tasks))
    obs, _ = env.reset(seed=2, options={"task": task})
    assert env.snapshot()["meta"]["variant"] == k
    base = env_of(app_name)
    base.reset(seed=2, options={"task": task})
    assert obs["axtree"] != base.render() and env.browser.html() != base.browser.html()
    # fork, pickle and restore into a default env all carry the variant's site
    child = env.fork()
    assert child.browser.html() == env.browser.html()
    clone = pickle.loads(pickle.dumps(env))
    assert clone.browser.html() == env.browser.html() and clone.variant == k
    other = simweb.make(app_name)
    other.restore(env.snapshot())
    assert other.browser.html() == env.browser.html()
    # a state naming a variant the app does not have is refused like any bad state
    bad = env.snapshot()
    bad["meta"]["variant"] = catalogue(app_name).count
    with pytest.raises(StateError):
        other.restore(bad)


def test_words_change_but_elements_stay(app_name, env_of):
    """A variant renames what the page shows; the elements (bids) an oracle acts on stay."""
    base = env_of(app_name)
    base.reset(seed=0, options={"task": None})
    ks = [k for k in _sample(app_name) if catalogue(app_name).values(k).get("sign_in") != "early"]
    assert ks   # (a login wall's start page is the sign-in form: tests/test_variants_login.py)
    for k in ks:
        env = simweb.make(app_name, variant=k)
        env.reset(seed=0, options={"task": None})
        page0, page = base.browser.page(), env.browser.page()
        # the banner's links, the trail, the collapsed menu's summary and details, the filter
        # form's sidebar or disclosure, a numbered pager's page links, and the statement of a
        # policy that differs from today's
        added = {b for b in page.elements if b.startswith(("promo-", "site-crumb", "site-menu", "filters-"))
                 or re.fullmatch(r"page-\d+", b) or b in ("site-policies", "policy-min-stay", "policy-cancellation")}
        assert set(page.elements) - added == set(page0.elements)
        title = catalogue(app_name).values(k)["site_name"]
        assert title in env.browser.axtree()


def test_gymnasium_make_takes_a_variant():
    k = _sample("booking")[2]
    env = gymnasium.make("simweb/booking-v0", variant=k)
    env.reset(seed=0)
    assert env.unwrapped.snapshot()["meta"]["variant"] == k   # type: ignore[attr-defined]


@pytest.mark.parametrize("app", APPS)
def test_every_oracle_solves_sampled_variants(app):
    """CI-sized: every template's oracle, clean success on a few variants per app, and a
    short random run earns nothing (the full form is `simweb demo --variants 0-49`)."""
    for k in _sample(app):
        env = simweb.make(app, variant=k)
        for i, tid in enumerate(env.app.tasks):
            env.reset(seed=k + i, options={"task": tid})
            for a in env.oracle_plan():
                _, _, term, trunc, info = env.step(a)
            v = info["verdict"]
            assert v["success"] and v["clean"], (app, k, tid, v)


def test_served_mode_carries_the_variant():
    """A served session starts on the server's variant; /_simweb/reset can pick another,
    and the page is the one the in-process env renders for that variant."""
    from simweb.serving.server import create_app

    k = _sample("forum")[1]
    flask_app = create_app("forum", variant=k, control_token="t" * 20)
    served = flask_app.extensions["simweb"]
    assert served.fresh_state()["meta"]["variant"] == k
    client = flask_app.test_client()
    headers = {"Authorization": "Bearer " + "t" * 20}
    r = client.post("/_simweb/reset", json={"seed": 0, "variant": 2}, headers=headers)
    assert r.status_code == 200, r.data
    page = client.get("/").get_data(as_text=True)
    env = simweb.make("forum", variant=2)
    env.reset(seed=0, options={"task": None})
    assert catalogue("forum").values(2)["site_name"] in page
    bad = client.post("/_simweb/reset", json={"seed": 0, "variant": -4}, headers=headers)
    assert bad.status_code == 400


def test_webgym_export_makes_one_website_per_variant(tmp_path):
    """`simweb export-webgym --variants`: each variant's tasks start on a URL of its own,
    and that URL serves the variant's site."""
    import json

    from simweb.serving.server import create_app

    out = tmp_path / "tasks.jsonl"
    subprocess.run([sys.executable, "-m", "simweb.cli", "export-webgym", "booking", "--out", str(out),
                    "--per-template", "1", "--variants", "0,5"], check=True, capture_output=True)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    n = len(rows) // 2
    assert all("variant" not in r["website"] and "simweb_variant" not in r for r in rows[:n])
    assert all(r["website"].endswith("&variant=5") and r["simweb_variant"] == 5 for r in rows[n:])
    client = create_app("booking").test_client()
    path = rows[n]["website"].split("8000", 1)[1]
    page = client.get(path).get_data(as_text=True)
    assert catalogue("booking").values(5)["site_name"] in page
    assert client.get(path.replace("variant=5", "variant=-5")).status_code == 400


def test_rewrite_touches_only_shown_text(app_name, env_of):
    """A variant's words change only shown text (the skin, banner and layout are added
    apart): every Jinja block, tag, bid, name, value and URL is kept as it was."""
    import re

    from simweb.runtime.variants import _SEGMENTS, _SHOWN_ATTRS

    cat = catalogue(app_name)
    k = next(k for k in range(1, cat.count) if all(i != 0 for i in cat.choice(k)))
    site = cat.site(k)
    jinja = env_of(app_name).app.jinja
    changed = 0
    for name in jinja.list_templates(extensions=["html"]):
        source = jinja.loader.get_source(jinja, name)[0]
        new = site.shown_text(source)
        old_parts, new_parts = _SEGMENTS.split(source), _SEGMENTS.split(new)
        assert len(old_parts) == len(new_parts), name

        def blank(tag: str) -> str:
            return _SHOWN_ATTRS.sub(lambda m: m.group(1) + m.group(3), tag)

        for i in range(1, len(old_parts), 2):
            assert blank(old_parts[i]) == blank(new_parts[i]), (name, old_parts[i], new_parts[i])
        changed += new != source
        assert not re.search(r"\{\{[^}]*\}\}", "".join(new_parts[0::2])), name
    assert changed, "the variant changed no template"
