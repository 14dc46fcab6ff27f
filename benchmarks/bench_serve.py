"""Served mode under load: `simweb serve` (waitress, SQLite sessions) in its own process.

Per app:

1. Load: 200 concurrent sessions (one client thread and keep-alive connection each), each
   signs in as its own user and then random-walks the site: follows links on the page it
   got, submits its forms with junk values (markup, quotes, huge and empty strings,
   numbers out of range...), and now and then searches for its own marker. Reported:
   throughput, client-side latency p50/p95/p99, 5xx count, raw-markup echoes (a junk
   ``<script>`` coming back unescaped) and cross-talk: a page or a state holding another
   session's marker.
2. Memory: the server's RSS (from /proc) after the load, and its growth per 1,000 more
   sessions (new browsers, two page views each), with the session database's growth.
3. Overhead: one recorded walk replayed request by request, alternating blocks of 25 in
   process (``App.navigate`` / ``App.submit`` on a state, what ``env.step`` pays for a
   request) and over HTTP to the server (one client, no concurrency). The serving
   overhead is the median per-request difference. Both sides run in the same run,
   interleaved, so load from other work on the machine hits both alike. Also reported:
   the time the server spent in the app (its ``Server-Timing`` header) and the round trip
   of ``GET /favicon.ico`` (HTTP and Flask with no session and no page: the floor any
   served request pays), interleaved with the same requests; and CPU time per request
   (this thread's for the in-process side and the client, every server thread's from
   /proc/<pid>/task/*/schedstat), which other load on the machine does not inflate.
4. Restore validation: the time to refuse a state whose wishlist holds n distinct
   objects (quadratic before: 0.64 / 2.46 / 9.64 s for 1,000 / 2,000 / 4,000), and to
   refuse an 8 MB body, a 990-deep state and a 300-deep one.

    python benchmarks/bench_serve.py [--quick] [--apps shopping,forum,issues] [--out FILE]

Every run is bounded: at most ``--max-seconds`` of load per app; request counts are fixed.
"""
from __future__ import annotations

import copy
import http.client
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import orjson
from common import cpu_ns, load_now, now_ns, parser, percentile, print_table, settle, summarize, target, write_json

TOKEN = "bench-control-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
COOKIE = "simweb_session"
JUNK = ["", "0", "-1", "1e309", "99999999999999999999", "<script>alert(1)</script>", "\"><img src=x onerror=alert(1)>",
        "' OR 1=1 --", "{{7*7}}", "../../etc/passwd", "%00", "\u202e\u0000x", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ✓", "a" * 5000, "  ", "null",
        "[]", "true", "NaN", "javascript:alert(1)"]
RAW = "<script>alert(1)</script>"
ECHO = {"shopping": "/search?q=", "forum": "/search?q=", "issues": "/projects?q="}
HREF = re.compile(r'href="(/[^"#]*)"')
FORM = re.compile(r'<form\b([^>]*)>(.*?)</form>', re.S)
NAME = re.compile(r'\bname="([^"]+)"')
ATTR = re.compile(r'\b(method|action)="([^"]*)"')
MARK = re.compile(r"mk(\d+)z")


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_server(app: str, db: str, threads: int, log: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "simweb.cli", "serve", app, "--port", str(port), "--session-db",
                             db, "--control-token", TOKEN, "--threads", str(threads)],
                            stdout=subprocess.DEVNULL, stderr=log.open("wb"))
    for _ in range(600):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, port
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"server exited: {log.read_text()[-300:]}") from None
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("server did not start")


def cpu_of(pid: int) -> int:
    """CPU time (ns) every thread of process ``pid`` has run, from /proc/<pid>/task/*/schedstat."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass    # a thread that just ended
    return total


def rss_of(pid: int) -> int:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * 4096


class Client:
    """One browser: a keep-alive connection and a cookie."""

    def __init__(self, port: int):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.cookie: str | None = None

    def request(self, method: str, path: str, form: dict | None = None, headers: dict | None = None,
                body: bytes | None = None) -> tuple[int, dict, bytes, float]:
        h = dict(headers or {})
        if self.cookie:
            h["Cookie"] = f"{COOKIE}={self.cookie}"
        if form is not None:
            body = urlencode(form, doseq=True).encode()
            h["Content-Type"] = "application/x-www-form-urlencoded"
        for attempt in (0, 1):
            try:
                t0 = now_ns()
                self.conn.request(method, path, body=body, headers=h)
                r = self.conn.getresponse()
                data = r.read()
                dt = (now_ns() - t0) * 1e-9
                break
            except (ConnectionError, http.client.HTTPException):
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                if attempt:
                    raise
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        cookie = hdrs.get("set-cookie", "")
        if cookie.startswith(f"{COOKIE}="):
            value = cookie.split(";")[0].split("=", 1)[1]
            self.cookie = value or None
        return r.status, hdrs, data, dt

    def close(self) -> None:
        self.conn.close()


def login_form(sim: Any, uid: int) -> dict:
    user = sim.world.user(uid)
    event = next(e for e in sim.spec.events.values() if e.route == "/login")
    form = {}
    for name in event.params:
        if name in ("login", "username"):
            form[name] = user["username"]
        elif name == "password":
            form[name] = user["password"]
        elif name == "next":
            form[name] = "/"
    return form


def next_request(rng: random.Random, html: str, app: str, marker: str) -> tuple[str, str, dict | None]:
    """A random next step from a page: a link, a form with junk, or a marker search."""
    roll = rng.random()
    if roll < 0.12:
        return "GET", ECHO[app] + marker, None
    forms = FORM.findall(html)
    if forms and roll < 0.45:
        attrs, inner = rng.choice(forms)
        a = dict(ATTR.findall(attrs))
        action = a.get("action") or "/"
        if not action.startswith("/"):
            action = "/"
        names = sorted(set(NAME.findall(inner)))
        form = {n: rng.choice(JUNK) if rng.random() < 0.7 else str(rng.randint(-5, 50)) for n in names}
        if a.get("method", "get").lower() == "post":
            return "POST", action, form
        return "GET", action.split("?")[0] + "?" + urlencode(form), None
    links = [h for h in HREF.findall(html) if not h.startswith("/static") and "logout" not in h]
    if links:
        return "GET", rng.choice(links).replace("&amp;", "&"), None
    return "GET", "/", None


def walk(sim: Any, app: str, port: int, index: int, steps: int, deadline: float, out: dict, record: list | None) -> None:
    rng = random.Random(index)
    marker = f"mk{index}z"
    c = Client(port)
    lat: list[float] = []
    statuses: dict[int, int] = {}
    foreign = raw = 0
    errors: list[dict] = []
    try:
        html = ""
        # Sign in first (the login page, then its form), then walk.
        script: list[tuple[str, str, dict | None]] = [("GET", "/login", None),
                                                      ("POST", "/login", login_form(sim, index % 50 + 1))]
        location: str | None = None
        for _ in range(steps + 2):
            if time.monotonic() > deadline:
                break
            if location is not None:
                method, path, form = "GET", location, None
            elif script:
                method, path, form = script.pop(0)
            else:
                method, path, form = next_request(rng, html, app, marker)
            if record is not None:
                record.append((method, path, copy.deepcopy(form)))
            status, hdrs, body, dt = c.request(method, path, form=form)
            lat.append(dt)
            statuses[status] = statuses.get(status, 0) + 1
            if status >= 500 and len(errors) < 3:
                errors.append({"method": method, "path": path[:200], "status": status,
                               "body": body[:300].decode("utf-8", "replace")})
            text = body.decode("utf-8", "replace")
            if RAW in text:
                raw += 1
            if any(m != str(index) for m in MARK.findall(text)):
                foreign += 1
            location = hdrs.get("location") if status in (301, 302, 303) else None
            if location and not location.startswith("/"):
                location = urlsplit(location).path or "/"
            if status == 200:
                html = text
        status, _, body, _ = c.request("GET", "/_simweb/state", headers=AUTH)
        state = orjson.loads(body)
        urls = [u for t in state["browser"]["tabs"] for u in t["history"]]
        foreign += sum(1 for u in urls for m in MARK.findall(u) if m != str(index))
        own_user = state["browser"]["user"] in (None, index % 50 + 1)
    finally:
        c.close()
    out[index] = {"lat": lat, "statuses": statuses, "foreign": foreign, "raw": raw, "own_user": own_user,
                  "errors": errors}


def load_phase(sim: Any, app: str, port: int, sessions: int, steps: int, max_seconds: float) -> dict:
    out: dict[int, dict] = {}
    deadline = time.monotonic() + max_seconds
    threads = [threading.Thread(target=walk, args=(sim, app, port, i, steps, deadline, out, None), daemon=True)
               for i in range(sessions)]
    settle()
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(max_seconds + 120)
    wall = time.perf_counter() - t0
    lat = [x for r in out.values() for x in r["lat"]]
    statuses: dict[int, int] = {}
    for r in out.values():
        for k, v in r["statuses"].items():
            statuses[k] = statuses.get(k, 0) + v
    n = len(lat)
    return {
        "sessions": sessions, "finished_sessions": len(out), "requests": n, "wall_s": round(wall, 2),
        "throughput_rps": round(n / wall, 1),
        "latency_ms": {"p50": round(percentile(lat, 50) * 1e3, 2), "p95": round(percentile(lat, 95) * 1e3, 2),
                       "p99": round(percentile(lat, 99) * 1e3, 2), "max": round(max(lat) * 1e3, 1)},
        "status_counts": {str(k): v for k, v in sorted(statuses.items())},
        "5xx": sum(v for k, v in statuses.items() if k >= 500),
        "cross_talk": sum(r["foreign"] for r in out.values()) + sum(1 for r in out.values() if not r["own_user"]),
        "raw_markup": sum(r["raw"] for r in out.values()),
        "first_5xx": [e for r in out.values() for e in r["errors"]][:5],
    }


def memory_phase(app: str, port: int, pid: int, db_path: Path, extra: int) -> dict:
    rss0 = rss_of(pid)
    size0 = db_path.stat().st_size + (db_path.with_name(db_path.name + "-wal").stat().st_size
                                      if db_path.with_name(db_path.name + "-wal").exists() else 0)
    c = Client(port)
    for _ in range(extra):
        c.cookie = None               # a new browser: its first page makes the session,
        c.request("GET", "/")
        c.request("GET", ECHO[app] + "x")   # its second establishes it
    c.close()
    rss1 = rss_of(pid)
    size1 = db_path.stat().st_size + (db_path.with_name(db_path.name + "-wal").stat().st_size
                                      if db_path.with_name(db_path.name + "-wal").exists() else 0)
    return {"rss_after_load_mb": round(rss0 / 2**20, 1), "rss_after_more_mb": round(rss1 / 2**20, 1),
            "more_sessions": extra, "rss_per_1000_sessions_mb": round((rss1 - rss0) / 2**20 * 1000 / extra, 2),
            "db_per_1000_sessions_mb": round((size1 - size0) / 2**20 * 1000 / extra, 2)}


def overhead_phase(sim: Any, app: str, port: int, pid: int, n: int, rounds: int) -> dict:
    from simweb.core.state import deep_copy
    from simweb.episodes.env import episode_start

    record: list = []
    walk(sim, app, port, 10_000, n, time.monotonic() + 300, {}, record)
    start = episode_start(sim, None, 0).state
    in_proc: list[list[float]] = [[] for _ in record]
    served: list[list[float]] = [[] for _ in record]
    in_server: list[list[float]] = [[] for _ in record]
    floor: list[float] = []      # GET /favicon.ico: HTTP + Flask, no session, no page
    cpu = {"in_process": 0, "client": 0, "server": 0, "floor_client": 0, "floor_server": 0}
    counts = {"requests": 0, "floor": 0}
    block = 25
    for _ in range(rounds):
        state = deep_copy(start)
        c = Client(port)          # cookie-less: its first request makes the session
        settle()
        for lo in range(0, len(record), block):
            chunk = range(lo, min(lo + block, len(record)))
            for i in chunk:
                method, path, form = record[i]
                c0, t0 = cpu_ns(), now_ns()
                if method == "POST":
                    resp = sim.submit(state, path, dict(form or {}))
                    if resp.location is None:
                        sim.navigate(state, state["browser"]["tabs"][state["browser"]["active"]]["url"], push=False)
                else:
                    sim.navigate(state, path, follow=False)
                in_proc[i].append((now_ns() - t0) * 1e-9)
                cpu["in_process"] += cpu_ns() - c0
            s0 = cpu_of(pid)
            for i in chunk:
                method, path, form = record[i]
                c0 = cpu_ns()
                _, hdrs, _, dt = c.request(method, path, form=form)
                cpu["client"] += cpu_ns() - c0
                served[i].append(dt)
                timing = hdrs.get("server-timing", "")
                if timing.startswith("app;dur="):
                    in_server[i].append(float(timing[8:]) * 1e-3)
            cpu["server"] += cpu_of(pid) - s0
            counts["requests"] += len(chunk)
            s0 = cpu_of(pid)
            for _ in chunk:
                c0 = cpu_ns()
                floor.append(c.request("GET", "/favicon.ico")[3])
                cpu["floor_client"] += cpu_ns() - c0
            cpu["floor_server"] += cpu_of(pid) - s0
            counts["floor"] += len(chunk)
        c.close()
    a = [percentile(x, 50) for x in in_proc]
    b = [percentile(x, 50) for x in served]
    diff = [y - x for x, y in zip(a, b)]
    med = percentile(diff, 50) * 1e3
    srv = [percentile(x, 50) for x in in_server if x]
    app_diff = [s - x for x, s in zip(a, (percentile(x, 50) if x else float("nan") for x in in_server)) if s == s]
    per = lambda key, k="requests": round(cpu[key] / counts[k] / 1e6, 3)   # noqa: E731 (ms per request)
    cpu_ms = {"in_process": per("in_process"), "server": per("server"), "client": per("client"),
              "favicon_server": per("floor_server", "floor"), "favicon_client": per("floor_client", "floor")}
    cpu_ms["overhead"] = round(cpu_ms["server"] + cpu_ms["client"] - cpu_ms["in_process"], 3)
    cpu_ms["overhead_in_server"] = round(cpu_ms["server"] - cpu_ms["in_process"], 3)
    return {"requests": len(record), "rounds": rounds,
            "in_process_ms": summarize(a, "ms"), "served_ms": summarize(b, "ms"),
            "server_app_ms": summarize(srv, "ms"), "favicon_round_trip_ms": summarize(floor, "ms"),
            "overhead_ms": {"median": round(med, 3), "p95": round(percentile(diff, 95) * 1e3, 3)},
            "overhead_inside_server_ms": round(percentile(app_diff, 50) * 1e3, 3),
            "cpu_per_request_ms": cpu_ms,
            **target(cpu_ms["overhead_in_server"], 0.5)}


def restore_phase(sim: Any, port: int) -> dict:
    from simweb.core.state import deep_copy
    from simweb.episodes.env import episode_start

    base = deep_copy(episode_start(sim, None, 0).state)
    c = Client(port)
    c.request("GET", "/")
    out: dict[str, Any] = {}

    def timed(body: bytes) -> tuple[int, float]:
        samples, status = [], 0
        for _ in range(3):
            status, _, _, dt = c.request("POST", "/_simweb/state", headers={**AUTH, "Content-Type": "application/json"},
                                         body=body)
            samples.append(dt)
        return status, percentile(samples, 50)

    from simweb.serving.server import Served
    from simweb.serving.sessions import SessionStore

    checker = Served(sim, SessionStore("sqlite://", app=sim.name, spec_hash="-", world_hash="-"), None, 0)
    for n in (1000, 2000, 4000, 8000):
        s = copy.deepcopy(base)
        s["runtime"]["wishlists"] = {"1": [{"id": i} for i in range(n)]}
        body = orjson.dumps(s)
        status, dt = timed(body)
        # The same validation in this process, as thread CPU time (immune to other load).
        cpu = []
        for _ in range(5):
            c0 = cpu_ns()
            try:
                checker.check(orjson.loads(body), len(body))
            except ValueError:
                pass
            cpu.append((cpu_ns() - c0) * 1e-9)
        out[f"distinct_objects_{n}"] = {"status": status, "ms": round(dt * 1e3, 2),
                                        "validation_cpu_ms": round(percentile(cpu, 50) * 1e3, 2)}
    status, dt = timed(b'{"pad": "' + b"x" * (3 * 2**20) + b'"}')   # within the body cap, over the state cap
    out["body_3mb"] = {"status": status, "ms": round(dt * 1e3, 2)}
    for depth in (300, 990):
        body = orjson.dumps(base).replace(b'"runtime":{', b'"runtime":{"deep":' + b'{"x":' * depth + b"{}" + b"}" * depth
                                          + b",", 1)
        status, dt = timed(body)
        out[f"depth_{depth}"] = {"status": status, "ms": round(dt * 1e3, 2)}
    status, _, _, _ = c.request("GET", "/_simweb/state", headers=AUTH)
    out["state_readable_after"] = status == 200
    c.close()
    return out


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--apps", default="shopping,forum,issues")
    p.add_argument("--sessions", type=int, default=200)
    p.add_argument("--steps", type=int, default=55, help="requests per session after signing in")
    p.add_argument("--threads", type=int, default=8, help="server worker threads")
    p.add_argument("--max-seconds", type=float, default=300, help="load time bound per app")
    p.add_argument("--more-sessions", type=int, default=1000)
    p.add_argument("--verbose", action="store_true", help="print the end of the server's log")
    args = p.parse_args()
    if args.quick:
        args.sessions, args.steps, args.more_sessions = 40, 20, 200
    from simweb.runtime.app import load_app
    from simweb.runtime.registry import definition

    results: dict[str, Any] = {"load_average_at_start": load_now(), "apps": {}}
    for app in [a.strip() for a in args.apps.split(",") if a.strip()]:
        sim = load_app(definition(app), 0, None)
        with tempfile.TemporaryDirectory() as tmp:
            db_path = Path(tmp) / "sessions.sqlite"
            log = Path(tmp) / "server.log"
            proc, port = start_server(app, f"sqlite:///{db_path}", args.threads, log)
            try:
                warm = Client(port)
                warm.request("GET", "/")          # the world is open, templates compiled
                warm.close()
                rss_start = rss_of(proc.pid)
                r: dict[str, Any] = {"load": load_phase(sim, app, port, args.sessions, args.steps, args.max_seconds)}
                r["memory"] = {"rss_at_start_mb": round(rss_start / 2**20, 1),
                               **memory_phase(app, port, proc.pid, db_path, args.more_sessions)}
                r["overhead"] = overhead_phase(sim, app, port, proc.pid, 200 if not args.quick else 60, 5 if not args.quick else 2)
                if app == "shopping":   # the wishlist is shopping's
                    r["restore"] = restore_phase(sim, port)
                r["server_alive"] = proc.poll() is None
            finally:
                proc.terminate()
                proc.wait(10)
                errors = [line for line in log.read_text(errors="replace").splitlines() if "internal error" in line]
                r["server_errors"] = errors[:5]
                if args.verbose:
                    lines = [ln for ln in log.read_text(errors="replace").splitlines() if "queue depth" not in ln]
                    print("\n".join(lines[-80:]))
        results["apps"][app] = r
        load, mem, ov = r["load"], r["memory"], r["overhead"]
        print_table(f"{app}: {load['sessions']} concurrent sessions, {load['requests']} requests in {load['wall_s']} s",
                    ["metric", "value"],
                    [["throughput (req/s)", load["throughput_rps"]], ["p50 ms", load["latency_ms"]["p50"]],
                     ["p95 ms", load["latency_ms"]["p95"]], ["p99 ms", load["latency_ms"]["p99"]], ["5xx", load["5xx"]],
                     ["cross-talk", load["cross_talk"]], ["raw markup echoes", load["raw_markup"]],
                     ["statuses", " ".join(f"{k}:{v}" for k, v in load["status_counts"].items())],
                     ["RSS at start (MB)", mem["rss_at_start_mb"]],
                     ["RSS after load (MB)", mem["rss_after_load_mb"]],
                     ["RSS per 1,000 more sessions (MB)", mem["rss_per_1000_sessions_mb"]],
                     ["DB per 1,000 sessions (MB)", mem["db_per_1000_sessions_mb"]],
                     ["in-process request p50 (ms)", ov["in_process_ms"]["median"]],
                     ["served request p50 (ms)", ov["served_ms"]["median"]],
                     ["served request, time in the app p50 (ms)", ov["server_app_ms"]["median"]],
                     ["GET /favicon.ico round trip p50 (ms)", ov["favicon_round_trip_ms"]["median"]],
                     ["serving overhead p50 (ms)", ov["overhead_ms"]["median"]],
                     ["  of which inside the app (session, Flask) (ms)", ov["overhead_inside_server_ms"]],
                     ["CPU per request: in process (ms)", ov["cpu_per_request_ms"]["in_process"]],
                     ["CPU per request: server process, all threads (ms)", ov["cpu_per_request_ms"]["server"]],
                     ["CPU per request: client (ms)", ov["cpu_per_request_ms"]["client"]],
                     ["CPU per favicon: server / client (ms)",
                      f"{ov['cpu_per_request_ms']['favicon_server']} / {ov['cpu_per_request_ms']['favicon_client']}"],
                     ["CPU serving overhead: server - in process (ms)", ov["cpu_per_request_ms"]["overhead_in_server"]],
                     ["CPU serving overhead: server + client - in process (ms)",
                      ov["cpu_per_request_ms"]["overhead"]]]
                    + [[f"restore {k}", (f"{v['status']} in {v['ms']} ms"
                                           + (f" (validation CPU {v['validation_cpu_ms']} ms)"
                                              if "validation_cpu_ms" in v else ""))
                        if isinstance(v, dict) else v]
                       for k, v in r.get("restore", {}).items()])
        for e in load["first_5xx"]:
            print("5xx:", e)
    results["load_average_at_end"] = load_now()
    write_json(args.out, "serve", results)


if __name__ == "__main__":
    main()
