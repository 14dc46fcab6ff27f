"""benchmarks/report.py: BENCHMARKS.md's generated tables come from the results files, the
checked-in report matches its results file, and a block with no data names its command."""
from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def report() -> Any:
    spec = importlib.util.spec_from_file_location("bench_report", ROOT / "benchmarks" / "report.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_report"] = mod
    spec.loader.exec_module(mod)
    return mod


def _blocks(text: str) -> dict[str, str]:
    return dict(re.findall(r"<!-- report:(\w+) -->\n(.*?)\n<!-- /report:\1 -->", text, flags=re.S))


def test_the_checked_in_report_matches_its_results_file(report):
    text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    run = report._load(ROOT / "benchmarks" / "results_report.json")
    assert run is not None
    now, fresh = _blocks(text), _blocks(report.fill(text, run))
    assert set(now) >= {"run", "summary", "targets", "reference", "redteam", "pool", "parity", "viewer"}
    for name in now:
        if name != "sim2live":   # its dates come from git, absent from a source tarball
            assert now[name] == fresh[name], f"BENCHMARKS.md block {name!r} is stale: run benchmarks/report.py"


def test_blocks_are_filled_from_the_run_and_prose_is_left_alone(report, tmp_path):
    targets = {"benchmark": "targets", "command": "python benchmarks/bench_targets.py --quick", "machine":
               {"date": "D", "git_commit": "abc", "nproc": 2, "loadavg_at_start": [3.0]}, "results": {"rounds": 1,
               "forum": {k: {"median": v, "min": v, "max": v, "limit": lim, "met": v <= lim} for k, v, lim in (
                   ("step ms, default", 0.5, 1.0), ("step ms, 10x", 1.5, 1.0), ("cold reset ms, default", 2.0, 1.0),
                   ("fork us, default", 4.0, 10.0), ("fork us, 10x", 4.0, 10.0), ("search p50 ms, 10x", 2.0, 5.0))}}}
    run = {"benchmark": "report", "command": "python benchmarks/run_report.py", "machine": {"date": "D"},
           "results": {"targets": targets, "redteam": {"error": "timed out after 5 s"}}}
    text = ("# title\nprose\n<!-- report:targets -->\nSTALE-TEXT\n<!-- /report:targets -->\nmore prose\n"
            "<!-- report:redteam -->\n<!-- /report:redteam -->\n<!-- report:nope -->\n<!-- /report:nope -->\n")
    out = report.fill(text, run)
    assert out.startswith("# title\nprose\n") and "\nmore prose\n" in out and "STALE-TEXT" not in out
    blocks = _blocks(out)
    assert "| forum | **0.50** | 1.50 ✗ | 2.00 ✗ | **4.0** / **4.0** | **2.00** |" in blocks["targets"]
    assert "commit `abc`" in blocks["targets"]
    assert "timed out after 5 s" in blocks["redteam"] and "run_report.py --only redteam" in blocks["redteam"]
    assert "unknown report block 'nope'" in blocks["nope"]
    summary = report.block_summary(run)
    assert "| step, 10x | ≤ 1 ms | NOT met | forum 1.5 ms |" in summary
    assert "| fork, default | ≤ 10 us | **met** | - |" in summary
    assert report.fill(out, run) == out      # idempotent


def test_a_missing_or_foreign_results_file(report, tmp_path, capsys):
    foreign = tmp_path / "x.json"
    foreign.write_text(json.dumps({"not": "a benchmark"}))
    assert report.main(["--results", str(foreign)]) == 2
    assert "not a benchmark results file" in capsys.readouterr().err
    md = tmp_path / "B.md"
    md.write_text("<!-- report:targets -->\n<!-- /report:targets -->\n")
    assert report.main(["--results", str(tmp_path / "none.json"), "--write", str(md)]) == 0
    assert "No run yet" not in md.read_text() and "run_report.py --only targets" in md.read_text()
