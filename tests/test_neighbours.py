"""A sentence's edits are its own (issue 78): the same alone and beside another sentence, in a line
of text or jsonl (``correct_detailed``: output, spans, types, messages, confidences), in /v1 and in
/v2, at both levels. Random pairs of W&I dev sentences through the shipped models, all in one call
(a line's edits are its units' edits lifted to its offsets, ``chain.lift``; before, the line was
diffed again, and its LCS could pair words across sentences)."""

import random

import pytest
from starlette.testclient import TestClient

from editspec.corrector import Corrector
from editspec.data import corpora
from editspec.data.m2 import read_blocks, source_tokens
from editspec.data.tokenized import detokenize
from editspec.errors import EditspecError
from editspec.pre import segment
from editspec.serve.app import create_app


def wi_dev() -> list[str]:
    try:
        path = corpora.data_dir() / "wi_locness" / "ABCN.dev.gold.bea19.m2"
    except EditspecError:
        path = None
    if path is None or not path.is_file():
        pytest.skip("W&I+LOCNESS dev not present (EDITSPEC_DATA or shared/data)")
    return [detokenize(" ".join(source_tokens(b))) for b in read_blocks(path)]


@pytest.fixture(scope="module")
def pool() -> list[str]:
    """20 random W&I dev sentences, each one sentence to the segmenter, beginning and ending as a
    sentence does: two of them in a line are then two units (a sentence that begins in lower case
    joins the one before it, as the segmenter reads it), and the spelling step's full stop for a
    line's last sentence (a place, not a neighbour) is not asked for."""
    rng = random.Random(78)
    texts = [t for t in wi_dev() if 15 <= len(t) <= 150 and t[0].isupper() and t[-1] in ".!?"
             and len(segment.segment(t)) == 1]
    return rng.sample(texts, 20)


@pytest.fixture(scope="module")
def shipped():
    return Corrector.from_pretrained(device="cpu", batch_size=16)


def key(e, shift: int = 0, types: bool = True) -> tuple:
    return (e["start"] + shift, e["end"] + shift, e["original"], e["correction"], e["confidence"],
            *((e["type"], e["message"]) if types else ()))


@pytest.mark.parametrize("level", ["default", "picky"])
def test_a_sentence_s_edits_do_not_depend_on_its_neighbours(shipped, pool, level):
    rng = random.Random(level)
    pairs = [tuple(rng.sample(range(len(pool)), 2)) for _ in range(64)]
    # the pair: at picky, main's line diff paired "The" -> "People" and "people " -> ""
    pool = pool + ["The people in my city is very friendly.", "I didn't went to school."]
    pairs.append((len(pool) - 2, len(pool) - 1))
    lines = [f"{pool[a]} {pool[b]}" for a, b in pairs]
    assert all(len(segment.segment(line)) == 2 for line in lines)
    got = [c.as_dict() for c in shipped.correct_detailed(pool + lines, types=True, level=level)]
    alone, together = got[:len(pool)], got[len(pool):]
    assert sum(len(c["edits"]) for c in alone) >= 5  # the sentences have errors the models fix
    for (a, b), c in zip(pairs, together):
        assert c["output"] == f"{alone[a]['output']} {alone[b]['output']}"
        assert [key(e) for e in c["edits"]] == \
            [key(e) for e in alone[a]["edits"]] + [key(e, len(pool[a]) + 1) for e in alone[b]["edits"]]

    # the server: /v1 (the corrections) and /v2 (LanguageTool's matches), a few pairs in one request
    app = create_app(shipped.correct_detailed, levels=("default", "picky"))
    few = pairs[:8]
    texts = [pool[k] for k in sorted({k for p in few for k in p})]
    with TestClient(app, base_url="http://localhost") as client:
        v1 = client.post("/v1/correct", json={"texts": texts + [f"{pool[a]} {pool[b]}" for a, b in few],
                                               "level": level}).json()["corrections"]
        by_text = dict(zip(texts, v1))
        for (a, b), c in zip(few, v1[len(texts):]):
            # the server types each text piece whole (``serve.bounds``): spans, corrections, confidences
            want = [key(e, types=False) for e in by_text[pool[a]]["edits"]] + \
                [key(e, len(pool[a]) + 1, types=False) for e in by_text[pool[b]]["edits"]]
            assert [key(e, types=False) for e in c["edits"]] == want

        def matches(text: str, shift: int = 0) -> list[tuple]:
            body = client.post("/v2/check", data={"language": "en-US", "text": text, "level": level}).json()
            return [(m["offset"] + shift, m["length"], [r["value"] for r in m["replacements"]])
                    for m in body["matches"]]

        a, b = next(((a, b) for a, b in few if alone[a]["edits"] and alone[b]["edits"]), few[0])
        assert matches(f"{pool[a]} {pool[b]}") == matches(pool[a]) + matches(pool[b], len(pool[a]) + 1)
