"""Real LanguageTool clients, as they are: each test replays the request that client's source
builds (method, path, headers, body encoding, parameters) and checks the fields that client's
parser reads. (language_tool_python also runs for real in test_live.py.)"""

import json
import urllib.parse

import pytest
from starlette.testclient import TestClient

from editspec.serve.app import create_app

# LaTeX as LTeX hands it over: markup, with interpretAs where the markup stands for text
ANNOTATION = [{"text": "I like my "}, {"markup": "\\textbf{"}, {"text": "scool"}, {"markup": "}"},
              {"markup": "\n\n", "interpretAs": "\n\n"}, {"text": "i go there."}]
DOCUMENT = "".join(p.get("text", p.get("markup")) for p in ANNOTATION)
TEXT = "I like my scool. i go there."


@pytest.fixture(scope="module")
def client(corrector):
    with TestClient(create_app(corrector.correct_detailed), base_url="http://localhost:8081") as c:
        yield c


def found(matches: list[dict], document: str) -> dict[str, str]:
    """{replacement: the document's text at the match} (offsets in UTF-16 units; ASCII here)."""
    return {m["replacements"][0]["value"]: document[m["offset"]:m["offset"] + m["length"]] for m in matches}


def ltex_body(**extra: str) -> bytes:
    # URLEncoder.encode for keys and values, joined with & (application/x-www-form-urlencoded
    # encoding, spaces as "+"), in HashMap order
    entries = {"language": "en-US", "data": json.dumps({"annotation": ANNOTATION}), **extra}
    return urllib.parse.urlencode(entries).encode()


def assert_ltex_reads(r) -> None:
    # LanguageToolRuleMatch.fromLanguageTool: offset, length, message, replacements[].value,
    # rule.id, sentence (all required: Gson throws on a missing one)
    assert r.status_code == 200, r.text
    matches = r.json()["matches"]
    for m in matches:
        assert isinstance(m["offset"], int) and isinstance(m["length"], int)
        assert isinstance(m["message"], str) and isinstance(m["rule"]["id"], str)
        assert isinstance(m["sentence"], str) and all(isinstance(x["value"], str) for x in m["replacements"])
    assert found(matches, DOCUMENT) == {"school": "scool", "I": "i"}


def test_ltex_ls(client):
    # valentjn/ltex-ls src/main/kotlin/org/bsplines/ltexls/languagetool/LanguageToolHttpInterface.kt:
    # POST URL(URL(uri), "v2/check"), header Content-Type: application/json, but the body is a
    # form (language, data, and username, apiKey, level=picky, motherTongue, enabledRules when set)
    body = ltex_body(username="me@example.org", apiKey="k", level="picky", motherTongue="de-DE",
                     enabledRules="EN_QUOTES,EDITSPEC_R_SPELL")
    r = client.post("/v2/check", content=body, headers={"Content-Type": "application/json"})
    assert_ltex_reads(r)


def test_ltex_ls_plus(client):
    # ltex-plus/ltex-ls-plus
    # src/main/kotlin/org/bsplines/ltexls/languagetool/LanguageToolHttpInterface.kt:
    # the same request, to URI(uriString + "/v2/check"): "//v2/check" when the configured URI
    # ends with a slash, as LTeX's documentation writes it ("http://localhost:8081/")
    r = client.post("http://localhost:8081//v2/check", content=ltex_body(),
                    headers={"Content-Type": "application/json"})
    assert_ltex_reads(r)


def test_language_tool_python(client):
    # jxmorris12/language_tool_python language_tool_python/server.py: check() posts
    # urljoin(url, "check") with requests.post(data=params): a form body
    # (application/x-www-form-urlencoded); _create_params: language, text, and motherTongue,
    # disabledRules, enabledRules, enabledOnly, disabledCategories, enabledCategories,
    # preferredVariants, level=picky when set
    params = {"language": "en-US", "text": TEXT, "motherTongue": "fr", "disabledRules": "EN_A_VS_AN",
              "disabledCategories": "STYLE", "preferredVariants": "en-GB", "level": "picky"}
    r = client.post("/v2/check", data=params)  # TestClient is httpx: the same form encoding as requests
    assert r.status_code == 200, r.text
    # match.py Match.__init__: rule.id, rule.issueType, rule.category.id, context.offset,
    # context.text, replacements[].value, length, message, offset
    matches = r.json()["matches"]
    for m in matches:
        assert all(isinstance(v, str) for v in (m["rule"]["id"], m["rule"]["issueType"],
                                                m["rule"]["category"]["id"], m["context"]["text"], m["message"]))
        assert isinstance(m["context"]["offset"], int)
    assert found(matches, TEXT) == {"school": "scool", "I": "i"}
    # enabledOnly with enabledRules: only those rules
    r = client.post("/v2/check", data={"language": "en-US", "text": TEXT, "enabledRules": "EDITSPEC_R_SPELL",
                                       "enabledOnly": "true"})
    assert found(r.json()["matches"], TEXT) == {"school": "scool"}


def test_emacs_languagetool_el(client):
    # PillFall/languagetool.el languagetool-server.el: GET <url>:<port>/v2/languages to see the
    # server is up, then url-retrieve POST /v2/check with url-request-data =
    # (url-build-query-string ...) (percent-encoded, %20 for spaces) and no Content-Type header
    # (url.el adds none); parameters language ("auto" by default), motherTongue, apiKey,
    # username, disabledRules, text
    assert client.get("/v2/languages").status_code == 200
    body = "&".join(f"{k}={urllib.parse.quote(v, safe='')}" for k, v in (
        ("text", TEXT), ("disabledRules", "WHITESPACE_RULE"), ("username", "me"), ("apiKey", "k"),
        ("motherTongue", "es"), ("language", "auto"))).encode()
    r = client.post("/v2/check", content=body, headers={"Content-Type": ""})
    assert r.status_code == 200, r.text
    # languagetool-issue-create-overlay: offset, length, message, shortMessage, replacements,
    # rule.issueType
    matches = r.json()["matches"]
    for m in matches:
        assert isinstance(m["shortMessage"], str) and isinstance(m["message"], str)
        assert m["rule"]["issueType"] in ("misspelling", "grammar", "style", "typographical", "uncategorized")
    assert found(matches, TEXT) == {"school": "scool", "I": "i"}


def test_vscode_languagetool_linter(client):
    # davidlday/vscode-languagetool-linter src/linter/linter.ts: callLanguageTool posts with
    # request-promise {form: ltPostDataDict, json: true}: a form body
    # (application/x-www-form-urlencoded), Accept: application/json; the configured service
    # parameters (language, motherTongue, preferredVariants, disabledRules,
    # disabledCategories, ...) and data = the annotated text as JSON
    form = {"language": "auto", "motherTongue": "en-US", "preferredVariants": "en-US",
            "disabledCategories": "STYLE", "disabledRules": "", "data": json.dumps({"annotation": ANNOTATION})}
    r = client.post("/v2/check", data=form, headers={"Accept": "application/json"})
    assert r.status_code == 200, r.text
    # suggest(): matches[].offset, length, message, rule.id, replacements[].value
    assert found(r.json()["matches"], DOCUMENT) == {"school": "scool", "I": "i"}


def test_query_string_and_body_together(client):
    # LanguageTool's LanguageToolHttpHandler.getRequestQuery: body parameters, then the query
    # string's, which win
    r = client.post("/v2/check?language=en-US&disabledRules=EDITSPEC_R_ORTH", content=f"text={TEXT}&language=xx",
                    headers={"Content-Type": "text/plain"})
    assert r.status_code == 200, r.text
    assert found(r.json()["matches"], TEXT) == {"school": "scool"}


def test_enabled_only_without_rules_is_400(client):
    r = client.post("/v2/check", data={"language": "en-US", "text": TEXT, "enabledOnly": "true"})
    assert r.status_code == 400 and "enabledOnly" in r.json()["error"]
