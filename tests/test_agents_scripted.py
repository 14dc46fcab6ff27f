"""The scripted agent: the AX-tree text parser, element matching by role and accessible
name, and scripts solving real tasks of simweb's apps in-process (no simweb ids)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import simweb
from simweb.agents import OracleAgent, RandomAgent, make_agent
from simweb.agents.axtext import AXNode, parse_axtree
from simweb.agents.scripted import (
    Answer,
    Check,
    Click,
    Fill,
    Goto,
    NameMatch,
    Press,
    Refuse,
    RoleMatch,
    ScriptedAgent,
    Select,
    find,
    name_matches,
)


def found(nodes: list[AXNode], role: RoleMatch, name: NameMatch = None, **kw: Any) -> AXNode:
    """The node find() means, which must exist."""
    node, _ = find(nodes, role, name, **kw)
    assert node is not None, (role, name, kw)
    return node


TREE = """RootWebArea 'Shop', focused
\tbanner ''
\t\t[q] searchbox 'Search products' value='lamp', focused
\t\t[go] button 'Search'
\tmain ''
\t\t[p1] region 'Item 1'
\t\t\t[p1-link] link "O'Brien's \\"Lamp\\"", url='/p/1'
\t\t\t[p1-add] button 'Add to basket'
\t\t[p2] region 'Item 2'
\t\t\t[p2-link] link 'Desk   lamp', url='/p/2,3'
\t\t\t[p2-add] button 'Add to basket', disabled=True
\t\t\t[p2-add2] button 'Add to basket'
\t\t[ship] combobox 'Shipping' value='Standard', hasPopup='menu', expanded=False
\t\t\t[o1] option 'Standard', selected=True
\t\t\t[o2] option 'Express (1 day)', selected=False
\t\t[agree] checkbox 'I agree', checked='false'
\t\tStaticText 'Subtotal: $12.00'
"""


def test_parse_reads_names_values_properties_and_parents() -> None:
    nodes = parse_axtree(TREE)
    by_bid = {n.bid: n for n in nodes if n.bid}
    assert by_bid["q"].role == "searchbox" and by_bid["q"].name == "Search products"
    assert by_bid["q"].value == "lamp" and by_bid["q"].props == {"focused": True}
    assert by_bid["p1-link"].name == "O'Brien's \"Lamp\""
    assert by_bid["p2-link"].props["url"] == "/p/2,3"
    assert by_bid["p2-add"].disabled and not by_bid["p2-add2"].disabled
    assert by_bid["ship"].props == {"hasPopup": "menu", "expanded": False}
    assert by_bid["agree"].props["checked"] == "false"
    assert [nodes[i].bid for i in (by_bid["o2"].parent, by_bid["p1-add"].parent) if i is not None] == ["ship", "p1"]
    assert nodes[-1].role == "StaticText" and nodes[-1].bid is None and nodes[-1].name == "Subtotal: $12.00"
    assert nodes[0].role == "RootWebArea" and nodes[0].parent is None


def test_matching_roles_names_near_nth_and_disabled() -> None:
    nodes = parse_axtree(TREE)
    assert found(nodes, "textbox", re.compile("search", re.I)).bid == "q"   # searchbox is a textbox
    assert find(nodes, "button", "search products")[0] is None                # role must match
    assert found(nodes, "link", "desk lamp").bid == "p2-link"                # case and spaces ignored
    assert find(nodes, "link", "desk")[0] is None                              # a str is an exact name
    node, count = find(nodes, "button", "Add to basket")
    assert node is not None and (node.bid, count) == ("p1-add", 3)
    assert found(nodes, "button", "Add to basket", nth=1).bid == "p2-add2"   # enabled before disabled
    assert found(nodes, "button", "add to basket", near=("link", "Desk lamp")).bid == "p2-add2"
    assert find(nodes, "button", "add to basket", near=("link", "nothing"))[0] is None
    assert found(nodes, ("checkbox", "radio"), "I agree").bid == "agree"
    assert name_matches(None, "anything") and not name_matches(re.compile("^x"), "ax")


def test_step_actions_quote_like_browsergym() -> None:
    agent = ScriptedAgent([Fill("textbox", "Search products", "it's"), Select("combobox", "Shipping",
                                                                               option=re.compile("express", re.I)),
                           Check("checkbox", "I agree"), Press("textbox", "Search products", key="Enter"),
                           Goto("/cart"), Answer("12.00"), Refuse("not allowed")])
    obs = {"axtree": TREE, "url": "http://x/", "last_action_error": ""}
    got = [agent.act(obs) for _ in range(8)]
    assert got == ["fill('q', \"it's\")", "select_option('ship', 'Express (1 day)')", "check('agree')",
                   "press('q', 'Enter')", "goto('/cart')", "send_msg_to_user('12.00')",
                   "report_infeasible('not allowed')", "noop()"]
    assert agent.done and not agent.stuck
    assert [e["found"] for e in agent.log] == [True] * 7


def test_missing_element_stops_the_agent_and_optional_steps_are_skipped() -> None:
    obs = {"axtree": TREE, "url": "http://x/", "last_action_error": ""}
    agent = ScriptedAgent([Click("link", "Cookie settings", optional=True), Click("button", "Search"),
                           Select("combobox", "Shipping", option="Pigeon"), Click("button", "Search")])
    assert agent.act(obs) == "click('go')"
    assert agent.act(dict(obs, last_action_error="boom")) == "noop()"     # the option does not exist
    assert agent.act(obs) == "noop()"
    assert agent.stuck and agent.done
    assert [(e["found"], e.get("skipped", False)) for e in agent.log] == [(False, True), (True, False),
                                                                            (False, False)]
    assert agent.log[1]["error"] == "boom" and agent.log[2]["bid"] == "ship"


def test_patience_waits_for_an_element_before_giving_up() -> None:
    agent = ScriptedAgent([Click("button", "Later")], patience=2)
    empty = {"axtree": "RootWebArea ''", "url": "http://x/"}
    assert [agent.act(empty), agent.act(empty)] == ["noop()", "noop()"]
    later = {"axtree": "RootWebArea ''\n\t[7] button 'Later'", "url": "http://x/"}
    assert agent.act(later) == "click('7')" and not agent.stuck


def test_make_agent_keeps_the_reference_agents() -> None:
    assert isinstance(make_agent("oracle"), OracleAgent) and isinstance(make_agent("random", 3), RandomAgent)
    assert isinstance(make_agent("scripted", steps=[Answer("x")]), ScriptedAgent)
    with pytest.raises(ValueError, match="unknown agent"):
        make_agent("nobody")
    with pytest.raises(TypeError):
        ScriptedAgent(["click('a')"])   # type: ignore[list-item]


def _run(env, agent, limit=40):
    obs, _ = env.observe()
    agent.reset(env)
    info = {}
    for _ in range(limit):
        if agent.done:
            break
        obs, _, terminated, truncated, info = env.step(agent.act(obs))
        agent.record(obs)
        if terminated or truncated:
            break
    return env._verdict() if not info.get("verdict") else info["verdict"]


def _search(text: str) -> list:
    box = re.compile("search", re.I)
    return [Fill("textbox", box, text), Press("textbox", box, key="Enter")]


@pytest.mark.parametrize("seed", [1, 4])
def test_script_adds_a_product_to_the_cart(seed: int) -> None:
    env = simweb.make("shopping", seed=0)
    env.reset(seed=seed, options={"task": "shopping/add_to_cart"})
    name = env.task.params["name"]
    agent = ScriptedAgent([*_search(name), Click("link", name),
                           Click("button", re.compile(r"add to (cart|basket)", re.I))])
    v = _run(env, agent)
    assert agent.done and not agent.stuck
    assert v["success"] and v["clean"] and v["progress"] == 1.0
    assert all(not (e["bid"] or "").startswith("product-") or e["what"].startswith("click link") for e in agent.log)


def test_script_buys_a_product_through_checkout() -> None:
    env = simweb.make("shopping", seed=0)
    env.reset(seed=3, options={"task": "shopping/buy_product"})
    p = env.task.params
    street = p["address"].split(",")[0]
    steps = [*_search(p["name"]), Click("link", p["name"]),
             Select("combobox", "Size", option=p["size"]), Select("combobox", re.compile("colou?r", re.I),
                                                                  option=p["color"]),
             Click("button", re.compile(r"add to (cart|basket)", re.I)),
             Click("link", re.compile(r"^(cart|basket)\b", re.I)),
             Click("button", re.compile("checkout", re.I)),
             Check("radio", re.compile(re.escape(street), re.I)),
             Check("radio", re.compile(p["method"], re.I)),
             Click("button", re.compile("continue", re.I)),
             Fill("textbox", re.compile("name on card", re.I), "Alex Morgan"),
             Fill("textbox", re.compile("card number", re.I), "4111 1111 1111 1111"),
             Fill("textbox", re.compile("expir", re.I), "12/29"),
             Fill("textbox", re.compile("security code|cvv", re.I), "123"),
             Click("button", re.compile("review", re.I)),
             Click("button", re.compile("place.*order", re.I))]
    agent = ScriptedAgent(steps)
    v = _run(env, agent)
    assert not agent.stuck, agent.log
    assert all(e["error"] == "" for e in agent.log), agent.log
    assert v["success"] and v["clean"] and v["progress"] == 1.0


def test_script_replies_to_a_forum_comment() -> None:
    env = simweb.make("forum", seed=0)
    env.reset(seed=1, options={"task": "forum/reply_comment"})
    p = env.task.params
    agent = ScriptedAgent([*_search(p["title"]), Click("link", p["title"]),
                           Click("link", "Reply", near=("link", f"u/{p['author']}")),
                           Fill("textbox", re.compile("reply|comment", re.I), p["reply"]),
                           Click("button", re.compile(r"^(reply|post|submit)", re.I))])
    v = _run(env, agent)
    assert not agent.stuck, agent.log
    assert v["success"] and v["clean"]


def test_a_wrong_script_is_not_paid() -> None:
    env = simweb.make("forum", seed=0)
    env.reset(seed=1, options={"task": "forum/reply_comment"})
    p = env.task.params
    # Replies to the first comment with the same text instead of the author's.
    agent = ScriptedAgent([*_search(p["title"]), Click("link", p["title"]), Click("link", "Reply"),
                           Fill("textbox", re.compile("reply", re.I), p["reply"]), Click("button", "Reply")])
    v = _run(env, agent)
    assert agent.done and not agent.stuck and not v["success"]


SAMPLES = Path(__file__).parent / "axtree_samples"


@pytest.mark.parametrize("sample", ["oscar_catalogue.txt", "roundup_issues.txt"])
def test_real_sites_observations_parse_line_for_line(sample: str) -> None:
    # Observations WebEnv took on django-oscar 4.2.1 and Roundup 2.6.0 on loopback.
    text = (SAMPLES / sample).read_text(encoding="utf-8")
    nodes = parse_axtree(text)
    assert len(nodes) == len(text.splitlines())
    assert nodes[0].role == "RootWebArea" and all(n.bid is None or n.bid.isdigit() for n in nodes)
    assert all(n.parent is None or nodes[n.parent].depth == n.depth - 1 for n in nodes)


def test_steps_resolve_on_a_real_shop_page() -> None:
    nodes = parse_axtree((SAMPLES / "oscar_catalogue.txt").read_text(encoding="utf-8"))
    assert found(nodes, "textbox", re.compile("search", re.I)).bid == "58"
    assert found(nodes, "button", "Search").bid == "59"
    assert found(nodes, "link", "Children's Books").bid == "80"           # printed with double quotes
    # A heading shows a cut title; the image link carries the whole name.
    full = "Zenera Argan Oil Smoothing Dry Shampoo"
    assert found(nodes, "link", full).bid == "222"
    add = re.compile(r"add to (cart|basket)", re.I)
    assert found(nodes, "button", add, near=("link", full)).bid == "239"
    assert find(nodes, "button", add)[1] == 10                              # one per product in stock
    sort = found(nodes, "combobox", re.compile("sort", re.I))
    assert Select("combobox", re.compile("sort", re.I), option="title z to a").action(sort, nodes) == \
        f"select_option({sort.bid!r}, 'Title Z to A')"


def test_steps_resolve_unnamed_fields_by_their_neighbours() -> None:
    nodes = parse_axtree((SAMPLES / "roundup_issues.txt").read_text(encoding="utf-8"))
    assert found(nodes, "textbox", None, near=("button", "Search")).bid == "19"    # the search box has no name
    login = ("StaticText", "Login")
    assert found(nodes, "textbox", None, near=login).bid == "41"
    assert found(nodes, "textbox", None, near=login, nth=1).bid == "43"
    assert found(nodes, "link", "Password reset returns 500 after the last deploy").bid == "92"
