"""Fixtures of the serve tests: tiny models (tests.helpers.tiny_bundle), a Corrector whose edits
are real (the identity EdiT5 with the spelling step: "scool" -> "school", "i" -> "I"), the app on
Starlette's TestClient, and a real ``editspec serve`` process on a free loopback port."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.helpers import tiny_bundle

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def serve_models(tmp_path_factory, tokenizer):
    return tiny_bundle(tmp_path_factory.mktemp("serve-models"), tokenizer)


@pytest.fixture(scope="session")
def corrector(serve_models):
    from editspec.corrector import Corrector

    return Corrector.from_pretrained(serve_models / "identity", device="cpu", spelling=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(model: Path, *extra: str, timeout: float = 240, port: int | None = None):
    """``editspec serve`` in a child process; returns (process, base URL) once /health answers."""
    port = port or free_port()
    cmd = [sys.executable, "-c", "import sys; from editspec.cli import main; sys.exit(main())", "serve",
           "--model", str(model), "--spelling", "--device", "cpu", "--threads", "1", "--port", str(port),
           "--log-level", "warning", *extra]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=2) as client:  # one client: httpx.get builds an SSL context a call (~50 ms)
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"editspec serve exited {proc.returncode}: {proc.stdout.read()}")
            try:
                if client.get(url + "/health").json()["status"] == "ready":
                    return proc, url
            except httpx.HTTPError:
                time.sleep(0.3)
    proc.kill()
    raise AssertionError(f"editspec serve did not answer in {timeout} s")


def stop_server(proc) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


@pytest.fixture(scope="module")
def server(serve_models):
    proc, url = start_server(serve_models / "identity")
    yield url
    stop_server(proc)


@contextlib.contextmanager
def serve_in_thread(app, header_timeout: float = 10.0, **config):
    """``app`` on uvicorn as ``editspec serve`` runs it (the header deadline, serve/server.py), in a
    thread of this process on a free loopback port; yields the port."""
    import uvicorn

    from editspec.serve.server import Server, with_header_timeout

    port = free_port()
    server = Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                   http=with_header_timeout(header_timeout), **config), on_exit=lambda: None)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(30)
