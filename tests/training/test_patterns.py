"""Learners' edit patterns (training/synthetic/patterns.py, replay.py): the table read from a
hand-written M2 snippet, replayed at its rates, never touching the target, reproducible per line."""

import difflib
import itertools
import lzma
import math
import random
from collections import Counter
from pathlib import Path

import pytest

from editspec.modeling import features
from editspec.errors import EditspecError
from editspec.tokenization.tokens import load_tokenizer
from training.data import pattern_table, synthetic_source
from training.models import ModelKind
from training.synthetic.__main__ import main
from training.synthetic.lexicon import lexicon
from training.synthetic.measuring import type_distance
from training.synthetic.pairs import sentence_rng, synthetic_pairs
from training.synthetic.patterns import Pattern, PatternTable, build, main as patterns_main
from training.synthetic.profile import ErrorProfile
from training.synthetic.replay import MAX_FACTOR, Replayer, _edit, _quick_span, apply_pattern
from training.synthetic.sentence import Sentence, tokens

M2 = """S I live at London .
A 2 3|||R:PREP|||in|||REQUIRED|||-NONE-|||0

S They arrived at Rome .
A 2 3|||R:PREP|||in|||REQUIRED|||-NONE-|||0

S I live in Paris .
A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0

S She go to the school .
A 1 2|||R:VERB:SVA|||goes|||REQUIRED|||-NONE-|||0
A 3 4|||U:DET||||||REQUIRED|||-NONE-|||0

S He do n't like cats
A 1 2|||R:VERB:SVA|||does|||REQUIRED|||-NONE-|||0
A 5 5|||M:PUNCT|||.|||REQUIRED|||-NONE-|||0
A 1 2|||R:VERB|||likes|||REQUIRED|||-NONE-|||1

S i like it .
A 0 1|||R:ORTH|||I|||REQUIRED|||-NONE-|||0
"""
# corrected: "I live in London." "They arrived in Rome." "I live in Paris." "She goes to school."
#            "He doesn't like cats." "I like it."


@pytest.fixture
def m2(tmp_path) -> Path:
    path = tmp_path / "tiny.train.m2"
    path.write_text(M2)
    return path


def by_key(table: PatternTable) -> dict:
    return {(p.key, p.start, p.end, p.learner): p for p in table.patterns}


def test_the_table_counts_each_edit_as_a_rewrite_of_the_corrected_text(m2):
    table = build([m2], min_count=1)
    got = by_key(table)
    # rate = times learners wrote X where the correction has Y / occurrences of Y in the corrected text
    assert got[(("in",), 0, 1, ("at",))][4:7] == ("R:PREP", 2, pytest.approx(2 / 3))  # "in" 3 times
    assert got[(("goes",), 0, 1, ("go",))][4:7] == ("R:VERB:SVA", 1, 1.0)
    # spaCy's "do n't" is the text's "don't": one token, as the Wikipedia sentences have it
    assert got[(("doesn't",), 0, 1, ("don't",))][4:7] == ("R:VERB:SVA", 1, 1.0)
    assert got[((".",), 0, 1, ())][4:7] == ("M:PUNCT", 1, pytest.approx(1 / 6))  # 6 full stops
    # an insertion is keyed on a neighbour and the other neighbour's class: "to _ school" -> "to the
    # school" (a tie: the next token, after a preposition), per "school" after a preposition
    assert got[(("school",), 0, 0, ("the",))][4:7] == ("U:DET", 1, 1.0)
    assert got[(("school",), 0, 0, ("the",))].context == "prep"
    # a case error keeps its case: "I" -> "i", per exact "I" (3 of them)
    case = got[(("I",), 0, 1, ("i",))]
    assert case.exact and case.type == "R:ORTH" and case.rate == pytest.approx(1 / 3)
    assert len(table.patterns) == 6  # the second annotator's edit does not count
    assert table.edits == {"R:PREP": 2, "R:VERB:SVA": 2, "U:DET": 1, "M:PUNCT": 1, "R:ORTH": 1}
    assert table.coverage == {t: 1.0 for t in table.edits} and table.covered == 1.0
    # seen fewer than min_count times: left to the rules, and the coverage says so
    kept = build([m2], min_count=2)
    assert [(p.key, p.learner, p.count) for p in kept.patterns] == [(("in",), ("at",), 2)]
    assert kept.coverage["R:PREP"] == 1.0 and kept.coverage["R:VERB:SVA"] == 0.0
    assert kept.covered == pytest.approx(2 / 7)


def test_the_table_is_read_from_train_files_only(tmp_path, m2):
    for name in ("ABCN.dev.gold.bea19.m2", "fce.test.gold.bea19.m2"):
        (tmp_path / name).write_text(M2)
        with pytest.raises(EditspecError, match="train files only"):
            build([m2, tmp_path / name])


def test_the_table_saves_loads_and_the_cli_builds_it(tmp_path, m2, capsys):
    out = tmp_path / "runs" / "patterns.json.xz"
    assert patterns_main(["build", "--m2", str(m2), "--min-count", "1", "--out", str(out)]) == 0
    assert "6 patterns seen >= 1 times" in capsys.readouterr().out
    loaded = PatternTable.load(out)
    assert loaded.patterns == build([m2], min_count=1).patterns and loaded.sources == ["tiny.train.m2"]
    assert patterns_main(["show", str(out), "--top", "3"]) == 0
    assert "| in | at | R:PREP | 2 | 0.6667 |" in capsys.readouterr().out
    out.write_bytes(b"not xz")
    assert patterns_main(["show", str(out)]) == 2
    assert "cannot read pattern table" in capsys.readouterr().err
    assert patterns_main(["build", "--m2", str(tmp_path / "x.dev.m2"), "--out", str(out)]) == 2
    assert "train files only" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ replaying
def one(key, learner, type_, rate, start=0, end=None, exact=False, context=""):
    end = len(key) if end is None else end
    return Pattern(tuple(key), start, end, tuple(learner), type_, 10, rate, exact, context)


def test_a_pattern_is_written_into_the_text_as_a_learner_would():
    lex = lexicon()

    def applied(text, p, lo, hi):
        s = Sentence(text, lex)
        assert apply_pattern(s, lo, hi, p)
        return str(s)

    text = "In 2013, the city grew by a third, so that it needed more schools."
    assert applied(text, one(["in"], ["on"], "R:PREP", 0.1), 0, 1).startswith("On 2013, the city")  # case follows
    assert applied(text, one([","], [], "M:PUNCT", 0.1), 2, 3).startswith("In 2013 the city")
    assert applied(text, one(["that"], [","], "U:PUNCT", 0.1, 0, 0), 11, 11).endswith("so, that it needed more schools.")
    assert applied(text, one(["a"], ["the"], "R:DET", 0.1), 7, 8) == \
        "In 2013, the city grew by the third, so that it needed more schools."
    assert applied("Cats sleep a lot.", one(["cats"], ["the"], "U:DET", 0.1, 0, 0), 0, 0) == "The cats sleep a lot."
    assert applied("I think so.", one(["I"], ["i"], "R:ORTH", 0.1, exact=True), 0, 1) == "i think so."
    assert applied("He wants to go.", one(["to", "go"], ["going"], "R:VERB:FORM", 0.1), 2, 4) == "He wants going."


SUBJECTS = ["The children", "My friends", "The workers", "Our neighbours", "The students"]
PLACES = ["the park", "the city", "the garden", "the station", "the market", "the village"]


def pattern_sentences(n: int, seed: int) -> list[str]:
    """Sentences of ~20 tokens with several "in", "the" and "school" each, and nothing else a
    pattern below rewrites."""
    rng = random.Random(seed)
    return [f"{rng.choice(SUBJECTS)} met in {rng.choice(PLACES)} and walked to school in {rng.choice(PLACES)} "
            f"after they ate lunch in {rng.choice(PLACES)} with {rng.choice(PLACES)} staff." for _ in range(n)]


def rules_free_replayer(table: PatternTable, profile: ErrorProfile, calibration) -> Replayer:
    return Replayer(table, profile, lexicon(), calibration=calibration)


def table_of(patterns) -> PatternTable:
    types = {p.type for p in patterns}
    return PatternTable(list(patterns), {t: 1.0 for t in types}, {t: 100 for t in types})


def test_patterns_are_replayed_at_their_rates_and_the_target_is_never_touched():
    """Each pattern is applied at its rate per occurrence of its key times its type's factor (within
    sampling error), each type's factor brings it to the profile's rate (at most MAX_FACTOR), and every
    target is its sentence, unchanged."""
    patterns = [one(["in"], ["on"], "R:PREP", 0.06), one(["in"], ["at"], "R:PREP", 0.02),
                one(["the"], [], "M:DET", 0.03), one(["school"], ["the"], "U:DET", 0.2, 0, 0, context="prep"),
                one(["school"], ["a"], "U:DET", 0.5, 0, 0, context="det")]  # never: no determiner before "school"
    # in these sentences the patterns' own rates make ~0.011 R:PREP, ~0.0055 M:DET, ~0.009 U:DET edits
    # per token: the factors bring them to the profile's rates (the patterns make all of each type)
    profile = ErrorProfile({"R:PREP": 0.016, "M:DET": 0.008, "U:DET": 0.006}, clean_fraction=0.5)
    sents = pattern_sentences(3000, 1)
    r = rules_free_replayer(table_of(patterns), profile, sents[:300])
    assert 1.2 < r.factors["R:PREP"] < 1.7 and 1.2 < r.factors["M:DET"] < 1.7 and 0.5 < r.factors["U:DET"] < 0.9
    assert r.rule_types == []
    # at most MAX_FACTOR times the corpus's rate: the rules make the rest of a type
    capped = rules_free_replayer(table_of(patterns), ErrorProfile({**profile.rates, "M:DET": 0.02}, 0.5), sents[:300])
    assert capped.factors["M:DET"] == MAX_FACTOR and capped.rule_types == ["M:DET"]
    assert capped.rule_rates["M:DET"] == pytest.approx(0.02 - MAX_FACTOR * 0.03 * 4 / 20, rel=0.2)
    applied, occurrences, edits, n_tokens, clean = Counter(), Counter(), 0, 0, 0
    for i, text in enumerate(sents):
        pair = r.pair(text, sentence_rng(0, "t", i))
        assert pair["target"] == text
        src, tgt = tokens(pair["source"].lower()), tokens(text.lower())
        occurrences.update(t for t in tgt if t in ("in", "the", "school"))
        n_tokens += len(tgt)
        clean += src == tgt
        for op, a, b, c, d in difflib.SequenceMatcher(a=tgt, b=src, autojunk=False).get_opcodes():
            if op == "replace":
                applied.update((x, y) for x, y in zip(tgt[a:b], src[c:d]))
                edits += b - a
            elif op == "delete":
                applied.update((x, "") for x in tgt[a:b])
                edits += b - a
            elif op == "insert":
                applied.update(("", y) for y in src[c:d])
                edits += d - c
    assert abs(clean / len(sents) - profile.clean_fraction) < 0.03
    for (y, x), key, rate, t in [(("in", "on"), "in", 0.06, "R:PREP"), (("in", "at"), "in", 0.02, "R:PREP"),
                                 (("the", ""), "the", 0.03, "M:DET"), (("", "the"), "school", 0.2, "U:DET")]:
        expected = r.factors[t] * rate * occurrences[key]
        assert abs(applied[(y, x)] - expected) < 4 * math.sqrt(expected) + 0.05 * expected, (y, x, applied[(y, x)], expected)
    assert set(applied) == {("in", "on"), ("in", "at"), ("the", ""), ("", "the")}
    made = sum(r.factors[p.type] * p.rate * occurrences[p.key[0]] for p in patterns[:4])
    assert edits == pytest.approx(made, rel=0.05)


def test_pairs_are_a_function_of_the_line_cached_or_not():
    patterns = [one(["in"], ["on"], "R:PREP", 0.1), one(["the"], [], "M:DET", 0.05)]
    profile = ErrorProfile({"R:PREP": 0.02, "M:DET": 0.02, "R:SPELL": 0.02}, clean_fraction=0.2)
    table = PatternTable(patterns, {"R:PREP": 1.0, "M:DET": 0.5, "R:SPELL": 0.0}, {"R:PREP": 10, "M:DET": 10, "R:SPELL": 10})
    sents = pattern_sentences(200, 2)
    fresh = Replayer(table, profile, lexicon(), calibration=sents[:50])
    assert fresh.rule_types == ["M:DET", "R:SPELL"]  # the rules make what the patterns do not
    first = [fresh.corrupt(t, sentence_rng(3, "f", i)) for i, t in enumerate(sents)]
    assert len(fresh.cache) > 100
    other_pass = [fresh.corrupt(t, sentence_rng(4, "f", i)) for i, t in enumerate(sents)]  # the sites reused
    again = [fresh.corrupt(t, sentence_rng(3, "f", i)) for i, t in enumerate(sents)]
    uncached = Replayer(table, profile, lexicon(), calibration=sents[:50], max_cached=0)
    assert again == first == [uncached.corrupt(t, sentence_rng(3, "f", i)) for i, t in enumerate(sents)]
    assert other_pass != first and sum(a != t for a, t in zip(first, sents)) > 120


@pytest.fixture
def shards(tmp_path) -> Path:
    d = tmp_path / "wiki"
    d.mkdir()
    for k, seed in enumerate((5, 6)):
        with lzma.open(d / f"enwiki_sentences.{k:02d}.txt.xz", "wt", encoding="utf-8") as f:
            f.write("\n".join(pattern_sentences(40, seed)) + "\n")
    return d


def test_streams_with_patterns_are_reproducible_per_line(shards, m2, tmp_path):
    table = tmp_path / "patterns.json.xz"
    build([m2], min_count=1).save(table)
    a = list(synthetic_pairs(shards, 7, patterns=table))
    assert len(a) == 80 and a == list(synthetic_pairs(shards, 7, patterns=table))
    assert list(synthetic_pairs(shards, 7, shards=[1, 0], patterns=table)) == a[40:] + a[:40]
    parts = [list(synthetic_pairs(shards, 7, shards=[0], patterns=table, part=q, parts=2)) for q in range(2)]
    assert [p for pair in zip(*parts) for p in pair] == a[:40]
    # passes: pass k is the stream with seed 7 + 1000 k, from one generator
    two = list(synthetic_pairs(shards, 7, patterns=table, passes=2))
    assert two == a + list(synthetic_pairs(shards, 1007, patterns=table))
    assert any("at" in tokens(p["source"]) for p in two)  # "in" -> "at", the table's pattern


def test_a_synthetic_source_finds_its_table_in_the_data_directory_or_runs(tmp_path, m2):
    data = tmp_path / "data"
    (data / "synthetic").mkdir(parents=True)
    build([m2], min_count=1).save(data / "synthetic" / "patterns.json.xz")
    assert pattern_table("synthetic/patterns.json.xz", data) == data / "synthetic" / "patterns.json.xz"
    assert pattern_table(str(data / "synthetic" / "patterns.json.xz"), tmp_path) == data / "synthetic" / "patterns.json.xz"
    with pytest.raises(SystemExit, match="python -m training.synthetic.patterns build"):
        pattern_table("synthetic/nowhere.json.xz", data)


def test_type_distance():
    a = ErrorProfile({"R:PREP": 0.02, "M:DET": 0.02}, 0.3)
    assert type_distance(a, a) == 0.0
    assert type_distance(a, ErrorProfile({"R:PREP": 0.04, "M:DET": 0.04}, 0.1)) == 0.0  # shares, not rates
    assert type_distance(a, ErrorProfile({"R:PREP": 0.03, "M:DET": 0.01}, 0.3)) == pytest.approx(0.25)
    assert type_distance(a, ErrorProfile({"U:DET": 0.01}, 0.3)) == 1.0


def test_cli_benches_both_generators(shards, m2, tmp_path, capsys):
    table = tmp_path / "patterns.json.xz"
    build([m2], min_count=1).save(table)
    assert main(["--bench", "40", "--rounds", "1", "--data-dir", str(shards), "--m2", "none",
                 "--patterns", str(table)]) == 0
    out = capsys.readouterr().out
    assert "rules: " in out and "patterns + rules, first pass: " in out and "(sites reused)" in out


def test_a_synthetic_source_with_patterns_feeds_the_replayed_pairs(shards, m2, tmp_path, tokenizer_dir):
    """``patterns`` in a synthetic source: its streams are the replayed pairs, featurized, pass after pass."""
    data_dir = tmp_path
    build([m2], min_count=1).save(data_dir / "synthetic" / "patterns.json.xz")
    spec = {"name": "synthetic", "type": "synthetic", "path": shards.name, "shards": [0],
            "patterns": "synthetic/patterns.json.xz"}
    source = synthetic_source(spec, data_dir, ModelKind("t5"), tokenizer_dir, 256, 0, 0)
    made = list(itertools.islice(source.stream(0), 100))  # 40 lines: 3 passes
    table = data_dir / "synthetic" / "patterns.json.xz"
    pairs = list(itertools.islice(synthetic_pairs(shards, 0, [0], patterns=table, passes=3), 100))
    assert len({p["target"] for p in pairs}) == 40 and len({p["source"] for p in pairs}) > 60
    expected = features.t5_features_batch(load_tokenizer(tokenizer_dir), [p["source"] for p in pairs],
                                          [p["target"] for p in pairs], 256)
    assert all(expected) and [{k: ex[k] for k in ("input_ids", "labels")} for ex in made] == expected


def test_quick_spans_are_the_spans_a_sentence_edit_gives(m2):
    """One word for another and a dropped token, written directly, equal the same pattern applied
    through a Sentence (spaces and case included)."""
    table = build([m2], min_count=1)
    extra = [one([","], [], "M:PUNCT", 0.2), one(["in"], ["on"], "R:PREP", 0.1), one(["("], [], "M:PUNCT", 0.1),
             one(["the"], [], "M:DET", 0.1), one(["."], [","], "R:PUNCT", 0.1), one(["I"], ["i"], "R:ORTH", 0.1, exact=True)]
    patterns = table.patterns + extra
    r = Replayer(PatternTable(patterns, table.coverage, table.edits), ErrorProfile({p.type: 0.01 for p in patterns}, 0.0),
                 lexicon())
    texts = ["In 2013, the city (the capital) grew in size , and I left.", 'He said "no" , in the end.',
             "At the time, in Paris, the (new) bridge opened."]
    checked = 0
    for text in texts:
        found = r.sites(text)
        for i, group in found.at:
            for p in group.patterns:
                span = _quick_span(found, i + p.start, i + p.end, p)
                if span is False:
                    continue
                edits = []
                made = _edit(found, r.lex, edits, lambda s: apply_pattern(s, i + p.start, i + p.end, p))
                assert (span is None) == (not made)
                if made:
                    checked += 1
                    assert spliced(found, span) == spliced(found, edits[0]), (text, p)
    assert checked > 15


def spliced(found, span) -> str:
    lo, hi, new_w, new_sp = span
    w, sp = found.w[:], found.sp[:]
    w[lo:hi], sp[lo:hi] = new_w, new_sp
    return found.lead + "".join(a + b for a, b in zip(w, sp))


def test_error_rate_scales_the_patterns_edits_per_token():
    """A source's ``error_rate`` (``ErrorProfile.scaled``): twice the profile's rates, twice the
    factors, twice the edits, as many sentences left clean."""
    patterns = [one(["in"], ["on"], "R:PREP", 0.06), one(["the"], [], "M:DET", 0.03)]
    profile = ErrorProfile({"R:PREP": 0.004, "M:DET": 0.002}, clean_fraction=0.9)
    sents = pattern_sentences(3000, 3)

    def edits(p: ErrorProfile) -> tuple[int, float, dict]:
        r = rules_free_replayer(table_of(patterns), p, sents[:300])
        pairs = [r.pair(t, sentence_rng(5, "e", i)) for i, t in enumerate(sents)]
        changed = sum(op != "equal" for q in pairs for op, *_ in difflib.SequenceMatcher(
            a=tokens(q["target"]), b=tokens(q["source"]), autojunk=False).get_opcodes())
        return changed, sum(q["source"] == q["target"] for q in pairs) / len(pairs), r.factors

    once, clean1, f1 = edits(profile)
    twice, clean2, f2 = edits(profile.scaled(2.0))
    assert f2["R:PREP"] == pytest.approx(2 * f1["R:PREP"]) and f2["M:DET"] == pytest.approx(2 * f1["M:DET"])
    assert 1.7 < twice / once < 2.3 and abs(clean1 - 0.9) < 0.02 and abs(clean2 - 0.9) < 0.02
