"""Load test of ``editspec serve``: 1, 4 and 16 concurrent clients for N seconds each.

    python -m eval.load_test --seconds 60 --out reports/serve/load.json               # /v2/check, paragraphs
    python -m eval.load_test --processes 2 --threads 1 --out reports/serve/load-2p.json   # 2 processes, one port

    texts       paragraphs of ``--sentences-per-text`` (3) consecutive W&I dev sentences
    references  /v1: Corrector.correct_detailed([text]) of each text in this process (the same
                model options as the server); /v2: the server's own answer to each text, asked
                one at a time before the levels (an idle server's answers)
    server      ``editspec serve`` started here on a free loopback port (``--processes`` N: N servers
                sharing it with --reuse-port); timing starts once /health says ready
    level c     c threads, each with its own HTTP connection, post /v2/check (language=en-US, text)
                or /v1/correct {"texts": [text]} in a loop (texts in turn) for N seconds
    checks      every answer equals its reference; a non-200 is an error
    memory      the servers' peak resident memory (VmHWM, summed) after each level

Prints a Markdown table (requests/s, p50/p95/p99 latency, errors, mismatches, peak memory) and the
issue's goals: at 16 clients p95 <= 2 s, throughput at least 4x 1-client's.
"""

from __future__ import annotations

import argparse
import itertools
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np

from editspec.corrector import Corrector
from editspec.data.m2 import read_blocks, source_tokens
from editspec.data.tokenized import detokenize

WI_DEV = Path(__file__).resolve().parents[1].parent / "shared/data/wi_locness/ABCN.dev.gold.bea19.m2"


def sentences(path: Path, limit: int, per_text: int = 1) -> list[str]:
    """``limit`` texts of ``per_text`` consecutive sentences each."""
    out = [detokenize(" ".join(source_tokens(b))) for b in read_blocks(path)]
    out = [s for s in out if s.strip()][:limit * per_text]
    return [" ".join(out[i:i + per_text]) for i in range(0, len(out), per_text)][:limit]


def ask(http: httpx.Client, url: str, endpoint: str, text: str):
    """(status, the part of the answer compared with the reference)."""
    if endpoint == "v2":
        r = http.post(url + "/v2/check", data={"language": "en-US", "text": text})
        return r.status_code, (r.json()["matches"] if r.status_code == 200 else None)
    r = http.post(url + "/v1/correct", json={"texts": [text]})
    got = r.json()["corrections"][0] if r.status_code == 200 else None
    return r.status_code, got and (got["output"], [(e["start"], e["end"], e["correction"]) for e in got["edits"]])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def peak_memory_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start_server(args, port: int) -> subprocess.Popen:
    cmd = [sys.executable, "-c", "import sys; from editspec.cli import main; sys.exit(main())", "serve",
           "--port", str(port), "--log-level", "warning", "--device", args.device,
           "--max-batch", str(args.max_batch), "--batch-wait-ms", str(args.batch_wait_ms)]
    if args.processes > 1:
        cmd.append("--reuse-port")
    for flag, value in (("--model", args.model), ("--mode", args.mode), ("--threads", args.threads)):
        if value is not None:
            cmd += [flag, str(value)]
    proc = subprocess.Popen(cmd)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"editspec serve exited with {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).json()["status"] == "ready":
                return proc
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("editspec serve did not start in 600 s")


def level(url: str, clients: int, seconds: float, texts: list[str], want: dict, endpoint: str = "v1") -> dict:
    counter = itertools.count()
    latencies: list[float] = []
    errors = mismatches = 0
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def client():
        nonlocal errors, mismatches
        with httpx.Client(timeout=120) as http:
            while time.monotonic() < stop_at:
                text = texts[next(counter) % len(texts)]
                t0 = time.perf_counter()
                try:
                    status, got = ask(http, url, endpoint, text)
                    ok = status == 200
                except (httpx.HTTPError, ValueError, KeyError):
                    ok, got = False, None
                dt = time.perf_counter() - t0
                with lock:
                    latencies.append(dt)
                    if not ok:
                        errors += 1
                    elif got != want[text]:
                        mismatches += 1

    started = time.monotonic()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    lat = np.array(latencies) * 1000
    return {"clients": clients, "requests": len(latencies), "requests_per_s": len(latencies) / elapsed,
            "p50_ms": float(np.percentile(lat, 50)), "p95_ms": float(np.percentile(lat, 95)),
            "p99_ms": float(np.percentile(lat, 99)), "errors": errors, "mismatches": mismatches}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(WI_DEV), help="M2 file whose S lines (detokenized) are sent")
    p.add_argument("--limit", type=int, default=300, help="first N texts (each gets a reference)")
    p.add_argument("--sentences-per-text", type=int, default=3, help="consecutive sentences in a text")
    p.add_argument("--endpoint", choices=("v2", "v1"), default="v2", help="/v2/check (default) or /v1/correct")
    p.add_argument("--processes", type=int, default=1, help="servers sharing the port (--reuse-port)")
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    p.add_argument("--model", default=None)
    p.add_argument("--mode", default=None)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=None, help="torch threads of server and references")
    p.add_argument("--max-batch", type=int, default=32)
    p.add_argument("--batch-wait-ms", type=float, default=2.0)
    p.add_argument("--out", default=None, help="write the results here as JSON")
    args = p.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    texts = sentences(Path(args.data), args.limit, args.sentences_per_text)
    want = {}
    if args.endpoint == "v1":
        corrector = Corrector.from_pretrained(args.model, mode=args.mode, device=args.device)
        t0 = time.perf_counter()
        for text in texts:
            [c] = corrector.correct_detailed([text])
            want[text] = (c.output, [(e.start, e.end, e.correction) for e in c.edits])
        print(f"references: {len(texts)} texts, {time.perf_counter() - t0:.1f} s one at a time "
              f"({corrector.mode})", file=sys.stderr)
        del corrector

    port = free_port()
    procs = [start_server(args, port) for _ in range(args.processes)]
    url = f"http://127.0.0.1:{port}"
    results = []
    try:
        if args.endpoint == "v2":  # an idle server's answers, one at a time
            with httpx.Client(timeout=120) as http:
                for text in texts:
                    status, want[text] = ask(http, url, "v2", text)
                    if status != 200:
                        raise SystemExit(f"the idle server answered {status} to {text!r}")
        for clients in args.clients:
            r = level(url, clients, args.seconds, texts, want, args.endpoint)
            r["peak_memory_mb"] = sum(peak_memory_mb(proc.pid) for proc in procs)
            results.append(r)
            print(json.dumps(r), file=sys.stderr)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(60)

    print("| clients | requests/s | p50 ms | p95 ms | p99 ms | errors | mismatches | peak memory MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['clients']} | {r['requests_per_s']:.2f} | {r['p50_ms']:.0f} | {r['p95_ms']:.0f} | "
              f"{r['p99_ms']:.0f} | {r['errors']} | {r['mismatches']} | {r['peak_memory_mb']:.0f} |")
    one, top = results[0], results[-1]
    goals = {"p95_at_most_2s": top["p95_ms"] <= 2000,
             "throughput_at_least_4x": top["requests_per_s"] >= 4 * one["requests_per_s"]}
    print(f"goals at {top['clients']} clients: p95 {top['p95_ms']:.0f} ms <= 2000: {goals['p95_at_most_2s']}; "
          f"throughput {top['requests_per_s'] / one['requests_per_s']:.2f}x the 1-client figure (>= 4): "
          f"{goals['throughput_at_least_4x']}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"args": vars(args), "levels": results, "goals": goals}, indent=1) + "\n")


if __name__ == "__main__":
    main()
