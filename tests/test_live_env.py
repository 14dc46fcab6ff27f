"""LiveEnv against the fake Omniboxes server (real shapes): element ids through the
set-of-marks numbering, options, password fields, WebGym's actions, failures."""

import warnings

import gymnasium as gym
import pytest

from simweb.episodes.episode import EPISODE_OVER
from simweb.live.env import LiveEnv, build_axtree, label_elements
from simweb.live.fake_server import SITE, FakeOmnibox
from simweb.live.omnibox import Element, OmniboxClient, OmniboxError, ScreenshotInfo, parse_regions
from simweb.live.tasks import dump_tasks, to_webgym

KEY = "k"
OBS_KEYS = {"url", "goal", "axtree", "html", "screenshot", "last_action", "last_action_error",
            "open_pages_urls", "open_pages_titles", "active_page_index", "chat_messages", "focused_element_bid",
            "step"}


@pytest.fixture
def server():
    with FakeOmnibox(KEY) as fake:
        yield fake


def client(server, **kw):
    kw = {"retries": 1, "backoff": 0.01, "sleep": lambda s: None, **kw}
    return OmniboxClient(server.url, KEY, **kw)


def price_task(task_id=1):
    return to_webgym(task_id, "What does Item 02 cost?", SITE + "/products",
                     [{"id": "p", "description": "price", "facts": ["the answer says $10.99"]}], "$10.99")


def contact_task():
    return to_webgym(2, "Send a support question as Ada", SITE + "/contact",
                     ["name Ada entered", "topic Support", "message sent", "thank-you page shown"])


@pytest.fixture
def env(server):
    e = LiveEnv(client(server), [price_task(), contact_task()])
    yield e
    e.close()


def test_reset_observation_and_info(env, server):
    obs, info = env.reset(seed=0, options={"task": 1})
    assert set(obs) == OBS_KEYS
    assert obs["url"] == SITE + "/products"
    assert obs["goal"] == "What does Item 02 cost?"
    assert obs["html"] == "" and obs["last_action_error"] == ""
    assert obs["screenshot"].startswith(b"\x89PNG") and len(obs["screenshot"]) > 1000
    assert obs["open_pages_urls"] == [SITE + "/products"] and obs["active_page_index"] == 0
    lines = obs["axtree"].splitlines()
    assert lines[:4] == ["RootWebArea 'Products - Fake Shop'", "\t[1] link 'Home'", "\t[2] link 'Contact'",
                         "\t[3] link 'Item 01'"]
    assert "\t[18] link 'Item 16'" in lines and "\t[28] link 'Item 17'" in lines   # drawn 1..18, then page ids
    assert "\tStaticText 'Item 02 - $10.99'" in lines
    assert info["fact_groups"] == [{"id": "p", "description": "price", "facts": ["the answer says $10.99"]}]
    assert info["definite_answer"] == "$10.99" and info["needs_judge"] and info["budget"] == 30
    assert [r["params"].get("interaction_mode") for r in server.requests if r["path"] == "/screenshot"] == \
        ["set_of_marks"]
    assert server.commands("get_webpage_text")[-1]["args"] == {"n_lines": 100}
    assert len(server.instances) == 1
    assert env.observation_space.contains(obs)


def test_click_by_drawn_number_and_answer(env, server):
    env.reset(options={"task": 1})
    obs, reward, terminated, truncated, info = env.step("click('4')")
    assert obs["url"] == SITE + "/products/2" and obs["last_action"] == "click('4')"
    assert info["commands"] == [{"click_id": {"id": "4"}}]
    assert "StaticText 'Price: $10.99'" in obs["axtree"]
    obs, reward, terminated, truncated, info = env.step("send_msg_to_user('Item 02 costs $10.99')")
    assert (reward, terminated, truncated) == (0.0, True, False)
    assert info["answer"] == "Item 02 costs $10.99" and info["definite_answer"] == "$10.99"
    assert obs["chat_messages"] == [{"role": "assistant", "message": "Item 02 costs $10.99"}]
    assert obs["step"] == 2
    obs, _, terminated, _, info = env.step("click('1')")
    assert obs["last_action_error"] == EPISODE_OVER and terminated and info["episode_over"]   # nothing ran
    assert obs["url"] == SITE + "/products/2"


def test_elements_reach_their_target_when_display_ids_collide_with_page_ids(env, server):
    env.reset(options={"task": 1})
    obs, *_ = env.step("scroll(0, 718)")
    lines = obs["axtree"].splitlines()
    assert "\t[p12] link 'Item 01'" in lines and "\t[12] link 'Item 27'" in lines   # 12 is drawn on Item 27
    assert "\t[26] link 'Item 15'" in lines and "\t[9] link 'Item 24'" in lines
    obs, _, _, _, info = env.step("click('12')")           # the server maps id 12 to Item 01 now:
    assert info["commands"] == [{"click_id": {"id": "38"}}]   # Item 27's page id is sent instead
    assert obs["url"] == SITE + "/products/27"
    env.step("go_back()")
    env.step("scroll(0, 718)")
    obs, _, _, _, info = env.step("click('p12')")          # the off-screen Item 01 by its page id
    assert info["commands"] == [{"click_id": {"id": "12"}}] and obs["url"] == SITE + "/products/1"
    env.step("go_back()")
    obs, _, _, _, info = env.step("click('9')")
    assert info["commands"] == [{"click_id": {"id": "9"}}] and obs["url"] == SITE + "/products/7"


def test_a_visible_element_without_a_reaching_id_is_clicked_at_its_centre():
    regions = parse_regions({
        "10": {"tag_name": "a", "role": "link", "aria_name": "A", "v_scrollable": False,
               "rects": [{"x": 0, "y": -100, "width": 10, "height": 10}]},
        "11": {"tag_name": "a", "role": "link", "aria_name": "B", "v_scrollable": False,
               "rects": [{"x": 40, "y": 100, "width": 20, "height": 10}]},
    })
    # a numbering (from another page) that sends both 10 and 11 elsewhere
    stale = ScreenshotInfo(("1",), (), (), {"50": regions["10"]}, {"10": "50", "11": "50", "1": "50"})
    [a, b] = label_elements(regions, stale)
    assert (a.id, a.send_id, a.visible) == ("10", None, False)
    assert b.rect is not None and (b.id, b.send_id, b.visible, b.rect.center()) == ("11", None, True, (50.0, 105.0))


def test_a_click_whose_box_centre_misses_goes_inside_a_reported_client_rect(env, server):
    """A server whose regions list an element's client rects (a link on two lines, the
    centre of their bounding box on neither): the click goes inside the first one. The
    fake answers /simweb/ as WebGym's server does (404), asked once per client."""
    import dataclasses

    from simweb.live.omnibox import Rect

    env.reset(options={"task": 1})
    link = env.element("4")
    assert link.send_id == "4"
    wrapped = (Rect(300, 110, 40, 18), Rect(8, 158, 60, 18))
    env.elements = [dataclasses.replace(e, rects=wrapped) if e is link else e for e in env.elements]
    _, _, _, _, info = env.step("click('4')")
    assert info["commands"] == [{"click_coords": {"x": 320.0, "y": 119.0}}]
    env.step("go_back()")
    _, _, _, _, info = env.step("click('4')")             # one box: the server's id command
    assert info["commands"] == [{"click_id": {"id": "4"}}]
    assert [r["path"] for r in server.requests].count("/simweb/apps") == 1


def test_fill_select_and_submit_a_form(env, server):
    env.reset(options={"task": 2})
    obs, *_ = env.step("fill('2', 'Ada')")
    assert obs["last_action_error"] == "" and obs["focused_element_bid"] == "2"
    assert server.commands("fill_id")[-1]["args"] == {"id": "2", "value": "Ada", "press_enter": False,
                                                       "delete_existing": True}
    obs, _, _, _, info = env.step("select_option('3', 'support')")
    assert obs["last_action_error"] == ""
    assert info["commands"] == [{"click_id": {"id": "3"}}, {"select_option": {"id": "6"}}]   # the option's id only
    assert "option" not in obs["axtree"]                   # selecting blurs the select: the options go
    obs, *_ = env.step("select_option('3', 'Billing')")
    assert obs["last_action_error"] == "Option 'Billing' not found in select [3] (options: 'Sales', 'Support')"
    assert "\t[5] option 'Sales'" in obs["axtree"]         # the select was left focused, its options listed
    obs, *_ = env.step("click('4')")
    assert obs["url"] == SITE + "/contact/sent?name=Ada&topic=Support"
    assert "StaticText 'Thanks, Ada!'" in obs["axtree"]


def test_listed_options_can_be_chosen_directly(env, server):
    env.reset(options={"task": 2})
    obs, *_ = env.step("click('3')")
    assert "\t[5] option 'Sales'" in obs["axtree"] and "\t[6] option 'Support'" in obs["axtree"]
    obs, _, _, _, info = env.step("click('5')")            # an option is chosen, not clicked
    assert info["commands"] == [{"select_option": {"id": "5"}}]
    env.step("click('4')")                                 # Send
    assert server.instances[env.instance.instance_id].url == SITE + "/contact/sent?name=&topic=Sales"


def test_password_fields_and_press_enter(env, server):
    env.reset(options={"url": SITE + "/signin", "goal": "sign in"})
    obs, *_ = env.step("fill('2', 'ada')")
    assert "\t[3] textbox 'Password'" in obs["axtree"]      # role '' with tag 'input, type=password'
    env.step("fill('3', 'secret')")
    obs, _, _, _, info = env.step("press('3', 'Enter')")    # already focused: just the key
    assert info["commands"] == [{"keypress": {"keys": ["Enter"]}}]
    assert obs["url"] == SITE + "/account?user=ada"
    env.reset(options={"url": SITE + "/signin", "goal": "sign in"})
    obs, _, _, _, info = env.step("press('2', 'Enter')")    # not focused: clicked first
    assert info["commands"] == [{"click_id": {"id": "2"}}, {"keypress": {"keys": ["Enter"]}}]


def test_goto_go_back_and_relative_urls(env):
    env.reset(options={"task": 1})
    obs, *_ = env.step(f"goto('{SITE}/contact')")
    assert obs["url"] == SITE + "/contact"
    obs, *_ = env.step("goto('/products/3')")
    assert obs["url"] == SITE + "/products/3"
    obs, *_ = env.step("go_back()")
    assert obs["url"] == SITE + "/contact"
    obs, *_ = env.step("go_back()")
    assert obs["url"] == SITE + "/products"


def test_unsupported_and_malformed_actions_become_errors(env):
    env.reset(options={"task": 1})
    for action in ("go_forward()", "new_tab()", "tab_focus(0)", "click(", "fly()", "scroll(50, 0)", "click('99')"):
        obs, reward, terminated, truncated, info = env.step(action)
        assert obs["last_action_error"], action
        assert "\n" not in obs["last_action_error"]
        assert not terminated and obs["url"] == SITE + "/products"
        assert info["command"] is None
    assert "not supported" in env.step("go_forward()")[0]["last_action_error"]
    assert env.step("click('99')")[0]["last_action_error"] == "Could not find element with bid '99' on the page"


def test_server_failures_become_errors(env, server):
    env.reset(options={"task": 1})
    server.fail_next(1, status=500, command="click_id")
    obs, *_ = env.step("click('4')")
    assert obs["last_action_error"] == "execute click_id: HTTP 500: injected failure"
    assert obs["url"] == SITE + "/products" and len(server.commands("click_id")) == 1
    obs, *_ = env.step("goto('https://unreachable.test/')")
    assert "ERR_NAME_NOT_RESOLVED" in obs["last_action_error"]
    obs, _, _, _, info = env.step("noop(wait_ms=0)")
    assert obs["last_action_error"] == "" and info["observe_errors"] == []


def test_observation_failures_are_reported_in_info(env, server):
    env.reset(options={"task": 1})
    env.step("click('4')")
    server.fail_next(1, status=500, command="get_page_metadata")
    server.fail_next(1, status=500, command="get_interactive_rects")
    obs, _, _, _, info = env.step("hover('1')")
    assert obs["last_action_error"] == ""
    assert [e.split(":")[0] for e in info["observe_errors"]] == ["execute get_page_metadata",
                                                                 "execute get_interactive_rects"]
    assert obs["url"] == SITE + "/products/2"  # the last known URL
    assert "StaticText 'Price: $10.99'" in obs["axtree"]


def test_webgym_actions(env, server):
    env.reset(options={"task": 2})
    # the Name field is at y 100..130 in a 768 px viewport: 150/1000 * 768 = 115.2
    obs, _, _, _, info = env.step({"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [100, 150]}})
    assert info["commands"] == [{"click_coords": {"x": 128, "y": 115}}]
    obs, _, _, _, info = env.step('<tool_call>{"name": "computer_use", "arguments": {"action": "type", '
                                  '"coordinate": [100, 150], "text": "Ada"}}</tool_call>')
    assert info["commands"] == [{"fill_coords": {"x": 128, "y": 115, "value": "Ada", "press_enter": True,
                                                 "delete_existing": True}}]
    assert obs["url"] == SITE + "/contact/sent?name=Ada&topic="
    obs, *_ = env.step({"key": "goback", "arguments": {}})
    assert obs["url"] == SITE + "/contact"
    obs, _, _, _, info = env.step({"name": "web_interaction", "arguments": {"action": "type", "element_id": "2",
                                                                            "text": "Bo"}})
    assert info["commands"] == [{"fill_id": {"id": "2", "value": "Bo", "press_enter": True, "delete_existing": True}}]
    assert obs["url"] == SITE + "/contact/sent?name=Bo&topic="
    obs, _, _, _, info = env.step({"name": "computer_use", "arguments": {"action": "scroll", "direction": "down"}})
    assert info["commands"] == [{"page_down": {"full_page": True}}]
    obs, *_ = env.step({"name": "computer_use", "arguments": {"action": "navigate", "url": "http://shop.example/"}})
    assert obs["url"] == SITE + "/"
    obs, reward, terminated, truncated, info = env.step({"name": "computer_use",
                                                         "arguments": {"action": "answer", "text": "done"}})
    assert terminated and info["answer"] == "done" and info["commands"] == []


def test_coordinates_mode_uses_page_ids_checked_against_the_servers_numbering(server):
    with LiveEnv(client(server), [price_task()], interaction_mode="set_of_marks") as env:
        env.reset(options={"task": 1})         # leaves a numbering behind on the instance
    with LiveEnv(client(server), [price_task()], interaction_mode="coordinates") as env:
        obs, _ = env.reset(options={"url": SITE + "/", "goal": "g"})
        assert [r["params"]["interaction_mode"] for r in server.requests if r["path"] == "/screenshot"][-1] == \
            "coordinates"
        assert "\t[10] link 'Products'" in obs["axtree"]     # page ids: nothing drawn on this page
        obs, _, _, _, info = env.step("click('12')")          # page id 12 is display id 12 of the old
        assert info["commands"] == [{"click_id": {"id": "3"}}]   # numbering; display 3 maps to page id 12
        assert obs["url"] == SITE + "/signin"


def test_truncation_at_the_step_budget(server):
    with LiveEnv(client(server), [price_task()], split="train") as env:
        env.reset(options={"task": 1})
        results = [env.step("noop(wait_ms=0)") for _ in range(10)]
        assert [r[3] for r in results] == [False] * 9 + [True]
        assert not any(r[2] for r in results) and results[-1][4]["budget"] == 10
    with LiveEnv(client(server), max_steps=1) as env:
        env.reset(options={"url": SITE + "/", "goal": "look around"})
        assert env.step("noop(0)")[3] is True


def test_release_on_close_and_on_reset_waiting_out_the_relaunch(server):
    env = LiveEnv(client(server, retries=0, acquire_wait_s=5), [price_task()])
    env.reset(options={"task": 1})
    assert env.instance is not None
    first = env.instance.instance_id
    env.reset(options={"task": 1})             # the release makes /get answer 503 twice
    assert list(server.instances) != [first] and len(server.instances) == 1
    env.close()
    assert server.instances == {}
    assert [r["path"] for r in server.requests].count("/reset") == 2
    env.close()  # idempotent


def test_reset_raises_when_no_instance_can_be_had(server):
    server.pool.clear()
    env = LiveEnv(client(server, retries=0, acquire_wait_s=0), [price_task()])
    with pytest.raises(OmniboxError, match="could not acquire a browser instance: POST /get: HTTP 503"):
        env.reset(options={"task": 1})
    with pytest.raises(RuntimeError, match="before reset"):
        env.step("noop()")


def test_unreachable_start_page_is_an_error_not_an_exception(server):
    with LiveEnv(client(server, retries=0), []) as env:
        obs, info = env.reset(options={"url": "https://nowhere.test/", "goal": "g"})
        assert "ERR_NAME_NOT_RESOLVED" in obs["last_action_error"]
        assert info["command"] == {"visit_page": {"url": "https://nowhere.test/"}}


def test_task_choice(server, tmp_path):
    path = tmp_path / "tasks.jsonl"
    dump_tasks([price_task(1), price_task(2), price_task(3)], path)
    with LiveEnv(client(server), path) as env:
        picks = [env.reset(seed=s)[1]["task_id"] for s in (1, 2, 1, 2)]
        assert picks[:2] == picks[2:]
        assert env.reset(options={"task": price_task(8)})[1]["task_id"] == 8
        assert env.reset(options={"task": price_task(9).to_dict()})[1]["task_id"] == 9
        with pytest.raises(ValueError, match="unknown task 'zzz'"):
            env.reset(options={"task": "zzz"})
    with pytest.raises(ValueError, match="no tasks"):
        LiveEnv(client(server)).reset()
    with LiveEnv(client(server, retries=0)) as env:
        obs, info = env.reset(options={"url": "shop.example/", "goal": "g"})
        assert info["command"] == {"visit_page": {"url": "https://shop.example/"}}
        assert "ERR_NAME_NOT_RESOLVED" not in obs["last_action_error"]


def test_screenshots_can_be_turned_off(server):
    with LiveEnv(client(server), [price_task()], screenshots=False) as env:
        obs, _ = env.reset(options={"task": 1})
        assert obs["screenshot"] == b"" and "[1] link 'Home'" in obs["axtree"]


def test_release_failure_only_warns(server):
    env = LiveEnv(client(server, retries=0), [price_task()])
    env.reset(options={"task": 1})
    for b in server.pool:
        b.leased = False
    with pytest.warns(RuntimeWarning, match="could not release browser instance"):
        env.close()


def test_build_axtree():
    elements = [Element("5", "link", "Docs"), Element("6", "textbox", "Query"), Element("7", "button", "  Go\n")]
    tree = build_axtree("It's a page", elements, "Intro\n\n  Docs  \nGo\nMore   text")
    assert tree.splitlines() == [
        'RootWebArea "It\'s a page"',
        "\t[5] link 'Docs'",
        "\t[6] textbox 'Query'",
        "\t[7] button 'Go'",
        "\tStaticText 'Intro'",
        "\tStaticText 'More text'",
    ]


def test_is_a_gymnasium_env(env):
    assert isinstance(env, gym.Env)
    env.reset(options={"task": 1})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env.close()


def test_report_infeasible_ends_the_episode_without_an_answer(env):
    env.reset(options={"task": 1})
    obs, reward, terminated, truncated, info = env.step("report_infeasible('blocked by a CAPTCHA')")
    assert terminated and not truncated and reward == 0.0
    assert info["answer"] is None and info["infeasible"] == "blocked by a CAPTCHA"
    assert obs["chat_messages"] == [{"role": "infeasible", "message": "blocked by a CAPTCHA"}]
