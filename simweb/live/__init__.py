"""Live adapter: real websites behind simweb's env interface.

- :mod:`.tasks`: WebGym's task JSONL (fact groups, difficulty buckets, step budgets);
- :mod:`.omnibox`: a client of WebGym's browser server ("Omniboxes");
- :mod:`.commands`: BrowserGym and WebGym actions -> Omniboxes commands;
- :mod:`.env`: :class:`LiveEnv`, a gymnasium env over that server;
- :mod:`.compare`: step-by-step comparison of two envs (e.g. sim and live);
- :mod:`.fake_server`: a fake Omniboxes server with a tiny site, for offline tests.
"""

from .compare import compare_runs, write_report
from .env import LiveEnv, build_axtree
from .omnibox import Element, Instance, OmniboxClient, OmniboxError, PageInfo, Rect
from .tasks import FactGroup, LiveTask, TaskFormatError, dump_tasks, load_tasks, to_webgym
from .commands import ActionError, Command, browsergym_to_command, scale_coordinate, translate, webgym_to_command

__all__ = [
    "ActionError", "Command", "Element", "FactGroup", "Instance", "LiveEnv", "LiveTask", "OmniboxClient",
    "OmniboxError", "PageInfo", "Rect", "TaskFormatError", "browsergym_to_command", "build_axtree",
    "compare_runs", "dump_tasks", "load_tasks", "scale_coordinate", "to_webgym", "translate",
    "webgym_to_command", "write_report",
]
