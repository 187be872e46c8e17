"""Synthetic error generation (training/synthetic/): worked examples per error kind, rates,
determinism, streaming."""

import lzma
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import datasets
import pytest
from rapidfuzz.distance import Levenshtein

from training.synthetic.__main__ import main
from training.synthetic.corruptions import CORRUPTIONS
from training.synthetic.corruptor import Corruptor
from training.synthetic.lexicon import lexicon
from training.synthetic.measuring import m2_pairs, measure
from training.synthetic.pairs import sentence_rng, synthetic_dataset, synthetic_pairs
from training.synthetic.profile import ErrorProfile, FALLBACK_PROFILE, error_profile
from training.synthetic.sentence import Sentence
from training.synthetic.words import (
    AUX_TENSE, COMMON_MISSPELLINGS, COMMON_PREPS, DETERMINERS, HOMOPHONES, PREP_CONFUSIONS, PREPOSITIONS, PRONOUNS,
)

TEXTS = [
    "In 2013, the total housing area in Kazakhstan amounted to 336.1 million square meters.",
    "The classes were paid for by the government, and the students received a certificate.",
    "She walked to the station and bought a ticket for the early train.",
    "He wants to buy a new car because his old one is not reliable.",
    "Family members spent time in several camps, including Oranienburg and Dachau.",
    "The dogs are barking at the children who play in the park every day.",
    "It was not easy to find a good restaurant in the small town.",
    "Osaka, along with Paris and London, has one of the most productive hinterlands in the world.",
    "They have lived in the city since 1990, and they often visit their friends in Boston.",
    "Its unusually large size has been attributed to island gigantism.",
    "The company's profits rose quickly after the new manager arrived.",
    "Attacking with soft shots causes the opponent to cover more of the court.",
]


@pytest.fixture(scope="module")
def lex():
    return lexicon()


def corrupt_with(kind, text, lex, seeds=range(12)):
    """The corruption `kind` applied to `text` with several seeds: [(source tokens, source text)]."""
    out = []
    for seed in seeds:
        s = Sentence(text, lex)
        assert CORRUPTIONS[kind](s, random.Random(seed)), f"{kind} found no place in {text!r}"
        out.append((s.w, str(s)))
    return out


def toks(text, lex):
    return Sentence(text, lex).w


def lower(tokens):
    return [t.lower() for t in tokens]


def one_replaced(src, tgt):
    """The (source, target) token pair of a one-token substitution, else None."""
    if src[1:] == tgt[1:] and src[0].lower() == tgt[0].lower():
        return None
    if len(src) != len(tgt):
        return None
    diff = [(a, b) for a, b in zip(src, tgt) if a != b]
    return diff[0] if len(diff) == 1 else None


def one_missing(src, tgt):
    """The target token absent from the source, if the source is the target minus one token
    (ignoring case: the capital moves when the first word goes)."""
    src, tgt = lower(src), lower(tgt)
    for i in range(len(tgt)):
        if tgt[:i] + tgt[i + 1:] == src:
            return tgt[i]
    return None


# ----------------------------------------------------------------------------------- sentences
def test_sentence_round_trip_and_whitespace(lex):
    for text in TEXTS + ['He said "no" (twice) - and left!', "Café “quoted” naïve text…", "x"]:
        assert str(Sentence(text, lex)) == text
    s = Sentence("In 2013, the total area grew.", lex)
    s.delete(2)  # the comma: "2013" and "the" keep one space between them
    assert str(s) == "In 2013 the total area grew."
    s.delete(len(s) - 2)  # the word before the final period: no space before "."
    assert str(s) == "In 2013 the total area."
    s.delete(0)  # the capital moves to the new first word
    assert str(s) == "2013 the total area." and s.w[0] == "2013"
    s = Sentence("Cats sleep a lot.", lex)
    s.insert(0, "the")
    assert str(s) == "The cats sleep a lot."
    s = Sentence("Paris is big.", lex)
    s.insert(0, "the")
    assert str(s) == "The Paris is big."  # a proper noun keeps its capital
    s = Sentence("He left (very quietly) today.", lex)
    s.delete(3)  # no space after an opening bracket
    assert str(s) == "He left (quietly) today."
    s.insert_punct(2, ",")
    assert str(s) == "He left, (quietly) today."
    s.insert(3, "and")
    assert str(s) == "He left, and (quietly) today."


def test_overlapping_edits_are_flagged(lex):
    s = Sentence("The old man sold his small red boat to a friend.", lex)
    s.step = 1
    s.replace(2, "men")
    assert not s.conflict
    s.step = 2
    s.delete(3)  # next to step 1's edit
    assert s.conflict
    s.conflict = False
    s.replace(6, "bot")  # far from it
    assert not s.conflict and str(s) == "The old men his small red bot to a friend."
    snap = s.snapshot()
    s.step = 3
    s.swap(6)
    assert s.conflict
    s.restore(snap)
    assert str(s) == "The old men his small red bot to a friend." and not s.conflict


def test_a_word_gets_at_most_one_error(lex):
    c = Corruptor(ErrorProfile({"R:SPELL": 1.0}, 0.0), lex)  # as many typos as allowed
    text = "The students of the school visited the old castle and the museum in the town."
    tgt = toks(text, lex)
    for i in range(40):
        src = toks(c.corrupt(text, sentence_rng(0, "z", i)), lex)
        changed = [(a, b) for a, b in zip(src, tgt) if a != b]
        assert len(src) == len(tgt) and 1 <= len(changed) <= len(tgt) // 4
        assert all(Levenshtein.distance(a.lower(), b.lower()) <= 2 or
                   COMMON_MISSPELLINGS.get(b.lower()) == a.lower() for a, b in changed)


# ----------------------------------------------------------------------------- worked examples
def test_determiner_errors(lex):
    text = "The dogs are barking at the children who play in the park every day."
    tgt = toks(text, lex)
    for src, _ in corrupt_with("M:DET", text, lex):
        assert one_missing(src, tgt).lower() in DETERMINERS
    for src, _ in corrupt_with("U:DET", "They lived in Boston and loved music.", lex):
        assert one_missing(toks("They lived in Boston and loved music.", lex), src) in \
            {"the", "a", "an", "this", "some"}
    for src, _ in corrupt_with("R:DET", text, lex):
        a, b = one_replaced(src, tgt)
        assert a.lower() in DETERMINERS | {"one", "me", "you", "us"} and b.lower() in DETERMINERS


def test_preposition_errors(lex):
    text = "They have lived in the city since 1990, and they often visit their friends in Boston."
    tgt = toks(text, lex)
    for src, _ in corrupt_with("R:PREP", text, lex):
        a, b = one_replaced(src, tgt)
        assert b in PREPOSITIONS and a in PREP_CONFUSIONS[b]
    for src, _ in corrupt_with("M:PREP", text, lex):
        assert one_missing(src, tgt) in PREPOSITIONS
    for src, _ in corrupt_with("U:PREP", text, lex):
        assert one_missing(tgt, src) in COMMON_PREPS


def test_verb_errors(lex):
    text = "She walked to the station and bought a ticket because the trains are slow."
    tgt = toks(text, lex)
    tenses = set()
    for src, _ in corrupt_with("R:VERB:TENSE", text, lex, range(30)):
        a, b = one_replaced(src, tgt)
        tenses.add((b, a))
        if b in ("walked", "bought"):  # a main verb: same lemma, another tense
            lemma = {"walked": "walk", "bought": "buy"}[b]
            assert a in (lemma, lex.inflect(lemma, "3sg"))
        else:
            assert b == "are" and a in AUX_TENSE["are"]
    assert {("walked", "walk"), ("bought", "buys")} & tenses and ("are", "were") in tenses
    for src, _ in corrupt_with("R:VERB:SVA", text, lex):
        assert one_replaced(src, tgt) == ("is", "are")
    text = "He wants to buy a car and will drive it home."
    tgt = toks(text, lex)
    for src, _ in corrupt_with("R:VERB:FORM", text, lex):
        a, b = one_replaced(src, tgt)
        assert (b, a) in {("buy", f) for f in ("buying", "buys", "bought")} | \
            {("drive", f) for f in ("driving", "drives", "drove")}
    for src, _ in corrupt_with("M:VERB:FORM", text, lex):
        assert one_missing(src, tgt) == "to"
    assert corrupt_with("R:VERB:INFL", "She bought a ticket.", lex)[0][1] == "She buyed a ticket."
    for src, _ in corrupt_with("M:VERB:TENSE", "The house was built in 1900.", lex):
        assert src == toks("The house built in 1900.", lex)


def test_noun_errors(lex):
    text = "The students read three books in the old library."
    tgt = toks(text, lex)
    changes = {(b, a) for src, _ in corrupt_with("R:NOUN:NUM", text, lex, range(30))
               for a, b in [one_replaced(src, tgt)]}
    assert changes <= {("students", "student"), ("books", "book"), ("library", "libraries")}
    assert len(changes) >= 2
    assert corrupt_with("R:NOUN:INFL", "They gave us useful information.", lex)[0][1] == \
        "They gave us useful informations."
    for _, text in corrupt_with("M:NOUN:POSS", "The company's profits rose.", lex):
        assert text == "The company profits rose."


def test_spelling_errors(lex):
    text = "She received a ticket for the early train."
    tgt = toks(text, lex)
    for src, _ in corrupt_with("R:SPELL", text, lex, range(30)):
        a, b = one_replaced(src, tgt)
        assert not lex.is_word(a) or HOMOPHONES.get(b.lower()) == a.lower()
        assert abs(len(a) - len(b)) <= 2 and a[0].lower() in b.lower() + "qwertyuiopasdfghjklzxcvbnm"


def test_punctuation_errors(lex):
    text = "In 2013, the total area, which grew, amounted to 336 square meters."
    tgt = toks(text, lex)
    dropped = Counter(one_missing(src, tgt) for src, _ in corrupt_with("M:PUNCT", text, lex, range(40)))
    assert set(dropped) <= {",", "."} and dropped[","] > dropped["."] > 0
    for src, _ in corrupt_with("U:PUNCT", text, lex):
        assert one_missing(tgt, src) in {",", ";", ":", "."}
    for src, out in corrupt_with("R:PUNCT", text, lex):
        assert len(src) == len(tgt) and sum(a != b for a, b in zip(src, tgt)) in (1, 2)
        assert out.lower().replace(".", ",").replace(";", ",").replace(":", ",").replace("!", ",") \
            .replace("?", ",") == text.lower().replace(".", ",")


def test_orthography_word_order_and_contractions(lex):
    text = "Osaka, along with Paris and London, has one of the most productive hinterlands."
    for _, out in corrupt_with("R:ORTH", text, lex, range(20)):
        assert out != text and out.lower().replace(" ", "") == text.lower().replace(" ", "")
    tgt = toks(text, lex)
    for src, _ in corrupt_with("R:WO", text, lex):
        assert src != tgt and sorted(w.lower() for w in src) == sorted(w.lower() for w in tgt)
        assert sum(a != b for a, b in zip(src, tgt)) == 2
    outs = {out for _, out in corrupt_with("R:CONTR", "It was not easy.", lex, range(10))}
    assert outs <= {"It wasn't easy.", "It wasnt easy."} and "It wasn't easy." in outs


def test_missing_and_unnecessary_words(lex):
    text = "They said that it was a good idea, and they started the project."
    tgt = toks(text, lex)
    for src, _ in corrupt_with("M:PRON", text, lex):
        assert one_missing(src, tgt).lower() in PRONOUNS
    for src, _ in corrupt_with("M:CONJ", text, lex):
        assert one_missing(src, tgt) == "and"
    for src, _ in corrupt_with("M:OTHER", text, lex):
        assert len(src) == len(tgt) - 2
    for src, _ in corrupt_with("U:OTHER", text, lex):
        assert len(src) == len(tgt) + 2
    outs = {out for _, out in corrupt_with("R:OTHER", "I have a lot of friends in the city.", lex)}
    assert outs == {"I have many friends in the city.", "I have much of friends in the city."}
    outs = {out for _, out in corrupt_with("R:OTHER", "The man who lived in Paris was a doctor.", lex)}
    assert outs == {"The man living in Paris was a doctor."}
    outs = {out for _, out in corrupt_with("R:OTHER", "Before joining the army, he studied law.", lex)}
    assert outs <= {f"Before {p} joined the army, he studied law." for p in "he they it she we".split()}


# ------------------------------------------------------------------------------ rates and M2
def test_error_profile_from_m2(tmp_path):
    m2 = tmp_path / "tiny.m2"
    m2.write_text(
        "S This are a test .\nA 1 2|||R:VERB:SVA|||is|||REQUIRED|||-NONE-|||0\n"
        "A 2 3|||U:DET||||||REQUIRED|||-NONE-|||0\nA 1 2|||R:VERB|||was|||REQUIRED|||-NONE-|||1\n\n"
        "S Fine .\nA -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0\n\n"
        "S Good , thanks\nA 3 3|||M:PUNCT|||.|||REQUIRED|||-NONE-|||0\n\n"
        "S Hmm .\nA 0 1|||UNK|||Hmm|||REQUIRED|||-NONE-|||0\n\n")
    rates = dict(error_profile(m2).rates)
    assert rates == pytest.approx({"R:VERB:SVA": 1 / 12, "U:DET": 1 / 12, "M:PUNCT": 1 / 12})
    assert error_profile(m2).clean_fraction == 0.5  # noop and UNK-only sentences are unchanged


def test_m2_pairs_and_errant_measurement(tmp_path):
    m2 = tmp_path / "tiny.m2"
    m2.write_text("S He go to school .\nA 1 2|||R:VERB:SVA|||goes|||REQUIRED|||-NONE-|||0\n\n"
                  "S Fine .\nA -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0\n\n")
    pairs = sorted(m2_pairs(m2, 5), key=lambda p: p["source"])
    assert pairs == [{"source": "Fine .", "target": "Fine ."},
                     {"source": "He go to school .", "target": "He goes to school ."}]
    measured, n = measure(pairs, tokenized=True)
    assert n == 2 and measured.rates == {"R:VERB:SVA": 1 / 7} and measured.clean_fraction == 0.5
    natural, _ = measure([{"source": "She walk to the park.", "target": "She walks to the park."}])
    assert natural.rates == {"R:VERB:SVA": 1 / 6}


def test_clean_fraction_and_edit_rate(lex):
    rng = random.Random(0)
    sents = [rng.choice(TEXTS) for _ in range(1500)]
    for profile in (FALLBACK_PROFILE, ErrorProfile({"R:PREP": 0.02, "R:SPELL": 0.02}, 0.7)):
        c = Corruptor(profile, lex)
        pairs = [c.pair(t, sentence_rng(1, "x", i)) for i, t in enumerate(sents)]
        assert all(p["target"] == t for p, t in zip(pairs, sents))  # targets are the input
        assert all(p["source"].strip() for p in pairs)
        unchanged = sum(p["source"] == p["target"] for p in pairs) / len(pairs)
        assert abs(unchanged - profile.clean_fraction) < 0.04
    # only the profile's kinds of change: every changed token is a preposition or a non-word
    for p in pairs:
        src, tgt = toks(p["source"], lex), toks(p["target"], lex)
        for a, b in zip(src, tgt):
            assert (a == b or b.lower() in PREPOSITIONS or not lex.is_word(a)
                    or HOMOPHONES.get(b.lower()))


def test_calibration_restores_rare_types(lex):
    """A type that rarely has a place ("not" to contract) is boosted by its applicability."""
    profile = ErrorProfile({"R:CONTR": 0.02, "R:SPELL": 0.02}, 0.0)
    calibration = TEXTS  # 3 of 12 have a "not" or "they have" to contract
    plain, calibrated = Corruptor(profile, lex), Corruptor(profile, lex, calibration=calibration)
    assert calibrated.applicability["R:CONTR"] == pytest.approx(3 / 12)
    count = {}
    for name, c in (("plain", plain), ("calibrated", calibrated)):
        outs = [c.corrupt("It was not easy to find a good restaurant.", sentence_rng(3, "y", i))
                for i in range(300)]
        count[name] = sum("n't" in o or "wasnt" in o for o in outs)
    assert count["calibrated"] > 1.5 * count["plain"]


# ------------------------------------------------------------------------------- streaming
@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    d = tmp_path_factory.mktemp("wiki")
    rng = random.Random(5)
    for k in range(3):
        with lzma.open(d / f"enwiki_sentences.{k:02d}.txt.xz", "wt", encoding="utf-8") as f:
            for _ in range(40):
                f.write(rng.choice(TEXTS) + "\n")
            f.write("\n")  # blank lines are skipped
    return d


def test_streaming_is_deterministic_and_shard_independent(shards):
    a = list(synthetic_pairs(shards, seed=7))
    assert len(a) == 120 and a == list(synthetic_pairs(shards, seed=7))
    b = list(synthetic_pairs(shards, seed=8))
    assert a != b and [p["target"] for p in a] == [p["target"] for p in b]
    # a shard's pairs do not depend on which other shards are read, or in what order
    assert list(synthetic_pairs(shards, seed=7, shards=[2, 0])) == a[80:] + a[:40]
    assert list(synthetic_pairs(shards, seed=7, shards=["enwiki_sentences.01.txt.xz"])) == a[40:80]
    assert 0.2 < sum(p["source"] == p["target"] for p in a) / len(a) < 0.5


def test_parts_split_a_shard_by_line_into_the_same_pairs(shards):
    whole = list(synthetic_pairs(shards, seed=7, shards=[1]))
    parts = [list(synthetic_pairs(shards, seed=7, shards=[1], part=q, parts=3)) for q in range(3)]
    assert [len(p) for p in parts] == [14, 13, 13]  # 40 lines + a blank one (line 40, part 1)
    assert [pair for k in range(14) for p in parts if k < len(p) for pair in [p[k]]] == whole


def test_iterable_dataset_matches_and_splits_across_workers(shards):
    ds = synthetic_dataset(shards, seed=7)
    assert isinstance(ds, datasets.IterableDataset) and ds.num_shards == 3
    expected = list(synthetic_pairs(shards, seed=7))
    assert list(ds) == expected
    parts = [list(ds.shard(num_shards=2, index=i)) for i in range(2)]
    assert sorted(map(str, parts[0] + parts[1])) == sorted(map(str, expected))


def test_cli_prints_pairs(shards, capsys):
    assert main(["--n", "3", "--seed", "1", "--data-dir", str(shards), "--m2", "none"]) == 0
    out = capsys.readouterr().out
    assert out.count("src: ") == 3 and out.count("tgt: ") == 3


def test_output_does_not_depend_on_hash_seed(shards):
    """Python's set and str-hash order differ between processes; the pairs must not."""
    code = ("import hashlib, sys; from training.synthetic.pairs import synthetic_pairs; "
            "print(hashlib.md5(repr(list(synthetic_pairs(sys.argv[1], 4))).encode()).hexdigest())")
    outs = {subprocess.run([sys.executable, "-c", code, str(shards)], capture_output=True, text=True, check=True,
                           cwd=Path(__file__).resolve().parents[2],
                           env={**os.environ, "PYTHONHASHSEED": h}).stdout for h in ("1", "2")}
    assert len(outs) == 1


def test_scaled_profile_makes_more_errors_per_sentence_with_as_many_clean(lex):
    """``error_rate`` (a synthetic source's recall lever): twice the edits per token, in the same
    proportions of types, and the same share of sentences left clean."""
    base = ErrorProfile({"R:PREP": 0.03, "R:SPELL": 0.03}, 0.3)
    double = base.scaled(2.0)
    assert double.total_rate == pytest.approx(2 * base.total_rate) and double.clean_fraction == base.clean_fraction
    assert base.scaled(1.0) is base
    rng = random.Random(0)
    sents = [rng.choice(TEXTS) for _ in range(600)]

    def edits(profile):
        c = Corruptor(profile, lex)
        pairs = [c.pair(t, sentence_rng(1, "x", i)) for i, t in enumerate(sents)]
        return sum(Levenshtein.distance(toks(p["source"], lex), toks(p["target"], lex)) for p in pairs)

    assert edits(double) > 1.4 * edits(base)
