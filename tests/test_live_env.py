"""LiveEnv against the fake Omniboxes server."""

import warnings

import gymnasium as gym
import pytest

from simweb.live.env import LiveEnv, build_axtree
from simweb.live.fake_server import SITE, FakeOmnibox
from simweb.live.omnibox import Element, OmniboxClient, OmniboxError
from simweb.live.tasks import dump_tasks, to_webgym

KEY = "k"
OBS_KEYS = {"url", "goal", "axtree", "html", "screenshot", "last_action", "last_action_error",
            "open_pages_urls", "open_pages_titles", "active_page_index", "chat_messages", "focused_element_bid",
            "step"}


@pytest.fixture
def server():
    with FakeOmnibox(KEY) as fake:
        yield fake


def price_task(task_id="price"):
    return to_webgym(task_id, "What does the Widget cost?", SITE + "/products",
                     [{"id": "p", "description": "price", "facts": ["the answer says $9.99"]}], "$9.99")


def contact_task():
    return to_webgym("contact", "Send a sales question as Ada", SITE + "/contact",
                     ["name Ada entered", "topic Sales", "message sent", "thank-you page shown"])


@pytest.fixture
def env(server):
    e = LiveEnv(OmniboxClient(server.url, KEY, retries=1, backoff=0.01), [price_task(), contact_task()])
    yield e
    e.close()


def test_reset_observation_and_info(env, server):
    obs, info = env.reset(seed=0, options={"task": "price"})
    assert set(obs) == OBS_KEYS
    assert obs["url"] == SITE + "/products"
    assert obs["goal"] == "What does the Widget cost?"
    assert obs["html"] == "" and obs["last_action_error"] == ""
    assert obs["screenshot"].startswith(b"\x89PNG")
    assert obs["open_pages_urls"] == [SITE + "/products"] and obs["active_page_index"] == 0
    assert obs["axtree"].splitlines()[0] == "RootWebArea 'Products - Fake Shop'"
    assert "\t[2] link 'Widget', url='http://shop.example/products/widget'" in obs["axtree"]
    assert "\tStaticText 'Widget - $9.99'" in obs["axtree"]
    assert info["fact_groups"] == [{"id": "p", "description": "price", "facts": ["the answer says $9.99"]}]
    assert info["definite_answer"] == "$9.99" and info["needs_judge"] and info["budget"] == 30
    assert len(server.instances) == 1
    assert env.observation_space.contains(obs)


def test_click_and_answer(env):
    env.reset(options={"task": "price"})
    obs, reward, terminated, truncated, info = env.step("click('2')")
    assert obs["url"] == SITE + "/products/widget" and obs["last_action"] == "click('2')"
    assert info["command"] == {"click_id": {"id": "2"}}
    assert "StaticText 'Price: $9.99'" in obs["axtree"]
    obs, reward, terminated, truncated, info = env.step("send_msg_to_user('The Widget costs $9.99')")
    assert (reward, terminated, truncated) == (0.0, True, False)
    assert info["answer"] == "The Widget costs $9.99" and info["definite_answer"] == "$9.99"
    assert obs["chat_messages"] == [{"role": "assistant", "message": "The Widget costs $9.99"}]
    assert obs["step"] == 2
    obs, reward, terminated, truncated, info = env.step("click('1')")
    assert obs["last_action_error"] == "the episode is over; call reset()" and terminated
    assert obs["url"] == SITE + "/products/widget"


def test_fill_select_and_submit_a_form(env, server):
    env.reset(options={"task": "contact"})
    obs, *_ = env.step("fill('2', 'Ada')")
    assert obs["last_action_error"] == ""
    assert server.commands("fill_id")[-1]["args"] == {"id": "2", "value": "Ada", "press_enter": False,
                                                       "delete_existing": True}
    obs, *_ = env.step("select_option('3', 'Sales')")
    assert server.commands("select_option")[-1]["args"] == {"id": "4"}
    obs, *_ = env.step("click('6')")
    assert obs["url"] == SITE + "/contact/sent?name=Ada&topic=Sales"
    assert "StaticText 'Thanks, Ada!'" in obs["axtree"]


def test_goto_go_back_and_relative_urls(env):
    env.reset(options={"task": "price"})
    obs, *_ = env.step(f"goto('{SITE}/contact')")
    assert obs["url"] == SITE + "/contact"
    obs, *_ = env.step("goto('/products/widget')")
    assert obs["url"] == SITE + "/products/widget"
    obs, *_ = env.step("go_back()")
    assert obs["url"] == SITE + "/contact"
    obs, *_ = env.step("go_back()")
    assert obs["url"] == SITE + "/products"


def test_unsupported_and_malformed_actions_become_errors(env):
    env.reset(options={"task": "price"})
    for action in ("go_forward()", "new_tab()", "tab_focus(0)", "click(", "fly()", "scroll(50, 0)"):
        obs, reward, terminated, truncated, info = env.step(action)
        assert obs["last_action_error"], action
        assert "\n" not in obs["last_action_error"]
        assert not terminated and obs["url"] == SITE + "/products"
        assert info["command"] is None
    assert "not supported" in env.step("go_forward()")[0]["last_action_error"]


def test_server_failures_become_errors(env, server):
    env.reset(options={"task": "price"})
    obs, *_ = env.step("click('99')")
    assert obs["last_action_error"].startswith("execute click_id: HTTP 400: no element with id '99'")
    server.fail_next(1, status=500)
    obs, *_ = env.step("click('2')")
    assert "HTTP 500" in obs["last_action_error"] and obs["url"] == SITE + "/products"
    obs, *_ = env.step("goto('https://unreachable.test/')")
    assert "ERR_NAME_NOT_RESOLVED" in obs["last_action_error"]
    server.fail_next(1, status=400)
    obs, _, _, _, info = env.step("noop(wait_ms=0)")
    assert obs["last_action_error"] == "execute sleep: HTTP 400: injected failure 400"
    assert info["observe_errors"] == [] and obs["axtree"]


def test_observation_failures_are_reported_in_info(env, server):
    env.reset(options={"task": "price"})
    env.step("click('2')")
    server.fail_next(1, status=400, command="get_page_metadata")
    server.fail_next(1, status=400, command="get_interactive_rects")
    obs, _, _, _, info = env.step("hover('1')")
    assert obs["last_action_error"] == ""
    assert [e.split(":")[0] for e in info["observe_errors"]] == ["execute get_page_metadata",
                                                                 "execute get_interactive_rects"]
    assert obs["url"] == SITE + "/products/widget"  # the last known URL
    assert "StaticText 'Price: $9.99'" in obs["axtree"]


def test_webgym_actions(env, server):
    env.reset(options={"task": "contact"})
    # Element "2" (Name) is at y 128..160 in a 768 px viewport: 190/1000 * 768 = 145.9
    obs, _, _, _, info = env.step("left_click(coordinate=[100, 190])")
    assert info["command"] == {"click_coords": {"x": 128, "y": 146}}
    obs, _, _, _, info = env.step({"key": "type", "arguments": {"text": "Ada"}})
    assert info["command"] == {"fill_coords": {"x": 128, "y": 146, "value": "Ada", "press_enter": True,
                                               "delete_existing": True}}
    assert obs["url"] == SITE + "/contact/sent?name=Ada&topic="
    obs, *_ = env.step("scroll(direction='down')")
    assert server.commands("page_down")[-1]["args"] == {"amount": 718, "full_page": False}
    obs, *_ = env.step("go_back")
    assert obs["url"] == SITE + "/contact"
    obs, *_ = env.step("navigate(url='http://shop.example/')")
    assert obs["url"] == SITE + "/"
    obs, reward, terminated, truncated, info = env.step("answer(text='done')")
    assert terminated and info["answer"] == "done"


def test_truncation_at_the_step_budget(server):
    client = OmniboxClient(server.url, KEY)
    with LiveEnv(client, [price_task()], split="train") as env:
        env.reset(options={"task": "price"})
        results = [env.step("noop(wait_ms=0)") for _ in range(10)]
        assert [r[3] for r in results] == [False] * 9 + [True]
        assert not any(r[2] for r in results) and results[-1][4]["budget"] == 10
    with LiveEnv(client, max_steps=1) as env:
        env.reset(options={"url": SITE + "/", "goal": "look around"})
        assert env.step("noop(0)")[3] is True


def test_release_on_close_and_on_reset(server):
    env = LiveEnv(server.url, [price_task()], api_key=KEY)
    env.reset(options={"task": "price"})
    first = env.instance.instance_id
    env.reset(options={"task": "price"})
    assert list(server.instances) != [first] and len(server.instances) == 1
    env.close()
    assert server.instances == {}
    assert [r["path"] for r in server.requests].count("/reset") == 2
    env.close()  # idempotent


def test_reset_raises_when_no_instance_can_be_had(server):
    server.max_instances = 0
    env = LiveEnv(OmniboxClient(server.url, KEY, retries=0), [price_task()])
    with pytest.raises(OmniboxError, match="could not acquire a browser instance: POST /get: HTTP 503"):
        env.reset(options={"task": "price"})
    with pytest.raises(RuntimeError, match="before reset"):
        env.step("noop()")


def test_unreachable_start_page_is_an_error_not_an_exception(server):
    with LiveEnv(OmniboxClient(server.url, KEY, retries=0), []) as env:
        obs, info = env.reset(options={"url": "https://nowhere.test/", "goal": "g"})
        assert "ERR_NAME_NOT_RESOLVED" in obs["last_action_error"]
        assert info["command"] == {"visit_page": {"url": "https://nowhere.test/"}}


def test_task_choice(server, tmp_path):
    path = tmp_path / "tasks.jsonl"
    dump_tasks([price_task("a"), price_task("b"), price_task("c")], path)
    with LiveEnv(OmniboxClient(server.url, KEY), path) as env:
        picks = [env.reset(seed=s)[1]["task_id"] for s in (1, 2, 1, 2)]
        assert picks[:2] == picks[2:]
        assert env.reset(options={"task": price_task("x")})[1]["task_id"] == "x"
        assert env.reset(options={"task": price_task("y").to_dict()})[1]["task_id"] == "y"
        with pytest.raises(ValueError, match="unknown task 'zzz'"):
            env.reset(options={"task": "zzz"})
    with pytest.raises(ValueError, match="no tasks"):
        LiveEnv(OmniboxClient(server.url, KEY)).reset()
    with LiveEnv(OmniboxClient(server.url, KEY, retries=0)) as env:
        obs, info = env.reset(options={"url": "shop.example/", "goal": "g"})
        assert info["command"] == {"visit_page": {"url": "https://shop.example/"}}
        assert "ERR_NAME_NOT_RESOLVED" not in obs["last_action_error"]


def test_screenshots_can_be_turned_off(server):
    with LiveEnv(OmniboxClient(server.url, KEY), [price_task()], screenshots=False) as env:
        obs, _ = env.reset(options={"task": "price"})
        assert obs["screenshot"] == b""
        assert not any(r["path"] == "/screenshot" for r in server.requests)


def test_release_failure_only_warns(server):
    env = LiveEnv(OmniboxClient(server.url, KEY, retries=0), [price_task()])
    env.reset(options={"task": "price"})
    server.instances.clear()
    with pytest.warns(RuntimeWarning, match="could not release browser instance"):
        env.close()


def test_build_axtree():
    elements = [Element("5", "link", "Docs", raw={"href": "/docs"}), Element("6", "textbox", "Query", value="shoes"),
                Element("7", "button", "  Go\n")]
    tree = build_axtree("It's a page", elements, "Intro\n\n  Docs  \nGo\nMore   text")
    assert tree.splitlines() == [
        'RootWebArea "It\'s a page"',
        "\t[5] link 'Docs', url='/docs'",
        "\t[6] textbox 'Query' value='shoes'",
        "\t[7] button 'Go'",
        "\tStaticText 'Intro'",
        "\tStaticText 'More text'",
    ]


def test_is_a_gymnasium_env(env):
    assert isinstance(env, gym.Env)
    env.reset(options={"task": "price"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env.close()


def test_report_infeasible_ends_the_episode_without_an_answer(env):
    env.reset(options={"task": "price"})
    obs, reward, terminated, truncated, info = env.step("report_infeasible('blocked by a CAPTCHA')")
    assert terminated and not truncated and reward == 0.0
    assert info["answer"] is None and info["infeasible"] == "blocked by a CAPTCHA"
    assert obs["chat_messages"] == [{"role": "infeasible", "message": "blocked by a CAPTCHA"}]
