"""simweb environments for TRL's ``GRPOTrainer(environment_factory=...)``.

    from trl import GRPOConfig, GRPOTrainer
    from simweb.trainers.trl_env import SimwebToolEnv, task_dataset

    trainer = GRPOTrainer(model=..., args=GRPOConfig(num_generations=8, ...),
                          train_dataset=task_dataset("forum", ["forum/upvote_post"], seeds=range(64)),
                          environment_factory=SimwebToolEnv)           # in-process
    # or environment_factory=lambda: SimwebOpenEnvToolEnv("http://127.0.0.1:8000")   # `simweb openenv forum`

TRL's environment hook (``trl/trainer/grpo_trainer.py``): the trainer makes one instance
per generation, calls ``reset(**row)`` with the dataset row's columns (here ``app``, ``task``,
``seed`` and optionally ``prefix``) and appends the text it returns to the row's last user
message; every public method other than ``reset`` and ``get_reward`` is a tool, its schema
read from the type hints and the docstring's ``Args:``; ``get_reward()`` makes the env own
the reward. The tools are BrowserGym's named actions (``click``, ``fill``, ``select_option``,
``check``, ``uncheck``, ``press``, ``goto``, ``go_back``, ``scroll``, ``send_msg_to_user``,
``report_infeasible``), as TRL's docs advise over one generic ``step``: each writes its
canonical action text (:func:`simweb.textenv.call_text`) and runs it through
:class:`simweb.textenv.TextEnv`; what a tool returns is the next observation's text (goal,
page, AX tree, the last action's error), the same text in-process and through OpenEnv.
A call with bad arguments comes back as the error text (TRL feeds a tool's exception back
as its response); a call after the episode ended says so and runs nothing.

Groups: GRPO repeats each row ``num_generations`` times. In-process, every env of one row is
a fork of one root env per (app, task, seed, prefix) (:class:`simweb.textenv.GroupStarts`);
through OpenEnv, the server's reset does the same, so a group's generations start from forks
of one state and compare actions, not seeds. ``get_reward`` is the episode's reward: with
the default sparse reward, 1 for a clean success when the agent has sent its final message,
else 0 (TRL's docs: binary rewards and the final state, not the path).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...episodes.textenv import GroupStarts, TextEnv, call_text, observation_text

__all__ = ["SimwebOpenEnvToolEnv", "SimwebToolEnv", "task_dataset", "INSTRUCTION"]

#: The user message of every row: the env appends the first observation to it.
INSTRUCTION = ("Use the browser tools to reach the goal below. Each tool returns the page after the action. "
               "When the work is done, or to give an answer, call send_msg_to_user.\n\n")

_STARTS: dict[str, GroupStarts] = {}


def task_dataset(app: str, tasks: Iterable[str], seeds: Iterable[int], *, prefix: list[str] | None = None) -> Any:
    """A ``datasets.Dataset`` of rows (prompt, app, task, seed, prefix): one per (task, seed)."""
    from datasets import Dataset

    rows = [{"prompt": [{"role": "user", "content": INSTRUCTION}], "app": app, "task": task, "seed": int(seed),
             "prefix": list(prefix or [])} for task in tasks for seed in seeds]
    return Dataset.from_list(rows)


class _BrowserTools:
    """The tools (public methods) shared by the in-process and the OpenEnv env."""

    max_axtree_chars = 40_000

    def __init__(self) -> None:
        self.total_reward = 0.0
        self.done = False
        self.steps = 0

    # ------------------------------------------------------------------ TRL's contract
    def get_reward(self) -> float:
        """The episode's reward (summed over its steps)."""
        return self.total_reward

    # ------------------------------------------------------------------ tools
    def click(self, bid: str) -> str:
        """Click an element.

        Args:
            bid: The element's id: the [bid] at the start of its line in the accessibility tree.
        """
        return self._call("click", bid)

    def fill(self, bid: str, value: str) -> str:
        """Fill a text field with a value (replaces its content).

        Args:
            bid: The text field's id.
            value: The text to type.
        """
        return self._call("fill", bid, value)

    def select_option(self, bid: str, option: str) -> str:
        """Select an option of a select element by its value or label.

        Args:
            bid: The select element's id.
            option: The option's value or label.
        """
        return self._call("select_option", bid, option)

    def check(self, bid: str) -> str:
        """Check a checkbox or a radio button.

        Args:
            bid: The checkbox's id.
        """
        return self._call("check", bid)

    def uncheck(self, bid: str) -> str:
        """Uncheck a checkbox.

        Args:
            bid: The checkbox's id.
        """
        return self._call("uncheck", bid)

    def press(self, bid: str, key_comb: str) -> str:
        """Focus an element and press a key combination.

        Args:
            bid: The element's id.
            key_comb: The keys, e.g. Enter or Control+a.
        """
        return self._call("press", bid, key_comb)

    def goto(self, url: str) -> str:
        """Open a URL in the current tab.

        Args:
            url: The address to open.
        """
        return self._call("goto", url)

    def go_back(self) -> str:
        """Go back to the previous page."""
        return self._call("go_back")

    def scroll(self, delta_y: int) -> str:
        """Scroll the page vertically.

        Args:
            delta_y: Pixels to scroll (negative: up).
        """
        return self._call("scroll", 0, delta_y)

    def send_msg_to_user(self, text: str) -> str:
        """Send the user a message: the answer, or that the work is done. Ends the episode.

        Args:
            text: The message.
        """
        return self._call("send_msg_to_user", text)

    def report_infeasible(self, reason: str) -> str:
        """Report that the task cannot be done. Ends the episode.

        Args:
            reason: Why it cannot be done.
        """
        return self._call("report_infeasible", reason)

    # ------------------------------------------------------------------ helpers
    def _call(self, name: str, *args: Any) -> str:
        if self.done:
            raise ValueError("the episode is over: no further action runs")
        text, reward, done = self._run(call_text(name, *args))   # bad arguments: ActionError, fed back by TRL
        self.steps += 1
        self.total_reward += reward
        self.done = done
        return text + ("\nThe episode is over." if done else "")

    def _begin(self) -> None:
        self.total_reward = 0.0
        self.done = False
        self.steps = 0

    def _run(self, action: str) -> tuple[str, float, bool]:
        raise NotImplementedError


class SimwebToolEnv(_BrowserTools):
    """In-process simweb for TRL (see the module doc). ``reward``: ``sparse`` or ``progress``."""

    def __init__(self, reward: str = "sparse", max_axtree_chars: int = 40_000, world_seed: int = 0):
        super().__init__()
        self.reward_mode = reward
        self.max_axtree_chars = max_axtree_chars
        self.world_seed = world_seed
        self.text: TextEnv | None = None

    def reset(self, **row: Any) -> str:
        """Start the row's task instance (a fork of the group's root); the first observation's text."""
        self._begin()
        if self.reward_mode not in _STARTS:
            _STARTS[self.reward_mode] = GroupStarts(reward=self.reward_mode)
        env = _STARTS[self.reward_mode].fork(str(row["app"]), row.get("task"), int(row["seed"]),
                                              tuple(row.get("prefix") or ()), world_seed=self.world_seed)
        self.text = TextEnv(env, max_axtree_chars=self.max_axtree_chars)
        return observation_text(self.text.start().observation, max_axtree_chars=self.max_axtree_chars)

    def _run(self, action: str) -> tuple[str, float, bool]:
        assert self.text is not None, "reset first"
        step = self.text.step(action)
        return step.text, step.reward, step.done


class SimwebOpenEnvToolEnv(_BrowserTools):
    """simweb through a ``simweb openenv`` server, one OpenEnv session per instance (openenv's
    ``EnvClient``); the text each tool returns is the in-process text of the same observation."""

    def __init__(self, base_url: str, max_axtree_chars: int = 40_000):
        super().__init__()
        from .openenv_env import SimwebClient

        self.max_axtree_chars = max_axtree_chars
        self.client = SimwebClient(base_url=base_url).sync()
        self.client.connect()

    def reset(self, **row: Any) -> str:
        """Start the row's task instance on the server (a fork of the group's root there)."""
        self._begin()
        options: dict[str, Any] = {"seed": int(row["seed"]), "prefix": list(row.get("prefix") or [])}
        if row.get("task") is not None:
            options["task"] = row["task"]
        result = self.client.reset(**options)
        return self._text(result.observation)

    def _run(self, action: str) -> tuple[str, float, bool]:
        from .openenv_env import SimwebAction

        result = self.client.step(SimwebAction(action=action))
        return self._text(result.observation), float(result.reward or 0.0), bool(result.done)

    def _text(self, obs: Any) -> str:
        return observation_text({"goal": obs.goal, "url": obs.url, "axtree": obs.axtree,
                                 "last_action_error": obs.last_action_error}, max_axtree_chars=self.max_axtree_chars)

    def _close(self) -> None:
        """Close the session (private: every public method would be a tool)."""
        self.client.close()
