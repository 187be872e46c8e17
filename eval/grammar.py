"""Offline evaluation and tuning of the grammar step (editspec/grammar) on the default
pipeline's outputs; nothing here ships.

    python -m eval.grammar judge  --hyp OUT.txt --lm LM.bin -o CANDS.jsonl   # every candidate + margin
    python -m eval.grammar deltas --cands CANDS.jsonl --hyp OUT.txt --m2 GOLD.m2 -o DELTAS.jsonl
    python -m eval.grammar tune   --deltas A.jsonl B.jsonl -o settings.json     # cross-validated
    python -m eval.grammar apply  --cands CANDS.jsonl --hyp OUT.txt --settings settings.json -o NEW.txt

``deltas`` scores each candidate alone with ERRANT against the gold edits of its line: the change
in (tp, fp, fn) it makes to the default's output, so margins are tuned without re-running ERRANT
per threshold. ``apply`` writes the step's output for the real ERRANT and bootstrap numbers.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import defaultdict
from pathlib import Path

from editspec.data import m2
from editspec.evaluation.errant import ErrantEvaluator
from editspec.grammar import Candidate, parser as parsing
from editspec.grammar.step import GrammarStep, Judged, Settings

# candidates below these margins are never scored by ERRANT (no threshold goes there: measured on
# the first 200 lines of W&I dev, 181 of 400 candidates were missing articles, 15 right)
FLOOR = {"det_missing": 0.0, "det_unneeded": 0.0, "confusable": 0.0}


def _lines(path) -> list[str]:
    return Path(path).read_text(encoding="utf-8").split("\n")[:-1]


def judge(a) -> None:
    from editspec.grammar.lm import NgramLM

    from spacy.tokens import DocBin

    parser = parsing.InProcess()  # the docs themselves, kept: other LMs judge the same parses
    step = GrammarStep(NgramLM.load(a.lm), Settings(), parser)
    hyps = _lines(a.hyp)
    cache = Path(a.docs) if a.docs else None
    if cache and cache.exists():
        docs = list(DocBin().from_disk(cache).get_docs(parser.nlp.vocab))
    else:
        docs = list(parser.parse(hyps))
        if cache:
            DocBin(docs=docs).to_disk(cache)
    with open(a.output, "w", encoding="utf-8") as f:
        for doc in docs:
            (found,) = step.judged([parsing.found(doc)])
            f.write(json.dumps([[j.candidate.__dict__, round(j.margin, 5)] for j in found]) + "\n")


def _read_cands(path) -> list[list[Judged]]:
    return [[Judged(Candidate(**c), m) for c, m in json.loads(line)]
            for line in Path(path).read_text(encoding="utf-8").splitlines()]


def _best_per_span(found: list[Judged]) -> list[Judged]:
    best: dict = {}
    for j in found:
        key = (j.candidate.start, j.candidate.end, j.candidate.pattern)
        if key not in best or j.margin > best[key].margin:
            best[key] = j
    return list(best.values())


def deltas(a) -> None:
    gold = m2.read_blocks(a.m2)
    hyps, cands = _lines(a.hyp), _read_cands(a.cands)
    if a.settings:  # only what the step would keep (patterns on, then picky's)
        raw = json.loads(Path(a.settings).read_text())
        margins = {**raw["picky"], **raw["margins"]}
        step = GrammarStep.__new__(GrammarStep)
        step.settings = Settings(margins)
        keep = [{(e.start, e.end, e.replacement) for e in step._accept(
            [j for j in found if j.candidate.pattern in margins])} for found in cands]
        todo = [(i, j) for i, found in enumerate(cands) for j in found
                if (j.candidate.start, j.candidate.end, j.candidate.replacement) in keep[i]]
    else:
        todo = [(i, j) for i, found in enumerate(cands) for j in _best_per_span(found)
                if j.margin > FLOOR.get(j.candidate.pattern, -0.05)]
    base = ErrantEvaluator(gold).score(hyps).sentences
    ev = ErrantEvaluator([gold[i] for i, _ in todo])
    outs = [hyps[i][:j.candidate.start] + j.candidate.replacement + hyps[i][j.candidate.end:]
            for i, j in todo]
    res = ev.score(outs).sentences
    with open(a.output, "w", encoding="utf-8") as f:
        for (i, j), (tp, fp, fn) in zip(todo, res):
            b = base[i]
            f.write(json.dumps({"line": i, "pattern": j.candidate.pattern, "margin": j.margin,
                                "dtp": tp - b[0], "dfp": fp - b[1], "dfn": fn - b[2],
                                "cand": j.candidate.__dict__}) + "\n")


def _load_deltas(paths) -> list[dict]:
    rows = []
    for k, p in enumerate(paths):
        for line in Path(p).read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            r["doc"] = f"{k}:{r['line']}"
            rows.append(r)
    return rows


GRID = [x / 400 for x in range(-20, 61)]  # margins -0.05 .. 0.15 (a sentence's ln score: -50 .. -300)


def _pick(rows: list[dict], target: float, min_tp: int) -> float | None:
    """The lowest margin whose kept candidates reach the target precision (None: none does)."""
    for t in GRID:
        kept = [r for r in rows if r["margin"] > t]
        tp, fp = sum(r["dtp"] > 0 for r in kept), sum(r["dtp"] <= 0 for r in kept)
        if tp >= min_tp and tp / max(tp + fp, 1) >= target:
            return t
    return None


def tune(a) -> None:
    rows = _load_deltas(a.deltas)
    docs = sorted({r["doc"] for r in rows})
    random.Random(0).shuffle(docs)
    fold = {d: k % a.folds for k, d in enumerate(docs)}
    by_pattern = defaultdict(list)
    for r in rows:
        by_pattern[r["pattern"]].append(r)
    report, settings = {}, {"margins": {}, "picky": {}, "knots": {}}
    for pattern, prs in sorted(by_pattern.items()):
        tp = fp = 0
        for k in range(a.folds):
            t = _pick([r for r in prs if fold[r["doc"]] != k], a.target, 3)
            if t is None:
                continue
            held = [r for r in prs if fold[r["doc"]] == k and r["margin"] > t]
            tp += sum(r["dtp"] > 0 for r in held)
            fp += sum(r["dtp"] <= 0 for r in held)
        full = _pick(prs, a.target, 3)
        report[pattern] = {"cv_tp": tp, "cv_fp": fp, "cv_precision": round(tp / max(tp + fp, 1), 3),
                           "margin": full}
        if full is not None:
            (settings["margins"] if tp / max(tp + fp, 1) >= 0.40 else settings["picky"])[pattern] = full
            settings["knots"][pattern] = _isotonic(prs)
    print(json.dumps(report, indent=1))
    Path(a.output).write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")


def _isotonic(rows: list[dict]) -> tuple[list[float], list[float]]:
    """Precision as a non-decreasing function of margin (pool adjacent violators), as knots."""
    pts = sorted((r["margin"], float(r["dtp"] > 0)) for r in rows)
    blocks: list[list[float]] = []  # [sum, count, margin_sum]
    for m_, y in pts:
        blocks.append([y, 1, m_])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, c, ms = blocks.pop()
            blocks[-1] = [blocks[-1][0] + s, blocks[-1][1] + c, blocks[-1][2] + ms]
    return [round(b[2] / b[1], 5) for b in blocks], [round(b[0] / b[1], 4) for b in blocks]


def apply(a) -> None:
    settings = Settings.from_file(a.settings)
    if a.patterns:
        settings.margins = {p: v for p, v in {**settings.margins, **json.loads(
            Path(a.settings).read_text())["picky"]}.items() if p in a.patterns}
    step = GrammarStep.__new__(GrammarStep)
    step.settings = settings
    hyps, cands = _lines(a.hyp), _read_cands(a.cands)
    out = [h for h in hyps]
    from editspec.grammar.step import apply_edits

    n = 0
    for i, found in enumerate(cands):
        found = [j for j in found if j.candidate.pattern in settings.margins]
        edits = step._accept(found)
        n += len(edits)
        out[i] = apply_edits(hyps[i], edits)
    Path(a.output).write_text("".join(o + "\n" for o in out), encoding="utf-8")
    print(f"{a.output}: {n} edits")


def ppl(a) -> None:
    """Perplexity per token (</s> included) on held-out lines, one per model file."""
    import lzma
    import math

    from editspec.grammar.lm import NgramLM

    with lzma.open(a.text, "rt", encoding="utf-8") as f:
        lines = [next(f) for _ in range(a.skip + a.lines)][a.skip:]
    for path in a.lm:
        lm = NgramLM.load(path)
        lp = [lm.token_logprobs(__import__("editspec.grammar.lm", fromlist=["tokenize"]).tokenize(s))
              for s in lines]
        n = sum(len(x) for x in lp)
        print(f"{path}: {Path(path).stat().st_size / 1e6:.1f} MB, perplexity {math.exp(-sum(x.sum() for x in lp) / n):.1f} over {n:,} tokens")


def t5(a) -> None:
    """Add each delta row's T5 judgement: log P(variant | source) - log P(output | source), the
    shipped T5's teacher-forced scores (``Corrector.scorer``), the second judge."""
    from editspec.corrector import Corrector

    score = Corrector.from_pretrained().scorer()
    sources, hyps = _lines(a.src), _lines(a.hyp)
    rows = [json.loads(line) for line in Path(a.deltas).read_text(encoding="utf-8").splitlines()]
    variants = [hyps[r["line"]][:r["cand"]["start"]] + r["cand"]["replacement"] + hyps[r["line"]][r["cand"]["end"]:]
                for r in rows]
    srcs = [sources[r["line"]] for r in rows]
    new = score(srcs, variants)
    old = score(srcs, [hyps[r["line"]] for r in rows])
    with open(a.output, "w", encoding="utf-8") as f:
        for r, n, o in zip(rows, new, old):
            f.write(json.dumps({**r, "t5": None if n is None or o is None else n - o}) + "\n")


def main() -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("judge"); s.add_argument("--hyp"); s.add_argument("--lm"); s.add_argument("-o", "--output")
    s.add_argument("--docs", help="a DocBin of the parses: read if there, else written")
    s = sub.add_parser("deltas"); s.add_argument("--cands"); s.add_argument("--hyp"); s.add_argument("--m2")
    s.add_argument("-o", "--output"); s.add_argument("--settings")
    s = sub.add_parser("tune"); s.add_argument("--deltas", nargs="+"); s.add_argument("-o", "--output")
    s.add_argument("--folds", type=int, default=5); s.add_argument("--target", type=float, default=0.5)
    s = sub.add_parser("apply"); s.add_argument("--cands"); s.add_argument("--hyp")
    s.add_argument("--settings"); s.add_argument("--patterns", nargs="*"); s.add_argument("-o", "--output")
    s = sub.add_parser("ppl"); s.add_argument("--lm", nargs="+"); s.add_argument("--text")
    s.add_argument("--lines", type=int, default=2000); s.add_argument("--skip", type=int, default=100000)
    s = sub.add_parser("t5"); s.add_argument("--deltas"); s.add_argument("--src"); s.add_argument("--hyp")
    s.add_argument("-o", "--output")
    a = p.parse_args()
    {"judge": judge, "deltas": deltas, "tune": tune, "apply": apply, "ppl": ppl, "t5": t5}[a.cmd](a)


if __name__ == "__main__":
    main()
