"""Faults of issue #52, each shown against what a good request gets from an idle server: one
text failing others, lone surrogates, deep JSON, 20,000-character texts, foreign Hosts and
Origins, clients that leave, and two probes of eval/faults.py on a tiny uvicorn server."""

import json
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from starlette.testclient import TestClient

from editspec.serve import bounds
from editspec.serve.app import Limits, create_app
from tests.serve.conftest import serve_in_thread

LOCAL = "http://localhost:8081"


def post_all(client, bodies: list[bytes]) -> list:
    """Posts ``bodies`` to /v1/correct at once (so that they share a batch)."""
    with ThreadPoolExecutor(len(bodies)) as pool:
        return list(pool.map(lambda b: client.post("/v1/correct", content=b,
                                                   headers={"Content-Type": "application/json"}), bodies))


def good(text: str) -> bytes:
    return json.dumps({"texts": [text]}).encode()


def test_a_failing_text_fails_only_its_own_request(corrector):
    def correct_detailed(texts):
        if any("BOOM" in t for t in texts):
            raise ValueError("the model choked")
        return corrector.correct_detailed(texts)

    app = create_app(correct_detailed, Limits(max_wait=0.3))  # long enough for the three to share a batch
    with TestClient(app, base_url=LOCAL) as c:
        idle = c.post("/v1/correct", content=good("i like scool.")).json()
        batches = app.state.batcher.batches
        a, bad, b = post_all(c, [good("i like scool."), good("BOOM"), good("i like scool.")])
        assert bad.status_code == 500 and "ValueError" in bad.json()["error"]
        assert a.status_code == b.status_code == 200
        assert a.json() == b.json() == idle
        assert app.state.batcher.batches - batches == 2  # the shared batch failed; each good ran again


def test_lone_surrogate_is_400_and_fails_no_other_request(corrector):
    with TestClient(create_app(corrector.correct_detailed, Limits(max_wait=0.3)), base_url=LOCAL) as c:
        idle = c.post("/v1/correct", content=good("i like scool.")).json()
        a, bad, b = post_all(c, [good("i like scool."), b'{"texts": ["ok", "\\ud800"]}', good("i like scool.")])
        assert bad.status_code == 400 and "lone surrogate (U+D800" in bad.json()["error"]
        assert a.json() == b.json() == idle
        data = json.dumps({"annotation": [{"text": "fine "}, {"markup": "<\ud800>"}]})
        r = c.post("/v2/check", data={"language": "en-US", "data": data})
        assert r.status_code == 400 and "lone surrogate" in r.json()["error"]


@pytest.fixture(scope="module")
def client(corrector):
    with TestClient(create_app(corrector.correct_detailed), base_url=LOCAL) as c:
        yield c


def test_deep_json_is_400(client):
    r = client.post("/v1/correct", content=b"[" * 100_000 + b"]" * 100_000)
    assert r.status_code == 400 and "nested too deep" in r.json()["error"]
    deep = '{"annotation": ' + "[" * 20_000 + "]" * 20_000 + "}"
    r = client.post("/v2/check", data={"language": "en-US", "data": deep})
    assert r.status_code == 400 and "nested too deep" in r.json()["error"]


def test_texts_must_be_a_list(client):
    r = client.post("/v1/correct", json={"texts": "oops"})
    assert r.status_code == 400 and r.json()["error"] == "'texts' must be a list of strings"


@pytest.mark.parametrize("run", ["😀" * 20_000, "(" * 10_000 + ")" * 10_000])
def test_long_text_is_left_as_written_and_health_answers(client, run):
    # before: 33-60 s of spaCy's tokenizer (holding the GIL), /health stalled throughout
    text = f"i like scool. {run[:19_900]} i go home."
    answer, start = {}, time.monotonic()

    def ask():
        answer["r"] = client.post("/v2/check", data={"language": "en-US", "text": text})

    t = threading.Thread(target=ask)
    t.start()
    worst = 0.0
    while t.is_alive():
        t0 = time.monotonic()
        assert client.get("/health").status_code == 200
        worst = max(worst, time.monotonic() - t0)
        time.sleep(0.05)
    t.join()
    assert time.monotonic() - start < 10 and worst < 1.0
    r = answer["r"]
    assert r.status_code == 200
    units = text.encode("utf-16-le")
    found = sorted(units[2 * m["offset"]:2 * (m["offset"] + m["length"])].decode("utf-16-le")
                   for m in r.json()["matches"])
    assert found == ["i", "i", "scool"]  # the short sentences corrected, the run left alone


def test_pieces_cut_runs_and_long_sentences():
    text = "She go. " + "x" * 300 + " Fine. " + "Word " * 150 + "\nOk."
    plan = bounds.pieces(text, max_sentence_chars=1000)
    kept = [text[p.start:p.end] for p in plan if not p.correct]
    assert kept == ["x" * 300]
    plan = bounds.pieces(text, max_sentence_chars=100)
    kept = [text[p.start:p.end] for p in plan if not p.correct]
    assert kept == ["x" * 300, ("Word " * 150).strip()]
    assert "".join(text[p.start:p.end] for p in plan) == text
    assert bounds.pieces("She go home.", 1000) == [bounds.Piece(0, 12, True)]


def test_foreign_host_and_origin_refused_before_any_work(corrector):
    seen = []

    def correct_detailed(texts):
        seen.extend(texts)
        return corrector.correct_detailed(texts)

    form = "language=en-US&text=i like scool."
    with TestClient(create_app(correct_detailed), base_url=LOCAL) as c:
        # DNS rebinding: a page whose own name now points at 127.0.0.1
        assert c.get("/health", headers={"Host": "evil.example:8081"}).status_code == 400
        # a cross-origin text/plain POST: a "simple" request, sent by any page without asking
        r = c.post("/v2/check", content=form, headers={"Content-Type": "text/plain",
                                                       "Origin": "https://evil.example"})
        assert r.status_code == 403 and "--allow-origin" in r.json()["error"]
        assert seen == []
        # the bundled page: same origin; clients: no Origin header
        assert c.post("/v2/check", content=form, headers={"Origin": LOCAL}).status_code == 200
        assert c.post("/v2/check", content=form).status_code == 200
        for host in ("127.0.0.1:8081", "[::1]:8081", "localhost"):
            assert c.get("/health", headers={"Host": host}).status_code == 200
    with TestClient(create_app(correct_detailed, Limits(allow_hosts=["*"], allow_origins=["https://ok.example"])),
                    base_url="http://my.lan:8081") as c:
        assert c.get("/health").status_code == 200
        r = c.post("/v2/check", content=form, headers={"Origin": "https://ok.example"})
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "https://ok.example"


def test_work_of_a_client_that_left_is_dropped(corrector, caplog):
    seen = []

    def correct_detailed(texts):
        seen.extend(texts)
        return corrector.correct_detailed(texts)

    app = create_app(correct_detailed, Limits(max_wait=1.0))  # the request waits for its batch a second
    with serve_in_thread(app) as port:
        body = good("a text nobody waits for.")
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(f"POST /v1/correct HTTP/1.1\r\nHost: localhost:{port}\r\nContent-Type: application/json\r\n"
                  f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        time.sleep(0.3)
        s.close()
        deadline = time.monotonic() + 10
        while app.state.batcher.dropped == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
    assert app.state.batcher.dropped == 1
    assert "a text nobody waits for." not in seen
    assert "Traceback" not in caplog.text


def test_fault_probes_on_a_tiny_server(corrector):
    from eval import faults

    app = create_app(corrector.correct_detailed, Limits(body_timeout=1.0))
    with serve_in_thread(app, header_timeout=1.0, limit_concurrency=64) as port:
        target = faults.Target(port)
        results = faults.run(target, ["surrogate", "slow-body", "origin", "idle"], quick=True)
    assert results == {"surrogate": True, "slow-body": True, "origin": True, "idle": True}


def test_serve_options_and_defaults():
    from editspec.cli import build_parser

    args = build_parser().parse_args(["serve", "--cors-origin", "https://a.example", "--allow-host", "my.lan"])
    assert args.allow_origin == ["https://a.example"] and args.allow_host == ["my.lan"]
    assert (args.limit_concurrency, args.backlog, args.timeout_keep_alive, args.header_timeout,
            args.body_timeout, args.graceful_timeout, args.max_sentence_chars) == \
        (256, 256, 5.0, 10.0, 10.0, 30.0, 1000)
