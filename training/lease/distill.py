"""``python -m training.lease.distill T5 --m2 A.m2 B.m2 --out DIR``: a T5's greedy corrections of
M2 sources, made on the lent GPU, for EdiT5 heads that follow that T5.

``training.distill`` runs the whole ``Corrector`` (spaCy's sentence splitter, the spelling step),
which the lent machine lacks. The heads need the T5's own corrections of the training sentences:
greedy, one M2 sentence at a time (they are sentences already), in bf16 batches on the GPU
(``training.dev.correct_fn_for``, the decoder the dev F0.5 uses). The sources are read as written,
without the spelling step. Writes DIR/source.txt and DIR/target.txt, line-aligned, for a
``type: parallel`` data source; a plan stage (``module: training.lease.distill``) writes them under
the lease's data folder, where the heads stage reads them.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from transformers import T5ForConditionalGeneration

from editspec.data.corpora import data_dir as default_data_dir, read_m2
from editspec.files import atomic_output
from editspec.modeling.t5 import default_device
from editspec.tokenization.tokens import load_tokenizer
from training.dev import correct_fn_for
from training.models import ModelKind


def distill(t5_dir: Path, m2_files: list[str], out: Path, data: Path, max_length: int = 128,
            limit: int | None = None) -> int:
    device = default_device()
    tok = load_tokenizer(t5_dir)
    net = T5ForConditionalGeneration.from_pretrained(str(t5_dir), dtype=torch.float32).to(device).eval()
    sources = [s for f in m2_files for s in read_m2(str(data / f))["source"]][:limit]
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
    t0 = time.perf_counter()
    with torch.no_grad(), autocast:
        targets = correct_fn_for(net, ModelKind("t5"), tok, max_length)(sources)
    out.mkdir(parents=True, exist_ok=True)
    for name, lines in (("source.txt", sources), ("target.txt", targets)):
        with atomic_output(str(out / name)) as f:
            f.write("".join(line.replace("\n", " ") + "\n" for line in lines).encode("utf-8"))
    changed = sum(s != t for s, t in zip(sources, targets))
    print(f"[distill] {len(sources)} sentences in {time.perf_counter() - t0:.0f} s on {device}; the T5 changed {changed}")
    return len(sources)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m training.lease.distill", description=__doc__.splitlines()[0])
    p.add_argument("t5", type=Path, help="the T5 checkpoint directory")
    p.add_argument("--m2", nargs="+", required=True, help="M2 files, relative to the data directory")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--data-dir", help="default: $EDITSPEC_DATA or ../shared/data")
    p.add_argument("--limit", type=int, help="the first N sentences only")
    args = p.parse_args(argv)
    distill(args.t5, args.m2, args.out, default_data_dir(args.data_dir), limit=args.limit)


if __name__ == "__main__":
    main()
