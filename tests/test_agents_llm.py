"""The LLM agent against a local fake OpenAI-compatible endpoint: the request shape
(path, model, messages, auth header), both prompt formats solving a real task, a
malformed reply becoming last_action_error, and the client's retries and error lines."""
from __future__ import annotations

import json
import socket

import pytest
from fake_openai import FakeOpenAI

import simweb
from simweb.agents import make_agent
from simweb.agents.llm import LLMAgent, LLMError
from simweb.agents.openai_client import ChatClient
from simweb.agents.prompts import BrowserGymPrompt, WebGymPrompt, extract_calls, page_title

TASK, SEED = "shopping/add_to_cart", 1     # "Add one “Mexican at Home II” to my shopping cart."


def _episode(agent, limit=12):
    env = simweb.make("shopping", seed=0)
    obs, _ = env.reset(seed=SEED, options={"task": TASK})
    agent.reset(env)
    steps = []
    for _ in range(limit):
        action = agent.act(obs)
        obs, reward, terminated, truncated, info = env.step(action)
        steps.append((action, obs["last_action_error"]))
        if terminated or truncated:
            break
    return steps, info["verdict"], reward


def _user_text(body: dict) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")


def test_browsergym_prompt_solves_a_task_and_survives_a_malformed_reply():
    replies = [
        "The search box is search-q. I type the title.\n```fill('search-q', 'Mexican at Home II')```",
        "I am not sure what to do next.",                                     # no action at all
        "Now I submit.\n```click('search-go')``` and then maybe click('x')",  # two actions
        "I submit the search.\n```click('search-go')```",
        "The product link is product-5403.\n```click(\"product-5403\")```",
        "```click('add-to-cart')```",
        "It is in the cart, so I tell the user (that ends the task).\n```send_msg_to_user('Done.')```",
    ]
    with FakeOpenAI(replies) as api:
        agent = LLMAgent(model="test-model", base_url=api.base_url, api_key="sk-test", prompt="browsergym")
        steps, verdict, reward = _episode(agent)
    assert verdict["success"] and verdict["clean"] and reward == 1.0
    assert [a for a, _ in steps][0] == "fill('search-q', 'Mexican at Home II')"
    assert steps[1][1] and steps[2][1]                       # the env refused both unreadable replies
    assert [e["read_error"] for e in agent.log][1:3] == [
        "ValueError: Received an empty action.",
        "ValueError: Received a multi-action, only single-actions are allowed."]
    first, third = api.requests[0], api.requests[2]
    assert first["path"] == "/v1/chat/completions" and first["headers"]["Authorization"] == "Bearer sk-test"
    assert first["body"]["model"] == "test-model"
    assert [m["role"] for m in first["body"]["messages"]] == ["system", "user"]
    text = _user_text(first["body"])
    for section in ("# Goal", "Mexican at Home II", "# Currently open tabs", "# Current page Accessibility Tree",
                    "[search-q] searchbox 'Search products'", "# Action Space", "select_option(bid, options)",
                    "# Next action"):
        assert section in text
    assert "# History of past actions" not in text
    later = _user_text(third["body"])
    assert "# History of past actions" in later and "I am not sure what to do next." in later
    assert "# Error message from last action\n\nValueError: Received an empty action." in later


def test_webgym_prompt_memory_progress_intention_and_tool_calls():
    def reply(action, call):
        return (f'Memory: {{"product": "Mexican at Home II"}}\nProgress: {{"Find the product": "not finished"}}\n'
                f'Intention: "Find the product"\nAction: {action}\n<tool_call>{json.dumps(call)}</tool_call>')

    tool = "web_interaction"
    replies = [
        reply("Type the title into the search box.", {"name": tool, "arguments": {
            "action": "type", "element_id": "search-q", "text": "Mexican at Home II"}}),
        "Action: click it\n<tool_call>{not json}</tool_call>",                      # malformed call
        reply("Open the product.", {"name": tool, "arguments": {"action": "click", "element_id": "product-5403"}}),
        {"message": {"role": "assistant", "content": None, "tool_calls": [{   # a native tool call
            "id": "c1", "type": "function", "function": {"name": tool, "arguments": json.dumps(
                {"action": "click", "element_id": "add-to-cart"})}}]}},
        reply("Tell the user it is done.", {"name": tool, "arguments": {"action": "answer", "text": "Done."}}),
    ]
    sent = list(replies)
    with FakeOpenAI(replies) as api:
        agent = LLMAgent(model="qwen", base_url=api.base_url, api_key="k", prompt="webgym")
        steps, verdict, _ = _episode(agent)
    assert verdict["success"] and verdict["clean"]
    assert steps[1][1] and "not JSON" in agent.log[1]["read_error"]
    assert agent.log[0]["fields"]["memory"] == '{"product": "Mexican at Home II"}'
    assert agent.log[0]["fields"]["intention"] == '"Find the product"'
    system = api.requests[0]["body"]["messages"][0]
    assert system["role"] == "system" and "<tools>" in system["content"] and '"web_interaction"' in system["content"]
    assert "Memory" in system["content"] and "Progress" in system["content"] and "Intention" in system["content"]
    last = api.requests[-1]["body"]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant", "user", "assistant",
                                         "user", "assistant", "user"]
    assert last[2]["content"] == sent[0]                 # the raw reply goes back as the assistant turn
    assert "Task: Add one “Mexican at Home II” to my shopping cart." in last[1]["content"]
    assert "The last action failed: the <tool_call> block is not JSON" in last[5]["content"]


def test_webgym_window_keeps_four_rounds_and_summarises_older_ones():
    prompt = WebGymPrompt(window=4)
    obs = {"axtree": "RootWebArea 'Shop'\n\t[a] link 'Home'", "url": "http://x/"}
    for i in range(7):
        messages = prompt.messages("Do it", obs, "")
        prompt.read(f"Action: step {i}\n<tool_call>" + json.dumps(
            {"name": "web_interaction", "arguments": {"action": "click", "element_id": "a"}}) + "</tool_call>")
    messages = prompt.messages("Do it", obs, "")
    assert sum(m["role"] == "user" for m in messages) == 5 and sum(m["role"] == "assistant" for m in messages) == 4
    assert "Summary of the earlier steps:\nStep 1 on [Shop]: step 0 → page unchanged" in messages[1]["content"]
    assert "step 2" in messages[1]["content"] and "Step 4" not in messages[1]["content"]


def test_extract_calls_reads_free_text_like_browsergym():
    assert extract_calls("I click.\n```click('12')```") == [("click", "click('12')")]
    assert extract_calls('fill("a", "it\'s (really) here")') == [("fill", 'fill("a", "it\'s (really) here")')]
    assert extract_calls("the order (#1700) is late") == []
    assert [n for n, _ in extract_calls("print(open('x')) then noop()")] == ["open", "noop"]
    p = BrowserGymPrompt()
    assert p.read("```check('3')```").error == "NameError: Invalid action type 'check'."
    assert p.read("click(12)").action == "click(12)"
    assert page_title("RootWebArea \"Bob's shop\", focused\n") == "Bob's shop"


def test_an_unreadable_reply_never_runs():
    with FakeOpenAI(["```check('agree')```"]) as api:   # outside BrowserGym's action set
        agent = make_agent("llm", model="m", base_url=api.base_url, prompt="browsergym")
        action = agent.act({"axtree": "RootWebArea ''", "url": "http://x/", "goal": "g", "last_action_error": ""})
    assert action.startswith("unreadable reply: ")


def test_client_retries_429_and_5xx_with_backoff_then_succeeds(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    waits: list[float] = []
    replies = [{"status": 429, "headers": {"Retry-After": "3"}}, {"status": 503}, "ok"]
    with FakeOpenAI(replies) as api:
        client = ChatClient(api.base_url, "m", retries=3, backoff=0.5, sleep=waits.append)
        got = client.complete([{"role": "user", "content": "hi"}])
    assert got.text == "ok" and got.tries == 3 and got.usage["total_tokens"] == 15
    assert waits == [3.0, 1.0]                      # Retry-After, then 0.5 * 2**1
    assert all(r["headers"]["Authorization"] == "Bearer sk-env" for r in api.requests)


@pytest.mark.parametrize("replies,message", [
    ([{"status": 401, "body": {"error": {"message": "Incorrect API key provided"}}}],
     "HTTP 401: Incorrect API key provided"),
    ([{"status": 500}] * 3, "HTTP 500: fake error (gave up after 3 tries)"),
    ([{"message": "not an object"}], "choices[0].message is not an object"),
])
def test_client_errors_are_one_line(replies, message):
    n = len(replies)
    with FakeOpenAI(list(replies)) as api:
        client = ChatClient(api.base_url, "m", retries=2, sleep=lambda s: None)
        with pytest.raises(LLMError) as err:
            client.complete([{"role": "user", "content": "hi"}])
    assert message in str(err.value) and "\n" not in str(err.value)
    assert len(api.requests) == n                    # 401 and a bad body are not retried; 500 is


def test_client_unreachable_silent_and_bad_settings():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(LLMError, match="cannot reach http://127.0.0.1:.*Connection refused"):
        ChatClient(f"http://127.0.0.1:{port}/v1", "m", retries=0).complete([])
    with socket.socket() as silent:                 # accepts, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        client = ChatClient(f"http://127.0.0.1:{silent.getsockname()[1]}/v1", "m", timeout=0.3, retries=1,
                            sleep=lambda s: None)
        with pytest.raises(LLMError, match=r"no answer within 0.3 s \(gave up after 2 tries\)"):
            client.complete([])
    with pytest.raises(LLMError, match="must start with http"):
        ChatClient("localhost:8000", "m")
    with pytest.raises(LLMError, match="model name"):
        ChatClient("http://127.0.0.1:1/v1", "")
    with pytest.raises(ValueError, match="unknown prompt format"):
        LLMAgent(model="m", base_url="http://127.0.0.1:1/v1", prompt="react")


def test_a_huge_page_is_cut_at_a_line_with_a_note():
    tree = "RootWebArea 'Big'\n" + "\n".join(f"\t[b{i}] link 'Item {i}'" for i in range(100))
    text = _user_text({"messages": BrowserGymPrompt(max_axtree_chars=200).messages("g", {"axtree": tree, "url": "u"}, "")})
    kept = text.split("# Current page Accessibility Tree\n\n", 1)[1].split("\n(the rest", 1)[0]
    assert tree.startswith(kept) and len(kept) <= 200 and tree[len(kept)] == "\n"
    assert f"(the rest of the page, {len(tree) - len(kept)} characters, is cut)" in text


def test_sim2live_options_build_the_agent():
    agent = LLMAgent(base_url="http://127.0.0.1:1/v1", model="m", prompt_format="webgym")   # sim2live's keywords
    assert agent.prompt_name == "webgym" and isinstance(agent.prompt, WebGymPrompt)
