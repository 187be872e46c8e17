"""Fault probes of ``editspec serve``: bad, slow, huge, hostile and abandoned requests, on loopback.

    python -m eval.faults --port 8081                  # a server already running here
    python -m eval.faults --model DIR [--quick]        # starts its own (and probes SIGTERM too)

Each probe prints ``held`` or ``broken`` with a line of detail. A probe holds when every good
request in it is answered exactly as an idle server answered it beforehand, no answer is a 5xx
(a 503 from a full or stopping server excepted where the probe says so), and bad requests get
their clear 4xx:

    surrogate      a lone surrogate ("\\ud800") in a batch with good requests: 400, goods unchanged
    nested         JSON nested 100,000 deep in /v1 and 20,000 deep in /v2's data: 400
    long           20,000-character texts (one emoji repeated, random emoji, brackets) while
                   /health is polled: answered within the time limit, /health always under 1 s
    idle           many idle connections (2,000; --quick 200): the server closes them itself
                   (header deadline), then answers a good request
    slow-headers   headers sent a byte a second: closed
    slow-body      a body that stops halfway: 408
    disconnects    clients that leave before their answer: the server answers the next good
                   request (and, when started here, logs no traceback)
    origin         foreign Host: 400; foreign Origin with a text/plain POST: 403; own origin: 200
    burst          1,000 bad requests (--quick 100) mixed with good ones, 16 at a time: 0 5xx,
                   goods unchanged, resident memory grown by under 100 MB (when started here)
    sigterm        (when started here) SIGTERM with long requests in flight: each answered 200 or
                   503, none 500 or cut, and the server exits within the grace period

Everything is bounded (counts and timeouts) and talks to 127.0.0.1 only. A command, not a test
(it runs for about a minute); tests/serve/test_faults.py runs two probes on a tiny server.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable
from urllib.parse import urlencode

GOOD = ["She go to scool every day.", "i has a cat.", "Fine as it is.", "We was late yesterday."]
ROOT = Path(__file__).resolve().parents[1]


class Target:
    def __init__(self, port: int, proc: subprocess.Popen | None = None, log: Path | None = None,
                 grace: float | None = None):
        self.port, self.proc, self.log, self.grace = port, proc, log, grace
        self.idle: dict[str, dict] = {}

    def request(self, method: str, path: str, body: bytes | str = b"", headers: dict | None = None,
                timeout: float = 120) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body.encode() if isinstance(body, str) else body,
                         {"Host": f"localhost:{self.port}", **(headers or {})})
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def correct(self, text: str) -> tuple[int, dict | None]:
        status, raw = self.request("POST", "/v1/correct", json.dumps({"texts": [text]}),
                                   {"Content-Type": "application/json"})
        return status, json.loads(raw) if status == 200 else None

    def good_holds(self, text: str) -> bool:
        status, answer = self.correct(text)
        return status == 200 and answer == self.idle[text]

    def health(self) -> dict:
        status, raw = self.request("GET", "/health", timeout=30)
        return json.loads(raw) if status == 200 else {}

    def rss_mb(self) -> float | None:
        if self.proc is None:
            return None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return None


def raw_socket(port: int, timeout: float = 30) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return s


def closed_within(s: socket.socket, seconds: float) -> bool:
    """True once the server closes ``s`` (EOF or reset) within ``seconds``; reads any answer."""
    s.settimeout(seconds)
    try:
        while s.recv(65536):
            pass
        return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def probe_surrogate(t: Target, quick: bool) -> tuple[bool, str]:
    bad = '{"texts": ["ok", "\\ud800"]}'
    with ThreadPoolExecutor(8) as pool:
        goods = [pool.submit(t.good_holds, g) for g in GOOD * 2]
        bads = [pool.submit(t.request, "POST", "/v1/correct", bad, {"Content-Type": "application/json"})
                for _ in range(4)]
        v2 = pool.submit(t.request, "POST", "/v2/check",  # JSON's escape: a lone surrogate in data
                         urlencode({"language": "en-US", "data": '{"annotation": [{"text": "a\\ud800"}]}'}))
    statuses = [b.result()[0] for b in bads] + [v2.result()[0]]
    held = all(g.result() for g in goods) and all(s == 400 for s in statuses)
    return held, f"bad answered {statuses}; {sum(g.result() for g in goods)}/{len(goods)} good unchanged"


def probe_nested(t: Target, quick: bool) -> tuple[bool, str]:
    deep = "[" * 100_000 + "]" * 100_000
    a = t.request("POST", "/v1/correct", deep, {"Content-Type": "application/json"})[0]
    data = '{"annotation": ' + "[" * 20_000 + "]" * 20_000 + "}"  # percent-encoded: within the size limit
    b = t.request("POST", "/v2/check", urlencode({"language": "en-US", "data": data}))[0]
    return (a, b) == (400, 400) and t.good_holds(GOOD[0]), f"/v1 {a}, /v2 data {b}"


def probe_long(t: Target, quick: bool) -> tuple[bool, str]:
    rng = random.Random(0)
    emoji = [chr(c) for c in range(0x1F600, 0x1F650)]
    texts = {"one emoji": "😀" * 20_000, "random emoji": "".join(rng.choice(emoji) for _ in range(20_000)),
             "brackets": "(" * 10_000 + ")" * 10_000}
    if quick:
        texts = {"one emoji": texts["one emoji"]}
    worst, stop = [0.0], threading.Event()

    def poll():
        while not stop.is_set():
            t0 = time.monotonic()
            t.request("GET", "/health", timeout=30)
            worst[0] = max(worst[0], time.monotonic() - t0)
            time.sleep(0.1)

    poller = threading.Thread(target=poll)
    poller.start()
    t0 = time.monotonic()
    try:
        with ThreadPoolExecutor(4) as pool:
            answers = {k: pool.submit(t.request, "POST", "/v2/check", urlencode({"language": "en-US", "text": v}))
                       for k, v in texts.items()}
            answers = {k: a.result() for k, a in answers.items()}
    finally:
        stop.set()
        poller.join()
    took = time.monotonic() - t0
    statuses = {k: s for k, (s, _) in answers.items()}
    held = all(s == 200 for s in statuses.values()) and worst[0] < 1.0 and took < 30
    return held, f"{statuses} in {took:.1f} s; slowest /health {worst[0] * 1000:.0f} ms"


def probe_idle(t: Target, quick: bool) -> tuple[bool, str]:
    n = 200 if quick else 2000
    deadline = t.health().get("header_timeout", 10)
    socks = []
    try:
        for _ in range(n):
            socks.append(raw_socket(t.port))
        start = time.monotonic()
        closed = sum(closed_within(s, max(0.1, deadline + 3 - (time.monotonic() - start))) for s in socks)
    finally:
        for s in socks:
            s.close()
    ok = t.good_holds(GOOD[1])
    detail = f"{closed}/{n} idle connections closed by the server; good request {'held' if ok else 'broken'}"
    return closed == n and ok, detail


def probe_slow_headers(t: Target, quick: bool) -> tuple[bool, str]:
    deadline = t.health().get("header_timeout", 10)
    s = raw_socket(t.port)
    start = time.monotonic()
    closed = False
    try:
        for ch in b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"a" * 100:
            if time.monotonic() - start > deadline + 3:
                break
            s.send(bytes([ch]))
            time.sleep(1.0)
    except (BrokenPipeError, ConnectionResetError):
        closed = True
    closed = closed or closed_within(s, 1)
    s.close()
    return closed, f"closed after {time.monotonic() - start:.1f} s (header deadline {deadline} s)"


def probe_slow_body(t: Target, quick: bool) -> tuple[bool, str]:
    deadline = t.health().get("body_timeout", 10)
    s = raw_socket(t.port, timeout=deadline + 5)
    s.sendall(f"POST /v1/correct HTTP/1.1\r\nHost: localhost:{t.port}\r\nContent-Type: application/json\r\n"
              f"Content-Length: 100\r\n\r\n{{\"texts\": [".encode())
    start = time.monotonic()
    try:
        answer = s.recv(65536)
    except socket.timeout:
        answer = b""
    s.close()
    status = answer.split(b" ", 2)[1].decode() if answer.startswith(b"HTTP/1.1 ") else "none"
    return status == "408", f"answered {status} after {time.monotonic() - start:.1f} s (body deadline {deadline} s)"


def probe_disconnects(t: Target, quick: bool) -> tuple[bool, str]:
    before = t.log.read_text(errors="replace").count("Traceback") if t.log else 0
    for i in range(10 if quick else 50):
        s = raw_socket(t.port)
        body = json.dumps({"texts": [GOOD[i % len(GOOD)] + " " * i]}).encode()
        s.sendall(f"POST /v1/correct HTTP/1.1\r\nHost: localhost:{t.port}\r\nContent-Type: application/json\r\n"
                  f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:len(body) // 2 if i % 2 else len(body)])
        s.close()
    time.sleep(0.5)
    ok = t.good_holds(GOOD[2])
    tracebacks = (t.log.read_text(errors="replace").count("Traceback") - before) if t.log else 0
    return ok and tracebacks == 0, f"good request {'held' if ok else 'broken'}; tracebacks logged: " \
                                   f"{tracebacks if t.log else 'not known (server not started here)'}"


def probe_origin(t: Target, quick: bool) -> tuple[bool, str]:
    host = t.request("GET", "/health", headers={"Host": "evil.example"})[0]
    form = "language=en-US&text=i like scool."
    foreign = t.request("POST", "/v2/check", form, {"Content-Type": "text/plain", "Origin": "https://evil.example"})[0]
    own = t.request("POST", "/v2/check", form, {"Content-Type": "application/x-www-form-urlencoded",
                                               "Origin": f"http://localhost:{t.port}"})[0]
    held = (host, foreign, own) == (400, 403, 200)
    return held, f"foreign Host {host}, foreign Origin {foreign}, own origin {own}"


def probe_burst(t: Target, quick: bool) -> tuple[bool, str]:
    n = 100 if quick else 1000
    rss0 = t.rss_mb()
    bad: list[Callable[[], tuple[int, bytes]]] = [
        lambda: t.request("POST", "/v1/correct", "{not json", {"Content-Type": "application/json"}),
        lambda: t.request("POST", "/v1/correct", '{"texts": "oops"}', {"Content-Type": "application/json"}),
        lambda: t.request("POST", "/v1/correct", '{"texts": ["\\udfff"]}', {"Content-Type": "application/json"}),
        lambda: t.request("POST", "/v1/correct", b'{"texts": ["caf\xe9"]}', {"Content-Type": "application/json"}),
        lambda: t.request("POST", "/v1/correct", "[" * 5000, {"Content-Type": "application/json"}),
        lambda: t.request("POST", "/v2/check", "language=xx&text=hi"),
        lambda: t.request("POST", "/v2/check", "language=en-US&data={bad"),
        lambda: t.request("POST", "/v2/check", "language=en-US&text=" + "x" * 400_000),
    ]
    jobs = [("bad", bad[i % len(bad)]) for i in range(n)]
    jobs += [("good", (lambda g=g: g)) for g in GOOD * (n // 40 or 1)]
    random.Random(1).shuffle(jobs)

    def run(job):
        kind, f = job
        if kind == "good":
            return kind, t.good_holds(f())
        return kind, f()[0]

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(run, jobs))
    five = sum(1 for k, r in results if k == "bad" and r >= 500)
    goods = [r for k, r in results if k == "good"]
    rss1 = t.rss_mb()
    grown = None if rss0 is None else rss1 - rss0
    held = five == 0 and all(goods) and (grown is None or grown < 100)
    memory = "not known (server not started here)" if grown is None else f"{grown:+.0f} MB"
    return held, f"{n} bad: {five} answered 5xx; {sum(goods)}/{len(goods)} good unchanged; resident memory {memory}"


def probe_sigterm(t: Target, quick: bool) -> tuple[bool, str]:
    if t.proc is None:
        return True, "skipped: the server was not started here"
    text = "She go to scool every day. " * 700  # about 19,000 characters of sentences: real work
    answers: list = []

    def ask():
        try:
            answers.append(t.request("POST", "/v1/correct", json.dumps({"texts": [text]}),
                                     {"Content-Type": "application/json"}, timeout=120)[0])
        except (OSError, http.client.HTTPException) as e:
            answers.append(type(e).__name__)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for th in threads:
        th.start()
    time.sleep(1.0)
    start = time.monotonic()
    t.proc.send_signal(signal.SIGTERM)
    try:
        t.proc.wait(t.grace + 10)
    except subprocess.TimeoutExpired:
        t.proc.kill()
    took = time.monotonic() - start
    for th in threads:
        th.join()
    held = all(a in (200, 503) for a in answers) and took <= t.grace + 3
    return held, f"answers {answers}; exited {took:.1f} s after SIGTERM (grace {t.grace} s)"


PROBES = {"surrogate": probe_surrogate, "nested": probe_nested, "long": probe_long, "idle": probe_idle,
          "slow-headers": probe_slow_headers, "slow-body": probe_slow_body, "disconnects": probe_disconnects,
          "origin": probe_origin, "burst": probe_burst, "sigterm": probe_sigterm}


def run(t: Target, names: list[str], quick: bool, out=sys.stdout) -> dict[str, bool]:
    """Runs the probes ``names`` against ``t``; prints one line each; {name: held}."""
    t.idle = {g: t.correct(g)[1] for g in GOOD}  # what an idle server answers
    results = {}
    for name in names:
        try:
            held, detail = PROBES[name](t, quick)
        except Exception as e:  # a probe that crashes is a broken probe, not a crashed command
            held, detail = False, f"{type(e).__name__}: {e}"
        results[name] = held
        print(f"{name:13s} {'held' if held else 'broken'}  {detail}", file=out, flush=True)
    return results


def start(model: str, log: Path, grace: float, extra: list[str]) -> tuple[subprocess.Popen, int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "editspec", "serve", "--model", model, "--port", str(port),
           "--host", "127.0.0.1", "--graceful-timeout", str(grace), "--log-level", "info", *extra]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT)
    t = Target(port)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"editspec serve exited {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            if t.request("GET", "/health", timeout=2)[0] == 200:
                return proc, port
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("editspec serve did not answer in 300 s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=None, help="probe the server on 127.0.0.1:PORT")
    ap.add_argument("--model", default=None, help="start editspec serve --model MODEL here instead")
    ap.add_argument("--serve-arg", action="append", default=[], metavar="ARG",
                    help="extra argument for the server started here (repeatable: --serve-arg=--device "
                         "--serve-arg=cpu)")
    ap.add_argument("--grace", type=float, default=5.0, help="--graceful-timeout of the server started here")
    ap.add_argument("--quick", action="store_true", help="fewer connections and requests (about 20 s)")
    ap.add_argument("--probe", action="append", choices=sorted(PROBES), default=None, help="only these probes")
    args = ap.parse_args(argv)
    if (args.port is None) == (args.model is None):
        ap.error("give --port (a running server) or --model (start one here)")
    names = args.probe or list(PROBES)
    if args.model is None:
        results = run(Target(args.port), [n for n in names if n != "sigterm"], args.quick)
    else:
        log = Path(os.environ.get("TMPDIR", "/tmp")) / f"editspec-faults-{os.getpid()}.log"
        proc, port = start(args.model, log, args.grace, ["--header-timeout", "2", "--body-timeout", "2",
                                                        *args.serve_arg])
        try:
            results = run(Target(port, proc, log, args.grace), names, args.quick)
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(args.grace + 10)
                except subprocess.TimeoutExpired:
                    proc.kill()
    print(f"{sum(results.values())}/{len(results)} held")
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
