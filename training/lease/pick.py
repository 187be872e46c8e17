"""``pick`` (here, right after ``join``): ERRANT picks the lease's candidate, the paired bootstrap decides.

The device ranks its fine-tune's checkpoints by an approximate F0.5 (no spaCy there) and brings the
best ``candidates`` back (runs/lease-bundle/t5, t5-2, ...). Here each runs the shipped pipeline::

    python -m training.lease pick runs/lease-bundle [--ship]
      each candidate shipped into a copy of the shipped bundle (its corrector_config: spelling,
      rescoring; its tokenizer; no EdiT5) -> `editspec eval --mode t5` on all of W&I dev -> ERRANT
      the best F0.5 against the shipped T5: paired bootstrap of candidate minus shipped
      -> reports/lease-candidates.md (a row a candidate), the lease log's last row's ERRANT column
      --ship: the chosen T5 into editspec/models/default/t5 when p < 0.05 / k (Bonferroni over the
         k candidates looked at: the best of k on one set is a little lucky)
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

from editspec.data.corpora import data_dir as default_data_dir
from editspec.errors import EditspecError
from editspec.modeling.loading import DEFAULT_MODEL
from training.lease.join import PENDING
from training.lease.plan import REPO_ROOT
from training.lease.shards import sha256

WI_DEV = "wi_locness/ABCN.dev.gold.bea19.m2"
RECORD = REPO_ROOT / "reports" / "lease-candidates.md"
HEADER = ("| date | candidate | approx F0.5 on the device (step) | W&I dev F0.5 (P / R) | shipped T5 "
          "| candidate - shipped [95%] | p | picked |\n|---|---|---|---|---|---|---:|---|\n")


def candidates(bundle: Path) -> list[Path]:
    """t5/, t5-2/, ... of a joined lease bundle, in the device's order."""
    found = [bundle / "t5"] + sorted((p for p in bundle.glob("t5-*") if p.name[3:].isdigit()),
                                     key=lambda p: int(p.name[3:]))
    return [p for p in found if (p / "config.json").is_file()]


def candidate_bundle(model: Path, dest: Path) -> Path:
    """``model`` as the T5 of a copy of the shipped bundle (its run-time settings and tokenizer, no EdiT5)."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(DEFAULT_MODEL, dest, ignore=shutil.ignore_patterns("edit5", "t5"))
    subprocess.run([sys.executable, "-m", "training.ship", str(model), str(dest / "t5")], cwd=REPO_ROOT, check=True)
    return dest


def evaluate(bundle: Path, hyp: Path, gold: Path) -> dict:
    """`editspec eval --mode t5` of a bundle on W&I dev: its scores; the outputs into ``hyp``. Kept
    outputs are reused only for the same gold file, T5 weights and run-time settings."""
    done = hyp.with_suffix(".json")
    stamp = {"gold": sha256(gold), "t5": sha256(bundle / "t5" / "model.safetensors"),
             "settings": sha256(bundle / "corrector_config.json"), "code": code_hash()}
    if done.is_file() and hyp.is_file():  # a bundle's outputs do not change: the shipped T5's are kept
        kept = json.loads(done.read_text())
        if kept.get("stamp") == stamp:
            return kept["result"]
    hyp.parent.mkdir(parents=True, exist_ok=True)
    got = subprocess.run([sys.executable, "-m", "editspec", "eval", "--model", str(bundle), "--mode", "t5",
                          "--m2", str(gold), "--json", "--no-progress", "--save-hyp", str(hyp)],
                         cwd=REPO_ROOT, check=True, capture_output=True, text=True)
    result = json.loads(got.stdout)
    done.write_text(json.dumps({"stamp": stamp, "result": result}) + "\n")
    return result


def code_hash() -> str:
    """The package's code (decoding, spelling, rescoring...): kept outputs of other code are stale."""
    h = hashlib.sha256()
    for path in sorted((REPO_ROOT / "editspec").rglob("*.py")):
        h.update(path.read_bytes())
    return h.hexdigest()


def scores(result) -> dict[str, float]:
    return {k: 100 * v for k, v in zip(("precision", "recall", "f0.5"), result.scores())}


def pick(bundle: Path, data: Path | None = None, work: Path | None = None, shipped: Path = DEFAULT_MODEL) -> dict:
    """Every candidate of ``bundle`` through the shipped pipeline on W&I dev; the best against ``shipped``."""
    from editspec.evaluation.errant import ErrantEvaluator  # spaCy loads only when a pick runs
    from editspec.evaluation.whole_set import read_lines
    from editspec.evaluation.stats import paired_bootstrap

    found = candidates(bundle)
    if not found:
        raise EditspecError(f"{bundle} holds no T5 candidate (t5/, t5-2/, ...): run `python -m training.lease join` "
                            f"first")
    gold = default_data_dir(data) / WI_DEV
    work = work or bundle.with_name(bundle.name + "-pick")
    evaluator = ErrantEvaluator.from_m2(str(gold))
    base_hyp = REPO_ROOT / "runs" / "eval-shipped" / "wi_dev.t5.txt"
    evaluate(shipped, base_hyp, gold)
    base = evaluator.score(read_lines(base_hyp))
    rows = []
    for model in found:
        hyp = work / model.name / "wi_dev.t5.txt"
        evaluate(candidate_bundle(model, work / model.name / "bundle"), hyp, gold)
        result = evaluator.score(read_lines(hyp))
        trained = json.loads((model / "training.json").read_text()) if (model / "training.json").is_file() else {}
        approx = trained.get("score", trained.get("best") if trained.get("select_on") == "approx_f05" else None)
        rows.append({"candidate": model.name, "scores": scores(result), "bootstrap": paired_bootstrap(base, result),
                     "device": {"step": trained.get("step"), "approx_f05": approx}})
    best = max(rows, key=lambda r: r["scores"]["f0.5"])
    best["picked"] = True
    threshold = 0.05 / len(rows)
    summary = {"shipped": scores(base), "candidates": rows, "picked": best["candidate"], "threshold": threshold,
               "ship": best["bootstrap"]["p"] < threshold and best["bootstrap"]["delta"] > 0}
    write_rows(summary)
    return summary


def write_rows(summary: dict) -> None:
    if not RECORD.exists():
        RECORD.write_text("# Lease candidates, judged here\n\nOne row per candidate a lease brought back "
                          "(`python -m training.lease pick`): its approximate F0.5 on the device, then all of "
                          "W&I dev through `editspec eval --mode t5` (spelling and rescoring as shipped) "
                          "against the shipped T5, the paired bootstrap of candidate minus shipped. The "
                          "best F0.5 is picked; it ships when p < 0.05 / (candidates).\n\n" + HEADER)
    s = summary["shipped"]
    with open(RECORD, "a", encoding="utf-8") as f:
        for r in summary["candidates"]:
            c, b, d = r["scores"], r["bootstrap"], r["device"]
            device = f"{d['approx_f05']:.2f} ({d['step']})" if isinstance(d.get("approx_f05"), float) else "?"
            f.write(f"| {date.today().isoformat()} | {r['candidate']} | {device} | {c['f0.5']:.2f} "
                    f"({c['precision']:.2f} / {c['recall']:.2f}) | {s['f0.5']:.2f} | {100 * b['delta']:+.2f} [{100 * b['ci95'][0]:+.2f}, "
                    f"{100 * b['ci95'][1]:+.2f}] | {b['p']:.3f} | {'yes' if r.get('picked') else ''} |\n")


def fill_lease_log(log: Path, summary: dict) -> bool:
    """The lease log's last row, whose ERRANT column says pending: the candidates' W&I dev F0.5."""
    if not log.is_file():
        return False
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    last = max((i for i, line in enumerate(lines) if line.rstrip().endswith(PENDING)), default=None)
    if last is None:
        return False
    figures = "; ".join(f"{r['candidate']} {r['scores']['f0.5']:.2f} (P {r['scores']['precision']:.2f} / R "
                        f"{r['scores']['recall']:.2f})" for r in summary["candidates"])
    b = next(r for r in summary["candidates"] if r.get("picked"))["bootstrap"]
    verdict = (f"{figures}; picked {summary['picked']}: {100 * b['delta']:+.2f} against the shipped "
               f"{summary['shipped']['f0.5']:.2f}, p = {b['p']:.3f}: {'shipped' if summary['ship'] else 'not shipped'}")
    lines[last] = lines[last].rstrip().removesuffix(PENDING) + f"| {verdict} |\n"
    log.write_text("".join(lines), encoding="utf-8")
    return True


def main(bundle: Path, data: Path | None, log: Path, ship: bool) -> dict:
    summary = pick(bundle, data)
    fill_lease_log(log, summary)
    print(json.dumps(summary, indent=1))
    if ship and summary["ship"]:
        subprocess.run([sys.executable, "-m", "training.ship", str(bundle / summary["picked"]),
                        str(DEFAULT_MODEL / "t5")], cwd=REPO_ROOT, check=True)
        print(f"shipped {bundle / summary['picked']} as {DEFAULT_MODEL / 't5'}: re-measure the README's quality "
              f"and speed tables and the model card before committing it")
    elif ship:
        print(f"not shipped: {summary['picked']} is not better beyond noise (p >= {summary['threshold']:.3f})")
    return summary
