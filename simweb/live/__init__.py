"""Live adapter: real websites behind simweb's env interface.

- :mod:`.tasks`: WebGym's task JSONL (fact groups, difficulty buckets, step budgets), read
  as WebGym's loader reads it; export of simweb tasks with start URLs;
- :mod:`.omnibox`: a client of WebGym's browser server ("Omniboxes"), to its real
  response shapes (``docs/webgym.md``);
- :mod:`.commands`: BrowserGym and WebGym actions -> Omniboxes commands;
- :mod:`.env`: :class:`LiveEnv`, a gymnasium env over that server, naming elements
  through the server's set-of-marks numbering;
- :mod:`.compare`: step-by-step comparison of two envs (e.g. sim and live);
- :mod:`.fake_server`: a fake Omniboxes server answering in the real shapes, over a tiny
  site or a simweb app run in-process, for offline tests.
"""

from .commands import ActionError, Command, browsergym_to_command, scale_coordinate, translate, webgym_to_command
from .compare import compare_runs, match_bids, write_report
from .env import LiveEnv, build_axtree, label_elements
from .omnibox import Element, Instance, OmniboxClient, OmniboxError, PageInfo, Rect, Region, ScreenshotInfo
from .tasks import FactGroup, LiveTask, TaskFormatError, dump_tasks, export_task, load_tasks, start_url, to_webgym

__all__ = [
    "ActionError", "Command", "Element", "FactGroup", "Instance", "LiveEnv", "LiveTask", "OmniboxClient",
    "OmniboxError", "PageInfo", "Rect", "Region", "ScreenshotInfo", "TaskFormatError", "browsergym_to_command",
    "build_axtree", "compare_runs", "dump_tasks", "export_task", "label_elements", "load_tasks", "match_bids",
    "scale_coordinate", "start_url", "to_webgym", "translate", "webgym_to_command", "write_report",
]
