"""LanguageTool's ``/v2`` API on editspec's corrections: annotated text, matches, UTF-16 offsets.

    request   language=en-US & data={"annotation": [{"text": "She "}, {"markup": "<b>"},
                                                    {"text": "go"}, {"markup": "</b>"},
                                                    {"text": " home."}]}
    plain     "She go home."  (markup skipped; ``interpretAs`` text stands in for its markup)
    corrected "She goes home." -> Edit(4, 6, "go", "goes"), R:VERB:SVA
    back      plain [4, 6) -> document [7, 9): offsets count the markup, as the client sees it
    match     {"offset": 7, "length": 2, "replacements": [{"value": "goes"}],
               "message": "Possible subject–verb agreement error", "rule": {"id": "EDITSPEC_R_VERB_SVA", ...}}

Parameters are read as LanguageTool's server reads them (``LanguageToolHttpHandler``): the body
of a POST is parsed as a form whatever its Content-Type says (LTeX sends its form labelled
``application/json``), then the query string, whose values win. Every parameter LanguageTool
documents is accepted; those that only LanguageTool's rules or its premium service could honour
(``motherTongue``, ``preferredVariants``, ``username``/``apiKey``, ``dicts``,
``noopLanguages``, ``abtest``, ``mode``, ``allowIncompleteResults``, ``useragent``,
``textSessionId``, ...) change nothing here: this server has no picky-only or false-friend rules,
and no user dictionaries. ``enabledRules``, ``disabledRules``, ``enabledCategories``,
``disabledCategories`` and ``enabledOnly`` apply to editspec's own rule ids and categories.
``level=picky`` runs the models' picky level (more suggestions, less sure ones among them; where
the models have none, the default level answers, as LanguageTool answers with the rules it has); with ``editspec serve --alternatives`` a match's ``replacements`` lists
the n-best's other replacements after the correction (up to 3 in all); each match carries editspec's ``confidence`` (0 to 1) beside
LanguageTool's fields; matches stay in document order, as LanguageTool gives them.

Offsets and lengths are in UTF-16 code units, as LanguageTool (Java) counts them: after an emoji
(two units) the offsets of the text that follows stay aligned in the client. An edit that only
inserts ("go school" -> "go to school") is widened to the next word ("school" -> "to school"),
or the previous one at the end, so that a client has something to underline.
"""

from __future__ import annotations

import dataclasses
import json
import urllib.parse
from dataclasses import dataclass
from typing import Sequence

from editspec.errors import EditspecError
from editspec.serve.bounds import sentence_of
from editspec.post import error_types
from editspec.post.diff import Correction, Edit

SOFTWARE = {"name": "editspec", "version": "0.1.0", "buildDate": None, "apiVersion": 1,
            "premium": False, "status": ""}
# English only: what the model was trained on; the variants are accepted, none differs
LANGUAGES = [("English", "en", "en"), ("English (US)", "en", "en-US"), ("English (GB)", "en", "en-GB"),
             ("English (Australian)", "en", "en-AU"), ("English (Canadian)", "en", "en-CA"),
             ("English (New Zealand)", "en", "en-NZ"), ("English (South African)", "en", "en-ZA")]
NAMES = {code.lower(): name for name, _, code in LANGUAGES}
CONTEXT = 40  # characters of context on each side of a match, as LanguageTool gives


@dataclass
class Document:
    """The text the model reads and, for each of its characters, where it is in the document."""

    text: str
    starts: list[int]  # document offset of plain character i (len(text) + 1 entries)
    ends: list[int]  # document offset just after plain character i - 1 (ends[0] = starts[0])
    document: str  # the whole document as the client holds it (markup included)


def parameters(query: bytes, body: bytes) -> dict[str, str]:
    """A request's parameters: the body as a form (any Content-Type), then the query string."""
    out: dict[str, str] = {}
    for raw, where in ((body, "request body"), (query, "query string")):
        try:
            out.update(urllib.parse.parse_qsl(raw.decode("utf-8"), keep_blank_values=True,
                                              encoding="utf-8", errors="strict"))
        except UnicodeDecodeError:
            raise EditspecError(f"{where} is not UTF-8")
        except ValueError as e:
            raise EditspecError(f"malformed {where}: {e}")
    return out


@dataclass
class Options:
    """The rule filters of a check."""

    enabled: set[str]
    disabled: set[str]
    enabled_only: bool
    enabled_categories: set[str]
    disabled_categories: set[str]

    @classmethod
    def from_params(cls, params: dict[str, str]) -> "Options":
        o = cls(rule_set(params.get("enabledRules")), rule_set(params.get("disabledRules")),
                params.get("enabledOnly", "").strip().lower() == "true",
                rule_set(params.get("enabledCategories")), rule_set(params.get("disabledCategories")))
        if o.enabled_only and not (o.enabled or o.enabled_categories):
            raise EditspecError("enabledOnly=true needs enabledRules or enabledCategories (as LanguageTool)")
        return o

    def allows(self, rule: str, category: str) -> bool:
        if rule in self.disabled or category in self.disabled_categories:
            return False
        return not self.enabled_only or rule in self.enabled or category in self.enabled_categories


def language(code: str | None) -> tuple[str, str]:
    """(code, name) of a requested language; ``auto`` is English. Unknown: ``EditspecError``."""
    if not code:
        raise EditspecError("missing 'language' parameter")
    key = code.strip().lower()
    if key == "auto":
        key = "en-us"
    if key not in NAMES:
        known = ", ".join(c for _, _, c in LANGUAGES)
        raise EditspecError(f"'{code}' is not a language code known to this server (known: {known}, auto)")
    code = next(c for _, _, c in LANGUAGES if c.lower() == key)
    return code, NAMES[key]


def languages() -> list[dict]:
    return [{"name": name, "code": code, "longCode": long} for name, code, long in LANGUAGES]


def document(text: str | None, data: str | None) -> Document:
    """The plain text of a ``text`` or ``data`` parameter (one of them), with its offset maps."""
    if data is None:
        if text is None:
            raise EditspecError("missing 'text' or 'data' parameter")
        offsets = list(range(len(text) + 1))
        return Document(text, offsets, offsets, text)
    try:
        parts = json.loads(data)["annotation"]
    except (ValueError, TypeError, KeyError):
        raise EditspecError("'data' must be JSON {\"annotation\": [{\"text\": ...}, {\"markup\": ...}, ...]}")
    if not isinstance(parts, list):
        raise EditspecError("'data' annotation must be a list")
    plain, starts, ends, doc = [], [], [], []
    at = 0
    for part in parts:
        if not isinstance(part, dict) or not all(isinstance(v, str) for v in part.values()):
            raise EditspecError("each 'data' annotation entry must be an object of strings")
        if "text" in part:
            piece = part["text"]
            plain.append(piece)
            starts += range(at, at + len(piece))
            ends += range(at + 1, at + len(piece) + 1)
        elif "markup" in part:
            piece = part["markup"]
            stand_in = part.get("interpretAs", "")
            plain.append(stand_in)
            starts += [at] * len(stand_in)  # the markup's characters, all of it
            ends += [at + len(piece)] * len(stand_in)
        else:
            raise EditspecError("each 'data' annotation entry needs 'text' or 'markup'")
        doc.append(piece)
        at += len(piece)
    return Document("".join(plain), starts + [at], [starts[0] if starts else 0] + ends, "".join(doc))


def utf16_offsets(text: str) -> list[int]:
    """UTF-16 code units before each character of ``text`` (len(text) + 1 entries)."""
    out = [0]
    for ch in text:
        out.append(out[-1] + (2 if ord(ch) > 0xFFFF else 1))
    return out


def widen(text: str, edits: Sequence[Edit]) -> list[Edit]:
    """Edits that only insert, widened over the next word (else the previous one) where that word
    is in no other edit: a match of length 0 has nothing for a client to underline."""
    out = list(edits)
    for k, e in enumerate(out):
        if e.start != e.end:
            continue
        after_limit = out[k + 1].start if k + 1 < len(out) else len(text)
        before_limit = out[k - 1].end if k > 0 else 0
        nxt = _word_after(text, e.end, after_limit)
        if nxt is not None:
            out[k] = dataclasses.replace(e, end=nxt, original=text[e.start:nxt], correction=e.correction + text[e.end:nxt],
                                         alternatives=e.alternatives and tuple(a + text[e.end:nxt] for a in e.alternatives))
            continue
        prev = _word_before(text, e.start, before_limit)
        if prev is not None:
            out[k] = dataclasses.replace(e, start=prev, original=text[prev:e.end], correction=text[prev:e.start] + e.correction,
                                         alternatives=e.alternatives and tuple(text[prev:e.start] + a for a in e.alternatives))
    return out


def _word_after(text: str, at: int, limit: int) -> int | None:
    """The end of the spaces and next word (or mark) after ``at``, if before ``limit``."""
    j = at
    while j < limit and text[j].isspace():
        j += 1
    if j >= limit:
        return None
    if text[j].isalnum():
        while j < limit and text[j].isalnum():
            j += 1
        return j
    return j + 1


def _word_before(text: str, at: int, limit: int) -> int | None:
    j = at
    while j > limit and text[j - 1].isspace():
        j -= 1
    if j <= limit:
        return None
    if text[j - 1].isalnum():
        while j > limit and text[j - 1].isalnum():
            j -= 1
        return j
    return j - 1


def matches(doc: Document, correction: Correction, types: Sequence[str],
            sentences: Sequence[tuple[int, int]], options: Options) -> list[dict]:
    """LanguageTool matches of ``correction`` (of ``doc.text``), offsets in ``doc.document``;
    ``sentences``: spans of ``doc.text`` for each match's ``sentence`` (``bounds.Checked``)."""
    units = utf16_offsets(doc.document)
    out = []
    for edit, error_type in zip(widen(doc.text, correction.edits), types):
        rule = error_types.rule_id(error_type)
        cat_id, cat_name = error_types.category(error_type)
        if not options.allows(rule, cat_id):
            continue
        start = doc.starts[edit.start]
        end = doc.ends[edit.end] if edit.end > edit.start else start
        offset, length = units[start], units[end] - units[start]
        c_start, c_end = max(0, start - CONTEXT), min(len(doc.document), end + CONTEXT)
        sentence = sentence_of(sentences, edit.start, edit.end, doc.text)
        out.append({
            "message": edit.message or error_types.message(error_type),  # the grammar step's own
            "shortMessage": error_types.short_message(error_type),
            "replacements": [{"value": v} for v in (edit.correction, *(edit.alternatives or ()))],
            "offset": offset,
            "length": length,
            "context": {"text": doc.document[c_start:c_end], "offset": units[start] - units[c_start],
                        "length": length},
            "sentence": sentence,
            "type": {"typeName": "Other"},
            "rule": {"id": rule, "description": error_types.message(error_type),
                     "issueType": error_types.issue_type(error_type),
                     "category": {"id": cat_id, "name": cat_name}},
            "ignoreForIncompleteSentence": False,
            "contextForSureMatch": 0,
            "confidence": edit.confidence,  # editspec's own field (clients ignore what they do not know)
        })
    return out


def response(code: str, name: str, found: list[dict]) -> dict:
    return {"software": SOFTWARE, "warnings": {"incompleteResults": False},
            "language": {"name": name, "code": code,
                         "detectedLanguage": {"name": name, "code": code, "confidence": 1.0}},
            "matches": found}


def rule_set(value: str | None) -> set[str]:
    """A comma-separated parameter (``enabledRules=A,B``) as a set."""
    return {v.strip() for v in (value or "").split(",") if v.strip()}
