"""What the settle window after each action costs a browser step.

The window (``BrowserEnv._settle_window``) waits until what an action set going has come
to rest: a tab the page opened, a navigation started by script. A page without script is
observed at once, so a served simweb app should pay only the one look at the page that
tells it has no script; a scripted page pays the quiet period (``SETTLE_QUIET_MS``).

Measured in ONE process run on one Chromium, in interleaved rounds (load from other work
hits every side alike), the same navigating click timed on each side:

  A. BrowserEnv on the served shopping app (world seed 0): clicks alternating between
     the header's Cart and home links, with the settle window (the default);
  B. the same, on a second env of the same server whose settle window is turned off
     (the step as it was before the window: the same-run reference);
  C. WebEnv on a two-page loopback site whose pages carry a script (nothing in it moves
     the page): a link click each way, with the settle window;
  D. the same site with the window off (reference of C).

    python benchmarks/bench_settle.py [--quick] [--rounds N] [--out FILE]
"""
from __future__ import annotations

import http.server
import sys
import threading
from typing import Any

from common import now_ns, parser, print_table, settle, stat_row, summarize, write_json

PAGE = ("<!DOCTYPE html><html><head><title>{title}</title></head><body><h1>{title}</h1>"
        "<a id='go' href='{other}'>Go</a><script>document.body.dataset.ready = '1';</script></body></html>")


class _Site(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        title, other = ("One", "/two") if self.path != "/two" else ("Two", "/one")
        body = PAGE.format(title=title, other=other).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _off(env: Any) -> Any:
    """``env`` with its settle window turned off (the step as before the window)."""
    env._settle_window = lambda: None
    return env


def _time_step(env: Any, action: str) -> float:
    settle()
    t0 = now_ns()
    env.step(action)
    return (now_ns() - t0) / 1e9


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 40, --quick 6)")
    args = p.parse_args(argv)
    rounds = args.rounds or (6 if args.quick else 40)

    from playwright.sync_api import sync_playwright

    from simweb.live.web import WebEnv
    from simweb.serving.browser import SETTLE_QUIET_MS, BrowserEnv, ServedApp, launch_chromium

    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    site_url = f"http://127.0.0.1:{site.server_port}"
    pw = sync_playwright().start()
    browser = launch_chromium(pw, headless=True)
    served = ServedApp("shopping", world_seed=0)
    envs: dict[str, Any] = {}
    try:
        envs["A"] = BrowserEnv("shopping", 0, server=served, browser=browser, screenshots=False)
        envs["B"] = _off(BrowserEnv("shopping", 0, server=served, browser=browser, screenshots=False))
        envs["C"] = WebEnv(browser=browser, screenshots=False)
        envs["D"] = _off(WebEnv(browser=browser, screenshots=False))
        for key in ("A", "B"):
            envs[key].reset(seed=0)
        for key in ("C", "D"):
            envs[key].reset(options={"url": site_url + "/one"})
        samples: dict[str, list[float]] = {k: [] for k in envs}
        settles: dict[str, list[str]] = {k: [] for k in envs}
        for r in range(rounds + 1):   # round 0 warms every side up, untimed
            for key in ("A", "B", "C", "D"):
                env = envs[key]
                if key in ("A", "B"):
                    action = "click('nav-cart')" if r % 2 == 0 else "click('nav-home')"
                else:
                    obs = env.backend.observe({})
                    bid = next(line.split("]")[0].strip(" [") for line in obs["axtree"].splitlines()
                               if "link 'Go'" in line)
                    action = f"click('{bid}')"
                dt = _time_step(env, action)
                if r:
                    samples[key].append(dt)
                    settles[key].append(getattr(env, "last_settle", ""))
        stats = {k: summarize(v, "ms") for k, v in samples.items()}
        labels = {"A": "BrowserEnv shopping, window on", "B": "BrowserEnv shopping, window off (reference)",
                  "C": "WebEnv scripted page, window on", "D": "WebEnv scripted page, window off (reference)"}
        print_table(f"One navigating click, ms ({rounds} interleaved rounds; quiet period {SETTLE_QUIET_MS} ms)",
                    ["side", "n", "median", "p95", "unit"], [stat_row(labels[k], stats[k]) for k in stats])
        results = {
            "rounds": rounds, "quiet_ms": SETTLE_QUIET_MS,
            "sides": {k: {"label": labels[k], "step_ms": stats[k],
                          "settle_outcomes": {o: settles[k].count(o) for o in sorted(set(settles[k]))}}
                      for k in stats},
            "served_app_added_ms_median": round(stats["A"]["median"] - stats["B"]["median"], 3),
            "scripted_page_added_ms_median": round(stats["C"]["median"] - stats["D"]["median"], 3),
        }
        print(f"served app: +{results['served_app_added_ms_median']} ms median per step; "
              f"scripted page: +{results['scripted_page_added_ms_median']} ms")
        write_json(args.out, "settle", results, argv if argv is not None else sys.argv)
    finally:
        for env in envs.values():
            env.close()
        served.close()
        browser.close()
        pw.stop()
        site.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
