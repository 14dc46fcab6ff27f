"""Agent actions -> Omniboxes commands: BrowserGym strings and WebGym's own forms."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simweb.live.commands import ActionError, Command, scale_coordinate, translate, webgym_to_command


@pytest.mark.parametrize("nx, ny, expected", [
    (0, 0, (0, 0)), (500, 500, (640, 384)), (1000, 1000, (1279, 767)), (999, 1, (1279, 1)),
    (250.4, 333, (321, 256)), (-20, 1200, (0, 767)),
])
def test_scale_coordinate(nx, ny, expected):
    assert scale_coordinate(nx, ny) == expected


def test_scale_coordinate_other_viewport():
    assert scale_coordinate(500, 500, (1000, 600)) == (500, 300)


@given(st.floats(-100, 1100), st.floats(-100, 1100), st.integers(1, 4000), st.integers(1, 4000))
def test_scaled_points_stay_in_the_viewport(nx, ny, w, h):
    x, y = scale_coordinate(nx, ny, (w, h))
    assert 0 <= x < w and 0 <= y < h


def element(command: Command):
    return command.element, command.verb, dict(command.args)


@pytest.mark.parametrize("action, expected", [
    ("click('12')", ("12", "click", {})),
    ("click(bid='12', button='left')", ("12", "click", {})),
    ("check('7')", ("7", "click", {})),
    ("fill('3', 'hello')", ("3", "fill", {"value": "hello", "press_enter": False, "delete_existing": True})),
    ("clear('3')", ("3", "fill", {"value": "", "press_enter": False, "delete_existing": True})),
    ("select_option('3', 'Sales')", ("3", "select", {"option": "Sales"})),
    ("select_option('8', ['Sales'])", ("8", "select", {"option": "Sales"})),
    ("hover('5')", ("5", "hover", {})),
    ("press('3', 'Enter')", ("3", "press", {"keys": ["Enter"]})),
    ("press('3', 'Control+Shift+a')", ("3", "press", {"keys": ["Control", "Shift", "a"]})),
])
def test_browsergym_element_actions(action, expected):
    command = translate(action)
    assert command.name is None and element(command) == expected


@pytest.mark.parametrize("action, expected", [
    ("keyboard_press('Shift++')", {"keypress": {"keys": ["Shift", "+"]}}),
    ("scroll(0, 300)", {"page_down": {"amount": 300, "full_page": False}}),
    ("scroll(0, -200.6)", {"page_up": {"amount": 201, "full_page": False}}),
    ("goto('https://e.com/a')", {"visit_page": {"url": "https://e.com/a"}}),
    ("go_back()", {"back": {}}),
    ("mouse_click(10.4, 20)", {"click_coords": {"x": 10.4, "y": 20.0}}),
    ("mouse_move(10, 20)", {"hover_coords": {"x": 10.0, "y": 20.0}}),
    ("noop()", {"sleep": {"duration": 1.0}}),
    ("noop(wait_ms=250)", {"sleep": {"duration": 0.25}}),
    ("scroll(0, 0)", None),
])
def test_browsergym_page_actions(action, expected):
    assert translate(action).as_dict() == expected


def test_terminal_browsergym_actions():
    msg = translate("send_msg_to_user('The price is $9.99')")
    assert msg.terminal and msg.answer == "The price is $9.99" and msg.name is None
    infeasible = translate("report_infeasible('blocked by a CAPTCHA')")
    assert infeasible.terminal and infeasible.answer is None and infeasible.infeasible == "blocked by a CAPTCHA"


@pytest.mark.parametrize("action, match", [
    ("go_forward()", "not supported"), ("new_tab()", "not supported"), ("tab_focus(1)", "not supported"),
    ("dblclick('3')", "not supported"), ("click('3', button='right')", "left click"),
    ("scroll(100, 0)", "horizontal"), ("select_option('3', ['a', 'b'])", "exactly one"),
])
def test_unsupported_browsergym_actions(action, match):
    with pytest.raises(ActionError, match=match):
        translate(action)


@pytest.mark.parametrize("action", [
    "fly('3')", "click()", "click('1', bid='2')", "fill('1', 'a', 'b')", "fill('1', value=3)",
    "click(__import__('os').system('true'))", "click('1'); click('2')", "x = 1", "'click'", "", 3,
])
def test_malformed_actions(action):
    with pytest.raises(ActionError):
        translate(action)


# ----------------------------------------------------------------------------- WebGym forms

QWEN = "computer_use"
MARKS = "web_interaction"


def tool(name, **arguments):
    return {"name": name, "arguments": arguments}


@pytest.mark.parametrize("action, expected", [
    (tool(QWEN, action="left_click", coordinate=[500, 500]), {"click_coords": {"x": 640, "y": 384}}),
    (tool(QWEN, action="type", coordinate=[100, 200], text="hi"),
     {"fill_coords": {"x": 128, "y": 154, "value": "hi", "press_enter": True, "delete_existing": True}}),
    (tool(QWEN, action="scroll", direction="up"), {"page_up": {"full_page": True}}),
    (tool(QWEN, action="scroll", direction="down"), {"page_down": {"full_page": True}}),
    (tool(QWEN, action="wait", time=3), {"sleep": {"duration": 3.0}}),
    (tool(QWEN, action="wait"), {"sleep": {"duration": 2.0}}),
    (tool(QWEN, action="go_back"), {"back": {}}),
    (tool(QWEN, action="navigate", url="example.org/a"), {"visit_page": {"url": "https://example.org/a"}}),
    (tool(QWEN, action="navigate", url="http://127.0.0.1:8000/"), {"visit_page": {"url": "http://127.0.0.1:8000/"}}),
    (tool(QWEN, action="navigate"), {"sleep": {"duration": 0.5}}),
    ({"key": "hover_and_scroll", "arguments": {"coordinates": [10, 20, 30, 40], "direction": "up"}},
     {"hover_and_scroll_coords": {"x": 26, "y": 23, "direction": "up"}}),
    ({"key": "tabandenter", "arguments": {}}, {"tab_and_enter": {}}),
    ({"key": "goback", "arguments": {"goback_to": "homepage"}}, {"visit_page": {"url": "https://home.example/"}}),
])
def test_webgym_page_commands_as_its_context_manager_sends_them(action, expected):
    assert translate(action, homepage_url="https://home.example/").as_dict() == expected


@pytest.mark.parametrize("action, expected", [
    (tool(MARKS, action="click", element_id="7"), ("7", "click", {})),
    (tool(MARKS, action="hover", element_id=4), ("4", "hover", {})),
    (tool(MARKS, action="type", element_id="3", text="merino"),
     ("3", "fill", {"value": "merino", "press_enter": True, "delete_existing": True})),
    ({"key": "click", "arguments": {"element_id": "9"}}, ("9", "click", {})),
    ('Action: search\n<tool_call>\n{"name": "web_interaction", "arguments": {"action": "click", "element_id": "2"}}'
     '\n</tool_call>', ("2", "click", {})),
])
def test_set_of_marks_ids_are_element_commands(action, expected):
    assert element(translate(action)) == expected


def test_answer_ends_the_episode():
    for action in (tool(QWEN, action="answer", text="$9.99"), {"key": "answer", "arguments": {"content": "$9.99"}},
                   '<tool_call>{"name": "computer_use", "arguments": {"action": "answer", "text": "$9.99"}}</tool_call>'):
        command = webgym_to_command(action)
        assert command.terminal and command.answer == "$9.99" and command.name is None


@pytest.mark.parametrize("action, match", [
    ("<tool_call>{not json}</tool_call>", "not JSON"),
    ({"name": QWEN, "arguments": {"action": "fly"}}, "unknown tool action 'fly'"),
    ({"key": "fly"}, "unknown WebGym action key 'fly'"),
    (tool(QWEN, action="left_click", coordinate=[1]), "coordinates must be"),
    (tool(QWEN, action="scroll", direction="left"), "direction"),
    (tool(MARKS, action="click", element_id=""), "element_id"),
    ({"name": QWEN}, "a tool call needs"),
])
def test_bad_webgym_actions(action, match):
    with pytest.raises(ActionError, match=match):
        translate(action)
