"""WebGym's action forms -> BrowserGym action strings, and in every backend's step."""

import pytest

import simweb
from simweb.web.webgym_actions import (
    WebGymAction,
    WebGymActionError,
    is_webgym_action,
    normalise,
    parse_tool_call,
    scale,
    to_browsergym,
    to_command,
)


def tool(name, **arguments):
    return {"name": name, "arguments": arguments}


def test_parse_tool_call_reads_the_first_block_as_json():
    text = ('Action: open the cart\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", '
            '"coordinate": [10, 20]}}\n</tool_call>\n<tool_call>{"name": "x"}</tool_call>')
    assert parse_tool_call(text) == tool("computer_use", action="left_click", coordinate=[10, 20])
    with pytest.raises(WebGymActionError, match="no <tool_call>"):
        parse_tool_call("click [3]")


@pytest.mark.parametrize("action, internal", [
    (tool("computer_use", action="left_click", coordinate=[1, 2]), ("click", {"coordinates": [1, 2]})),
    (tool("computer_use", action="left_click"), ("click", {"coordinates": [500, 500]})),
    (tool("computer_use", action="type", coordinate=[1, 2], text="a"), ("type", {"coordinates": [1, 2], "text": "a"})),
    (tool("web_interaction", action="type", element_id="5", text="a"), ("type", {"element_id": "5", "content": "a"})),
    (tool("web_interaction", action="click"), ("click", {"element_id": "1"})),
    (tool("computer_use", action="answer", text="x"), ("answer", {"content": "x"})),
    (tool("computer_use", action="go_back"), ("goback", {"goback_to": "last_page"})),
    (tool("", action="click", element_id="3"), ("click", {"element_id": "3"})),
    ({"key": "scroll", "arguments": {"direction": "up"}}, ("scroll", {"direction": "up"})),
])
def test_normalise_maps_qwen_names_as_webgym_does(action, internal):
    act = normalise(action)
    assert (act.key, dict(act.arguments)) == internal
    assert normalise(act) is act and act.as_dict() == {"key": internal[0], "arguments": internal[1]}


def test_scale_rounds_and_clamps_and_takes_boxes():
    assert scale([500, 500]) == (640, 384) and scale([1000, 1000]) == (1279, 767)
    assert scale([0, 0, 100, 100]) == (64, 38) and scale("[250, 750]") == (320, 576)
    with pytest.raises(WebGymActionError):
        scale([True, 1])


@pytest.mark.parametrize("action, steps", [
    (tool("computer_use", action="left_click", coordinate=[500, 500]), ["mouse_click(640, 384)"]),
    (tool("computer_use", action="type", coordinate=[500, 100], text="it's"),
     ["mouse_click(640, 77)", "keyboard_press('ControlOrMeta+a')", "keyboard_press('Backspace')",
      'keyboard_type("it\'s")', "keyboard_press('Enter')"]),
    (tool("web_interaction", action="type", element_id="q", text="lamp"), ["fill('q', 'lamp')", "press('q', 'Enter')"]),
    (tool("web_interaction", action="click", element_id="go"), ["click('go')"]),
    (tool("web_interaction", action="hover", element_id="m"), ["hover('m')"]),
    (tool("computer_use", action="scroll", direction="down"), ["scroll(0, 718)"]),
    (tool("computer_use", action="scroll", direction="up"), ["scroll(0, -718)"]),
    (tool("computer_use", action="wait", time=1.5), ["noop(1500)"]),
    (tool("computer_use", action="go_back"), ["go_back()"]),
    (tool("computer_use", action="navigate", url="example.org"), ["goto('https://example.org')"]),
    (tool("computer_use", action="answer", text="42"), ["send_msg_to_user('42')"]),
    ({"key": "tabandenter"}, ["keyboard_press('Tab')", "keyboard_press('Enter')"]),
    ({"key": "hover_and_scroll", "arguments": {"coordinates": [0, 0]}}, ["mouse_move(0, 0)", "scroll(0, 100)"]),
])
def test_to_browsergym(action, steps):
    lead, final, error = to_browsergym(action)
    assert error is None and [*lead, final] == steps
    if "scroll(0, 718)" in steps:
        assert to_browsergym(action, (800, 600))[1] == "scroll(0, 550)"


def test_to_browsergym_never_raises():
    lead, final, error = to_browsergym({"key": "fly"})
    assert lead == () and final == '{"key": "fly"}' and error and "unknown WebGym action key" in error
    bad = '<tool_call>{"name": "computer_use", "arguments": [1]}</tool_call>'
    _, final, error = to_browsergym(bad)
    assert error and error.startswith("a tool call needs") and final == bad


def test_to_command_answer_is_a_short_sleep_as_in_webgym():
    assert to_command({"key": "answer", "arguments": {"content": "x"}}) == {"sleep": {"duration": 0.1}}
    assert to_command(WebGymAction("wait", {"time": 0})) == {"sleep": {"duration": 0.0}}


def test_detection():
    assert is_webgym_action({"key": "wait"}) and is_webgym_action("x <tool_call>{}</tool_call>")
    assert not is_webgym_action("click('a')") and not is_webgym_action(3)


# ----------------------------------------------------------------------------- in-process backend

@pytest.fixture(scope="module")
def shop():
    return simweb.make("shopping", seed=0)


def test_in_process_step_takes_set_of_marks_ids_as_bids(shop):
    obs, _ = shop.reset(seed=3, options={"task": "shopping/buy_product"})
    obs, *_ = shop.step(tool("web_interaction", action="type", element_id="search-q", text="merino sweater"))
    assert obs["last_action_error"] == "" and obs["last_action"] == "press('search-q', 'Enter')"
    assert obs["url"].endswith("/search?q=merino+sweater")
    same = simweb.make("shopping", seed=0)
    same.reset(seed=3, options={"task": "shopping/buy_product"})
    same.step("fill('search-q', 'merino sweater')")
    want, *_ = same.step("press('search-q', 'Enter')")
    assert want["axtree"] == obs["axtree"] and same.snapshot()["browser"] == shop.snapshot()["browser"]


def test_in_process_coordinates_give_a_clear_error(shop):
    shop.reset(seed=3, options={"task": "shopping/buy_product"})
    before = shop.snapshot()
    text = '<tool_call>{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [500, 300]}}</tool_call>'
    obs, *_ = shop.step(text)
    assert obs["last_action"] == "mouse_click(640, 230)"
    assert "needs coordinates on a rendered page" in obs["last_action_error"]
    obs, *_ = shop.step(tool("computer_use", action="type", coordinate=[500, 300], text="x"))
    assert "needs coordinates" in obs["last_action_error"] and obs["last_action"] == "keyboard_press('Enter')"
    after = shop.snapshot()
    assert after["browser"] == before["browser"] and after["runtime"] == before["runtime"]


def test_in_process_answer_ends_the_episode_and_bad_actions_are_errors(shop):
    shop.reset(seed=3, options={"task": "shopping/buy_product"})
    obs, _, terminated, _, _ = shop.step({"key": "fly"})
    assert "unknown WebGym action key 'fly'" in obs["last_action_error"] and not terminated
    obs, _, terminated, _, _ = shop.step(tool("computer_use", action="scroll", direction="down"))
    assert obs["last_action"] == "scroll(0, 718)" and obs["last_action_error"] == ""
    obs, _, terminated, _, _ = shop.step(tool("computer_use", action="answer", text="done"))
    assert terminated and obs["chat_messages"][-1] == {"role": "assistant", "message": "done"}
