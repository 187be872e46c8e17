"""The app on Starlette's TestClient: /v1, /v2, /health, the page, and every kind of bad input
(editspec/serve/app.py, languagetool.py)."""

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from starlette.testclient import TestClient

from editspec.serve.app import Limits, create_app
from editspec.post import error_types


@pytest.fixture(scope="module")
def client(corrector):
    app = create_app(corrector.correct_detailed, Limits(max_chars=500))
    with TestClient(app, base_url="http://localhost:8081") as c:
        yield c


def test_v1_correct_matches_corrector_with_types(client, corrector):
    texts = ["She go to scool every dayz.", "", "i recieve the leter yesterday", "Fine as it is."]
    r = client.post("/v1/correct", json={"texts": texts})
    assert r.status_code == 200
    got = r.json()["corrections"]
    want = corrector.correct_detailed(texts)
    assert [g["output"] for g in got] == [w.output for w in want]
    for g, w in zip(got, want):
        assert [(e["start"], e["end"], e["original"], e["correction"]) for e in g["edits"]] == \
            [(e.start, e.end, e.original, e.correction) for e in w.edits]
    first = got[0]["edits"][0]
    assert (first["original"], first["correction"], first["type"]) == ("scool", "school", "R:SPELL")
    assert first["rule"] == "EDITSPEC_R_SPELL" and first["message"] == "Possible spelling mistake"
    assert got[2]["edits"][0]["type"] == "R:ORTH"


def test_concurrent_requests_batch_and_equal_corrector(client, corrector):
    texts = [f"i saw {w} yesterday." for w in ("teh", "a dogg", "the citty", "scool", "frend", "bookk")] * 4
    batches_before = client.app.state.batcher.batches
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda t: client.post("/v1/correct", json={"texts": [t]}).json(), texts))
    for text, answer in zip(texts, answers):
        [want] = corrector.correct_detailed([text])
        assert answer["corrections"][0]["output"] == want.output
    # 24 requests, fewer batches: some were corrected together
    assert client.app.state.batcher.batches - batches_before < len(texts)


def test_v2_check_matches_and_utf16_offsets(client):
    text = "😀😀 i like scool."
    r = client.post("/v2/check", data={"language": "en-US", "text": text, "unknownParam": "x"})
    assert r.status_code == 200
    body = r.json()
    assert body["language"]["code"] == "en-US"
    m = {x["replacements"][0]["value"]: x for x in body["matches"]}
    units = text.encode("utf-16-le")
    for value, original in (("I", "i"), ("school", "scool")):
        x = m[value]
        # offsets count UTF-16 units: two emoji are four
        assert units[2 * x["offset"]:2 * (x["offset"] + x["length"])].decode("utf-16-le") == original
        context, at = x["context"]["text"].encode("utf-16-le"), 2 * x["context"]["offset"]
        assert context[at:at + 2 * x["context"]["length"]].decode("utf-16-le") == original
        assert x["sentence"] == text
        assert set(x) >= {"message", "shortMessage", "replacements", "offset", "length", "context",
                          "sentence", "rule"}
    assert m["school"]["rule"]["issueType"] == "misspelling"
    assert m["school"]["rule"]["category"] == {"id": "TYPOS", "name": "Possible Typo"}
    assert m["I"]["rule"]["issueType"] == "typographical"


def test_v2_enabled_disabled_rules(client):
    text = "i like scool."
    def rules(**params):
        r = client.post("/v2/check", data={"language": "en-US", "text": text, **params})
        return sorted(x["rule"]["id"] for x in r.json()["matches"])
    assert rules() == ["EDITSPEC_R_ORTH", "EDITSPEC_R_SPELL"]
    assert rules(disabledRules="EDITSPEC_R_SPELL,OTHER_RULE") == ["EDITSPEC_R_ORTH"]
    assert rules(enabledRules="EDITSPEC_R_SPELL", enabledOnly="true") == ["EDITSPEC_R_SPELL"]
    assert rules(disabledCategories="TYPOS") == ["EDITSPEC_R_ORTH"]
    # a GET with query parameters works as LanguageTool's does
    r = client.get("/v2/check", params={"language": "en-US", "text": text})
    assert len(r.json()["matches"]) == 2


def test_v2_data_annotation_offsets_map_back(client):
    annotation = [{"text": "Hello "}, {"markup": "<b>"}, {"text": "scool"}, {"markup": "</b>"},
                  {"markup": "<p>", "interpretAs": "\n\n"}, {"text": "i like it."}]
    document = "".join(p.get("text", p.get("markup")) for p in annotation)
    r = client.post("/v2/check", data={"language": "en-US", "data": json.dumps({"annotation": annotation})})
    assert r.status_code == 200
    found = {x["replacements"][0]["value"]: document[x["offset"]:x["offset"] + x["length"]]
             for x in r.json()["matches"]}
    assert found == {"school": "scool", "I": "i"}


def test_v2_languages_and_auto(client):
    langs = client.get("/v2/languages").json()
    assert {"name": "English (US)", "code": "en", "longCode": "en-US"} in langs
    assert client.post("/v2/check", data={"language": "auto", "text": "Fine."}).status_code == 200


def test_health_and_page(client):
    assert client.get("/health").json()["status"] == "ready"
    page = client.get("/")
    assert page.status_code == 200 and "/v1/correct" in page.text and "<textarea" in page.text


@pytest.mark.parametrize("path,kwargs,status,says", [
    ("/v1/correct", {"content": b"{not json"}, 400, "not JSON"),
    ("/v1/correct", {"json": {"text": "x"}}, 400, "missing field"),
    ("/v1/correct", {"json": {"texts": [1, 2]}}, 400, "list of strings"),
    ("/v1/correct", {"content": b'{"texts": ["caf\xe9"]}'}, 400, "not UTF-8"),
    ("/v1/correct", {"json": {"texts": ["x" * 501]}}, 413, "too long"),
    ("/v1/correct", {"content": b"x" * 200_000}, 413, "bytes"),
    ("/v2/check", {"data": {"text": "Fine."}}, 400, "language"),
    ("/v2/check", {"data": {"language": "xx-YY", "text": "Fine."}}, 400, "not a language code"),
    ("/v2/check", {"data": {"language": "en-US"}}, 400, "'text' or 'data'"),
    ("/v2/check", {"data": {"language": "en-US", "data": "{bad"}}, 400, "annotation"),
    ("/v2/check", {"data": {"language": "en-US", "text": "x" * 501}}, 413, "too long"),
    ("/v2/check", {"content": b"language=en-US&text=caf%E9",
                   "headers": {"content-type": "application/x-www-form-urlencoded"}}, 400, "not UTF-8"),
])
def test_bad_input_is_one_json_error(client, path, kwargs, status, says):
    r = client.post(path, **kwargs)
    assert r.status_code == status
    assert says in r.json()["error"]


def test_no_request_reads_a_file(client, corrector):
    # a path is text to correct like any other; parameters that name files are ignored
    r = client.post("/v2/check", data={"language": "en-US", "text": "/etc/passwd", "model": "/etc",
                                       "data_file": "/etc/passwd"})
    assert r.status_code == 200
    assert "root:" not in r.text
    r = client.post("/v1/correct", json={"texts": ["/etc/hostname"], "model": "/etc"})
    assert r.json()["corrections"][0]["output"] == corrector.correct(["/etc/hostname"])[0]


def test_cors_off_unless_asked(corrector):
    origin = {"Origin": "http://example.org"}
    with TestClient(create_app(corrector.correct_detailed), base_url="http://localhost") as c:
        assert "access-control-allow-origin" not in c.get("/health", headers=origin).headers
    with TestClient(create_app(corrector.correct_detailed, Limits(allow_origins=["http://example.org"])),
                    base_url="http://localhost") as c:
        assert c.get("/health", headers=origin).headers["access-control-allow-origin"] == "http://example.org"
        assert "access-control-allow-origin" not in c.get("/health", headers={"Origin": "http://evil.test"}).headers


def test_messages_come_from_error_types(client):
    r = client.post("/v1/correct", json={"texts": ["i like it."]})
    [edit] = r.json()["corrections"][0]["edits"]
    assert edit["message"] == error_types.message(edit["type"])


@pytest.fixture(scope="module")
def picky_client():
    """A server offering both levels, on the shipped models (their picky settings)."""
    from editspec.corrector import Corrector

    corrector = Corrector.from_pretrained(device="cpu", batch_size=4)
    app = create_app(corrector.correct_detailed, levels=("default", "picky"))
    with TestClient(app, base_url="http://localhost:8081") as c:
        yield c, corrector


def test_each_edit_and_match_has_its_confidence(client, corrector):
    texts = ["She go to scool every dayz.", "i recieve the leter yesterday"]
    got = client.post("/v1/correct", json={"texts": texts}).json()["corrections"]
    want = corrector.correct_detailed(texts)
    for g, w in zip(got, want):
        assert [e["confidence"] for e in g["edits"]] == [e.confidence for e in w.edits]
        assert all(0 <= e["confidence"] <= 1 for e in g["edits"]) and g["edits"]
    matches = client.post("/v2/check", data={"language": "en-US", "text": texts[0]}).json()["matches"]
    by_value = {m["replacements"][0]["value"]: m["confidence"] for m in matches}
    assert by_value["school"] == next(e.confidence for e in want[0].edits if e.correction == "school")
    assert [m["offset"] for m in matches] == sorted(m["offset"] for m in matches)  # document order


def test_levels_on_v1_and_v2(picky_client):
    client, corrector = picky_client
    from editspec.modeling import loading
    sample = loading.DEFAULT_MODEL.parent.parent / "samples" / "learner.txt"
    texts = [t for t in sample.read_text(encoding="utf-8").splitlines() if t.strip()][:12]
    for level in ("default", "picky"):
        got = client.post("/v1/correct", json={"texts": texts, "level": level}).json()["corrections"]
        assert [g["output"] for g in got] == corrector.correct(texts, level=level)
        r = client.post("/v2/check", data={"language": "en-US", "text": texts[0], "level": level})
        assert r.status_code == 200
        assert len(r.json()["matches"]) == len(corrector.correct_detailed(texts[:1], level=level)[0].edits)
    assert corrector.correct(texts, level="picky") != corrector.correct(texts)  # the level does something
    assert client.get("/health").json()["levels"] == ["default", "picky"]
    for path, kwargs in (("/v1/correct", {"json": {"texts": ["x"], "level": "loud"}}),
                         ("/v2/check", {"data": {"language": "en-US", "text": "x", "level": "loud"}}),
                         ("/v1/correct", {"json": {"texts": ["x"], "level": 3}})):
        r = client.post(path, **kwargs)
        assert r.status_code == 400 and "unknown level" in r.json()["error"]


def test_picky_where_the_models_have_none(client):
    # /v1 says so; /v2 answers at the default level, as LanguageTool answers clients that always send picky
    r = client.post("/v1/correct", json={"texts": ["x"], "level": "picky"})
    assert r.status_code == 400 and "level picky is not available" in r.json()["error"]
    r = client.post("/v2/check", data={"language": "en-US", "text": "i like scool.", "level": "picky"})
    assert r.status_code == 200 and r.json()["matches"]
