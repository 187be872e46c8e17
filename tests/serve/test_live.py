"""A real ``editspec serve`` on 127.0.0.1: the LanguageTool client ``language_tool_python``
against it, the page in headless chromium (DevTools protocol), and SIGTERM with a request in flight."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import httpx
import language_tool_python
import language_tool_python.server
import pytest
import websocket

from tests.serve.conftest import free_port, start_server, stop_server


@pytest.fixture
def no_download(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("language_tool_python tried to download or start LanguageTool")
    monkeypatch.setattr(language_tool_python.server.LocalLanguageTool, "download", refuse)
    monkeypatch.setattr(language_tool_python.server.LanguageTool, "_start_local_server", refuse)


def test_language_tool_python_check_and_correct(server, corrector, no_download):
    tool = language_tool_python.LanguageTool("en-US", remote_server=server)
    try:
        text = "😀 i saw the scool yesterday."
        matches = tool.check(text)
        # the client maps UTF-16 offsets back to Python's: the match lands on the word
        assert sorted((m.rule_id, text[m.offset:m.offset + m.error_length], m.replacements[0])
                      for m in matches) == [("EDITSPEC_R_ORTH", "i", "I"), ("EDITSPEC_R_SPELL", "scool", "school")]
        assert {m.rule_issue_type for m in matches} == {"typographical", "misspelling"}
        assert tool.correct(text) == corrector.correct([text])[0]
        tool.disabled_rules.add("EDITSPEC_R_SPELL")
        assert [m.rule_id for m in tool.check(text)] == ["EDITSPEC_R_ORTH"]
    finally:
        tool.close()


def ask_in_the_background(url: str) -> tuple[threading.Thread, dict]:
    """A request that is queued (the server's long batching wait) when the test goes on, 1 s later."""
    answer: dict = {}

    def ask():
        answer["r"] = httpx.post(url + "/v1/correct", json={"texts": ["i go to scool."]}, timeout=60)

    t = threading.Thread(target=ask)
    t.start()
    time.sleep(1.0)
    return t, answer


def test_sigterm_finishes_the_request_in_flight(serve_models, corrector):
    # a long batching wait keeps the request queued while SIGTERM arrives
    proc, url = start_server(serve_models / "identity", "--batch-wait-ms", "3000")
    t, answer = ask_in_the_background(url)
    # uvicorn shuts down gracefully, then raises the signal again: the exit is by SIGTERM
    assert stop_server(proc) in (0, -signal.SIGTERM)
    t.join()
    assert answer["r"].status_code == 200
    assert answer["r"].json()["corrections"][0]["output"] == corrector.correct(["i go to scool."])[0]


def test_sigterm_answers_503_to_what_cannot_finish(serve_models):
    # the batching wait (10 s) outlasts the grace period (2 s): before, uvicorn cancelled the
    # request when the period ended, which answered 500
    proc, url = start_server(serve_models / "identity", "--batch-wait-ms", "10000", "--graceful-timeout", "2")
    t, answer = ask_in_the_background(url)
    start = time.monotonic()
    assert stop_server(proc) in (0, -signal.SIGTERM)
    took = time.monotonic() - start
    t.join()
    assert answer["r"].status_code == 503 and "shutting down" in answer["r"].json()["error"]
    assert took < 4  # drained within the grace period (and a little for the process to exit)


class Browser:
    """Headless chromium driven over the DevTools protocol (websocket-client)."""

    def __init__(self, exe: str, profile: Path):
        self.proc = subprocess.Popen([exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                      "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)  # its helpers (crashpad, renderers) stop with it
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not port_file.exists() or not port_file.read_text().strip():
            assert time.monotonic() < deadline, "chromium did not start"
            time.sleep(0.2)
        port = port_file.read_text().split()[0]
        pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json"))
        page = next(p for p in pages if p["type"] == "page")
        # no Origin header: chromium 111+ refuses a DevTools connection from an origin it was not told of
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=60, suppress_origin=True)
        self.next_id = 0

    def call(self, method: str, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                assert "error" not in msg, msg
                return msg["result"]

    def eval(self, expression: str):
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.eval(expression)
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {expression}")

    def close(self):
        self.ws.close()
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        self.proc.wait(30)


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium (.ci/run installs it)")
def test_page_in_headless_chromium(server, corrector):
    # chromium's helper processes may still flush the profile for a moment after the browser exits
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        browser = Browser(shutil.which("chromium"), Path(profile))
        try:
            browser.call("Page.navigate", url=server + "/")
            browser.wait_for("document.readyState === 'complete' && !!document.getElementById('input')")
            text = "😀 i like my scool."
            browser.eval(f"document.getElementById('input').value = {json.dumps(text)};"
                         "document.getElementById('input').dispatchEvent(new Event('input'));")
            # the suggestions are underlined, each with its message
            marks = json.loads(browser.wait_for(
                "document.querySelectorAll('#view .edit').length === 2 && JSON.stringify("
                "[...document.querySelectorAll('#view .edit')].map(e => [e.firstChild.textContent, e.title, "
                "e.classList.contains('unsure')]))"))
            want = corrector.correct_detailed([text])[0].edits
            assert [m[:2] for m in marks] == [
                ["i", f"Possible capitalisation or spacing error: I (confidence {round(100 * want[0].confidence)}%)"],
                ["scool", f"Possible spelling mistake: school (confidence {round(100 * want[1].confidence)}%)"]]
            assert [m[2] for m in marks] == [e.confidence < 0.5 for e in want]  # a fainter underline when unsure
            # this server's models have no picky level: the menu offers none; asked anyway, the page says why
            assert browser.wait_for("document.querySelector('#level option[value=picky]').disabled && 'off'") == "off"
            browser.eval("{ const l = document.getElementById('level'); l.options[1].disabled = false; l.value = 'picky';"
                         "l.dispatchEvent(new Event('change')); }")
            assert "level picky is not available" in browser.wait_for(
                "document.getElementById('status').textContent.startsWith('error') && "
                "document.getElementById('status').textContent")
            browser.eval("{ const l = document.getElementById('level'); l.value = 'default';"
                         "l.dispatchEvent(new Event('change')); }")
            browser.wait_for("document.getElementById('status').textContent === '2 suggestions'")
            assert browser.eval("[...document.getElementById('view').childNodes].map("
                                "n => n.nodeType === 3 ? n.textContent : n.firstChild.textContent).join('')") == text
            # a click on one applies it (after the emoji: code point offsets)
            browser.eval("document.querySelectorAll('#view .edit')[1].click()")
            assert browser.wait_for("document.getElementById('input').value !== "
                                    f"{json.dumps(text)} && document.getElementById('input').value") == \
                "😀 i like my school."
            browser.wait_for("document.querySelectorAll('#view .edit').length === 1")
            browser.eval("document.querySelector('#view .edit').click()")
            assert browser.wait_for("document.querySelectorAll('#view .edit').length === 0 && "
                                    "document.getElementById('input').value") == corrector.correct([text])[0]
        finally:
            browser.close()


def test_two_processes_share_one_port_with_reuse_port(serve_models, corrector):
    """``--reuse-port``: several servers on one port (the kernel spreads new connections between
    them); each answers as one server does, and either can stop while the other serves on."""
    port = free_port()
    first, url = start_server(serve_models / "identity", "--reuse-port", port=port)
    second, _ = start_server(serve_models / "identity", "--reuse-port", port=port)
    try:  # /health names the process that answered: new connections reach both
        seen, deadline = set(), time.monotonic() + 120
        while seen != {first.pid, second.pid} and time.monotonic() < deadline:
            seen.add(httpx.get(url + "/health", timeout=5).json()["pid"])
        assert seen == {first.pid, second.pid}
        want = corrector.correct(["i go to scool."])[0]
        answers = [httpx.post(url + "/v1/correct", json={"texts": ["i go to scool."]}, timeout=60) for _ in range(12)]
        assert all(r.status_code == 200 and r.json()["corrections"][0]["output"] == want for r in answers)
        assert stop_server(first) in (0, -signal.SIGTERM)
        r = httpx.post(url + "/v1/correct", json={"texts": ["i go to scool."]}, timeout=60)
        assert r.status_code == 200 and r.json()["corrections"][0]["output"] == want
    finally:
        stop_server(first)
        stop_server(second)

