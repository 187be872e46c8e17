"""Measure the edits' confidence (issue 72): decode a gold set once, then fit, bin and sweep.

    python -m eval.confidence decode --m2 GOLD.m2 --out runs/conf/wi.jsonl [--level picky] [--limit N]
    python -m eval.confidence decode --src dev.src --out runs/conf/jfleg.jsonl    # plain sources
    python -m eval.confidence fit runs/conf/fce-dev.jsonl --m2 FCE_DEV.m2 [--write MODEL_DIR]
    python -m eval.confidence bins runs/conf/wi.jsonl --m2 GOLD.m2 [--json OUT] [--plot OUT.png]
    python -m eval.confidence sweep runs/conf/wi.jsonl --m2 GOLD.m2 --thresholds 0 0.3 0.5 [--json OUT]

``decode`` runs ``Corrector.correct_detailed`` (the shipped bundle, or ``--model``) on the set's
sources and keeps each sentence's edits with their raw margins (nats; the cache is decoded output
of a dev set: keep it out of the repository). The calibration used while decoding is
``sigmoid(0.01 * margin)``, so the margin is read back from the 4-place confidence to +-0.04 nats.

``fit``: each edit is scored alone (the source with only that edit made, ERRANT against the gold:
its share of true positives is its label) and an isotonic regression of the label on the margin
gives the calibration's knots; ``--write`` stores them in MODEL_DIR/corrector_config.json.
``bins``: the same labels by bin of the calibrated confidence: count, mean confidence, precision,
and the expected calibration error (ECE, edges 0, 0.1, ..., 1). ``sweep``: ERRANT P/R/F0.5 of the
whole set with only the edits at or above each threshold made (a level's ``min_confidence``; with
``--margins``, of the raw margin: rescoring's margin, -``rescore_margin``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from editspec.confidence import Calibration
from editspec.data.corpora import shown
from editspec.post.diff import Edit, apply

PROBE = 0.01  # the decode's calibration scale: margins read back from confidences


def decode(args) -> None:
    from editspec.corrector import Corrector
    from editspec.evaluation.errant import ErrantEvaluator
    from editspec.evaluation.whole_set import correct_all, read_lines

    sources = ErrantEvaluator.from_m2(args.m2, limit=args.limit).sources if args.m2 else read_lines(args.src)[:args.limit]
    corrector = Corrector.from_pretrained(args.model, mode=args.mode, batch_size=args.batch_size)
    if args.levels:
        corrector.config = corrector.config.replace(levels={**corrector.config.levels, **json.loads(args.levels)})
        corrector.level_of(args.level)
    # a level's own calibration and threshold would hide the probe: the margins of all its edits
    levels = {name: {k: v for k, v in values.items() if k not in ("confidence", "min_confidence")}
              for name, values in corrector.config.levels.items()}
    corrector.config = corrector.config.replace(confidence={corrector.output_kind: [PROBE, 0.0]}, levels=levels)
    found = {}

    def run(texts):
        for c in corrector.correct_detailed(texts, level=args.level):
            found[c.input] = c
        return [found[t].output for t in texts]

    outputs, seconds = correct_all(run, sources, args.batch_size * 4, progress=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        for src, out in zip(sources, outputs):
            edits = [[e.start, e.end, e.original, e.correction, _margin(e.confidence)] for e in found[src].edits]
            f.write(json.dumps({"source": src, "output": out, "edits": edits}) + "\n")
    print(f"{len(sources)} sentences, {seconds:.0f} s decoding, level {corrector.level_of(args.level).name}", file=sys.stderr)


def _margin(conf: float) -> float:
    conf = min(max(conf, 1e-4), 1 - 1e-4)
    return round(math.log(conf / (1 - conf)) / PROBE, 2)


def load(path):
    rows = [json.loads(line) for line in open(path, encoding="utf-8")]
    for r in rows:
        r["edits"] = [(Edit(a, b, o, c), m) for a, b, o, c, m in r["edits"]]
    return rows


def labels(rows, m2_path, cache: str | None = None) -> list[tuple[float, float]]:
    """(margin, share of the edit's ERRANT edits that are true positives) per edit, each scored
    alone (kept in ``cache``.labels.json: the decode's cache file, beside it)."""
    kept = Path(f"{cache}.labels.json") if cache else None
    if kept is not None and kept.is_file() and kept.stat().st_mtime >= Path(cache).stat().st_mtime:
        return [tuple(p) for p in json.loads(kept.read_text())]
    out = _labels(rows, m2_path)
    if kept is not None:
        kept.write_text(json.dumps(out))
    return out


def _labels(rows, m2_path) -> list[tuple[float, float]]:
    from editspec.data import m2
    from editspec.evaluation.errant import ErrantEvaluator

    gold = m2.read_blocks(m2_path, len(rows))
    todo = [(i, e, m) for i, r in enumerate(rows) for e, m in r["edits"]]
    evaluator = ErrantEvaluator([gold[i] for i, _, _ in todo], sources=[rows[i]["source"] for i, _, _ in todo])
    result = evaluator.score([apply(rows[i]["source"], [e]) for i, e, _ in todo])
    out = []
    for (_, _, m), (tp, fp, _) in zip(todo, result.sentences):
        if tp + fp:
            out.append((m, tp / (tp + fp)))
    return out


def fit(args) -> None:
    """Isotonic regression of the labels on the margin, over groups of ``--group`` edits of
    neighbouring margins (a group's median margin, its mean label): knots of ``Calibration``."""
    import numpy as np
    from scipy.optimize import isotonic_regression

    pairs = sorted(labels(load(args.cache), args.m2, args.cache))
    groups = [pairs[k:k + args.group] for k in range(0, len(pairs), args.group)]
    if len(groups) > 1 and len(groups[-1]) < args.group // 2:  # a short last group joins the one before
        groups[-2:] = [groups[-2] + groups[-1]]
    margins = [float(np.median([m for m, _ in g])) for g in groups]
    means = np.array([sum(v for _, v in g) / len(g) for g in groups])
    fitted = isotonic_regression(means, weights=np.array([len(g) for g in groups], float), increasing=True).x
    knots = []
    for m, c in zip(margins, fitted):
        if knots and m <= knots[-1][0]:
            knots[-1][1] = round(float(c), 4)
        else:
            knots.append([round(m, 2), round(float(c), 4)])
    print(json.dumps({"edits": len(pairs), "precision": round(sum(v for _, v in pairs) / len(pairs), 4),
                      "knots": knots}))
    if args.write:
        from editspec.config import CorrectorConfig
        import dataclasses

        config = CorrectorConfig.from_pretrained(args.write)
        if args.level:  # a level's own calibration (``Level.confidence``): its edits' margins
            levels = {**config.levels, args.level: {**config.levels.get(args.level, {}), "confidence": knots}}
            config = dataclasses.replace(config, levels=levels)
        else:
            config = dataclasses.replace(config, confidence={**config.confidence, args.kind: knots})
        print(f"wrote {config.save_pretrained(args.write)}", file=sys.stderr)


EDGES = [k / 10 for k in range(11)]


def calibration(args) -> Calibration:
    """The calibration of ``--model``'s ``--kind``, or its level ``--level``'s own where it has one."""
    from editspec.config import CorrectorConfig

    config = CorrectorConfig.from_pretrained(args.model)
    own = config.level_settings(args.level).confidence if args.level else ()
    return Calibration.of(own or config.confidence.get(args.kind))


def bins(args) -> None:
    pairs = labels(load(args.cache), args.m2, args.cache)
    calibrate = calibration(args)
    table = []
    total, ece = len(pairs), 0.0
    for lo, hi in zip(EDGES, EDGES[1:]):
        inside = [(calibrate(m), v) for m, v in pairs if lo <= calibrate(m) < hi or (hi == 1 and calibrate(m) == 1)]
        if not inside:
            table.append({"bin": [lo, hi], "edits": 0})
            continue
        conf = sum(c for c, _ in inside) / len(inside)
        prec = sum(v for _, v in inside) / len(inside)
        ece += len(inside) / total * abs(conf - prec)
        table.append({"bin": [lo, hi], "edits": len(inside), "confidence": round(conf, 4), "precision": round(prec, 4)})
    report = {"cache": shown(args.cache), "m2": shown(args.m2), "edits": total, "ece": round(ece, 4), "bins": table,
              "calibration": [list(k) for k in calibrate.knots] or [calibrate.scale, calibrate.bias]}
    print(json.dumps(report, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    if args.plot:
        plot([(args.label or Path(args.cache).stem, report)], args.plot)


def plot(reports, out) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], ":", color="grey", label="perfect calibration")
    for name, r in reports:
        pts = [(b["confidence"], b["precision"]) for b in r["bins"] if b["edits"] >= 10]
        ax.plot(*zip(*pts), "o-", label=f"{name} (ECE {r['ece']:.3f})")
    ax.set_xlabel("confidence (bin mean)")
    ax.set_ylabel("precision of the bin's edits (ERRANT)")
    ax.set_xlim(0, 1), ax.set_ylim(0, 1)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def pr_plot(curves, out) -> None:
    """Precision-recall curves: ``curves`` is [(label, [(recall, precision, note or "")])]."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    for label, points in curves:
        line, = ax.plot([r for r, _, _ in points], [p for _, p, _ in points], "o-", label=label, markersize=3)
        for r, p, note in points:
            if note:
                ax.plot([r], [p], "*", markersize=12, color=line.get_color())
                ax.annotate(note, (r, p), textcoords="offset points", xytext=(5, 5), fontsize=8)
    ax.set_xlabel("recall (ERRANT)"), ax.set_ylabel("precision (ERRANT)")
    ax.grid(alpha=.3), ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def sweep(args) -> None:
    from editspec.evaluation.errant import ErrantEvaluator

    rows = load(args.cache)
    calibrate = calibration(args)
    evaluator = ErrantEvaluator.from_m2(args.m2, limit=len(rows))
    out = []
    for t in args.thresholds:
        value = (lambda m: m) if args.margins else calibrate
        hyps = [apply(r["source"], [e for e, m in r["edits"] if value(m) >= t]) for r in rows]
        result = evaluator.score(hyps)
        p, r_, f = result.scores()
        out.append({"threshold": t, "precision": p, "recall": r_, "f0.5": f, "tp": result.tp, "fp": result.fp,
                    "fn": result.fn})
        print(json.dumps(out[-1]), flush=True)
        if args.save_hyp:
            Path(f"{args.save_hyp}.{t:g}.txt").write_text("".join(h + "\n" for h in hyps), encoding="utf-8")
    if args.json:
        Path(args.json).write_text(json.dumps({"cache": shown(args.cache), "m2": shown(args.m2), "sweep": out}, indent=1) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("decode")
    d.add_argument("--m2"), d.add_argument("--src"), d.add_argument("--out", required=True)
    d.add_argument("--limit", type=int), d.add_argument("--model"), d.add_argument("--mode")
    d.add_argument("--level"), d.add_argument("--batch-size", type=int, default=16)
    d.add_argument("--levels", help='levels\' settings as JSON, over the model\'s: {"picky": {"copy_penalty": 2}}')
    for name in ("fit", "bins", "sweep"):
        q = sub.add_parser(name)
        q.add_argument("cache"), q.add_argument("--m2", required=True)
        q.add_argument("--model", default=str(Path(__file__).resolve().parent.parent / "editspec/models/default"))
        q.add_argument("--kind", default="t5")
        q.add_argument("--level", help="a level's own calibration (fit --write: stored in its levels entry)")
        if name == "fit":
            q.add_argument("--write"), q.add_argument("--group", type=int, default=80)
        if name == "bins":
            q.add_argument("--json"), q.add_argument("--plot"), q.add_argument("--label")
        if name == "sweep":
            q.add_argument("--thresholds", type=float, nargs="+", default=[0.0, 0.3, 0.4, 0.5, 0.6, 0.7])
            q.add_argument("--json"), q.add_argument("--save-hyp")
            q.add_argument("--margins", action="store_true", help="thresholds on the raw margin (nats), not the confidence")
    args = p.parse_args()
    if args.cmd == "decode" and not (args.m2 or args.src):
        p.error("decode needs --m2 or --src")
    {"decode": decode, "fit": fit, "bins": bins, "sweep": sweep}[args.cmd](args)


if __name__ == "__main__":
    main()
