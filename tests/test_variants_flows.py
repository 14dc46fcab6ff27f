"""Flow options of site variants (simweb.runtime.variant_flows, docs/variants.md): where a
site shows its messages (a refused form's error, a confirmation). Presentation only: the
same element, role and words in another place of the page and of the AX tree, and every
template's oracle solves a variant of every position."""
from __future__ import annotations

import pytest
from conftest import APPS

import simweb
from simweb.runtime.variants import catalogue


def _with(app: str, **want: str) -> int:
    cat = catalogue(app)
    return next(k for k in range(1, cat.count) if all(cat.values(k)[f] == v for f, v in want.items()))


def _refused_login(app: str, k: int) -> list[str]:
    """The AX tree's lines after a sign-in with a wrong password on variant ``k``."""
    env = simweb.make(app, variant=k)
    env.reset(seed=0, options={"task": None})
    env.step("goto('/login')")
    env.step("fill('login-user', 'nobody-at-all')")
    env.step("fill('login-password', 'wrong')")
    obs, *_ = env.step("click('login-submit')")
    return obs["axtree"].splitlines()


@pytest.mark.parametrize("app", APPS)
def test_messages_move_and_keep_their_element(app: str) -> None:
    """The error of a refused form: above the page's content today, at the end of the
    main landmark ("bottom"), or first in the page, above the site's header ("header")."""
    where: dict[str, tuple[int, int, int]] = {}
    alert = None
    for pos in ("top", "bottom", "header"):
        lines = _refused_login(app, _with(app, message_position=pos, nav_position="top", banner="none",
                                          breadcrumbs="none"))
        at = [i for i, ln in enumerate(lines) if " alert " in ln or ln.strip().startswith("alert")]
        assert len(at) == 1, (app, pos, lines[:12])
        main = next(i for i, ln in enumerate(lines) if ln.strip().startswith("main"))
        form = next(i for i, ln in enumerate(lines) if "[login-submit]" in ln)
        where[pos] = (at[0], main, form)
        text = lines[at[0] + 1:at[0] + 2] if "'" not in lines[at[0]] else lines[at[0]:at[0] + 1]
        alert = alert or text
        assert text == alert or [t.split("'", 1)[-1] for t in text] == [t.split("'", 1)[-1] for t in alert]
    assert where["top"][0] < where["top"][2]            # today: above the form
    assert where["bottom"][0] > where["bottom"][2]      # below the form, inside main
    assert where["header"][0] < where["header"][1] and where["header"][0] <= 2   # first in the page


@pytest.mark.parametrize("app", APPS)
def test_every_oracle_solves_each_message_position(app: str) -> None:
    for pos in ("bottom", "header"):
        k = _with(app, message_position=pos)
        env = simweb.make(app, variant=k)
        for i, tid in enumerate(env.app.tasks):
            env.reset(seed=k + i, options={"task": tid})
            info: dict = {}
            for a in env.oracle_plan():
                _, _, _, _, info = env.step(a)
            v = info["verdict"]
            assert v["success"] and v["clean"], (app, k, tid, v)
