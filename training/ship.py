"""Copy a trained model directory into the package's default bundle, in bf16.

    python -m training.ship runs/t5-small/best editspec/models/default/t5
    python -m training.ship runs/edit5-small/best editspec/models/default/edit5
    python -m training.ship T5_SRC BUNDLE/t5 EDIT5_SRC BUNDLE/edit5     # several, in order, one process

bf16 halves the size (the issue caps the shipped pair at 60 MB); ``Corrector`` computes in
``precision.default_dtype`` (fp32; ``--dtype bfloat16`` asks for bf16).
The training metadata (training.json: step, dev score, max_length) travels with the weights, and a
T5's ``generation_config.json`` gets the length a whole correction needs (``budgets.complete_generation``:
transformers' ``generate(**inputs)`` otherwise stops at 20 tokens).
Replacing a shipped model keeps the EdiT5 confidence biases its ``config.json`` was tuned to
(``RUN_TIME``, set by ``eval/tune_confidence.py``): a training checkpoint has none. The bundle's
other run-time settings (guard, rounds, spelling, rescoring) live in its ``corrector_config.json``
beside the models, which shipping weights does not touch. The tokenizer is always written beside the
weights: a shipped folder is a whole checkpoint, so transformers' ``AutoTokenizer`` and CTranslate2's
converter read it as it is (issue 71: without it both fell back to a placeholder vocabulary, silently).
"""

import argparse
import json
import shutil
from pathlib import Path

import torch
from transformers import T5ForConditionalGeneration

from editspec.decoding.budgets import complete_generation
from editspec.modeling.loading import model_type as checkpoint_type, trained_length
from editspec.modeling.modeling_edit5 import EdiT5Model
from editspec.tokenization.tokens import load_tokenizer

RUN_TIME = ("keep_bias", "order_bias", "stop_bias")


def keep_run_time(dest: Path, config) -> dict:
    """Copy onto ``config`` the run-time settings of the model ``dest`` holds now; return them."""
    old = dest / "config.json"
    kept = {k: v for k, v in json.loads(old.read_text()).items() if k in RUN_TIME} if old.is_file() else {}
    for key, value in kept.items():
        setattr(config, key, value)
    return kept


def bundle_encoder(model: EdiT5Model, dest: Path) -> str:
    """Where a shipped EdiT5 whose heads sit on a T5's encoder finds it: the bundle's own T5
    (``../t5``), which must hold the very encoder the heads were trained on."""
    sibling = dest.parent / "t5"
    if not (sibling / "config.json").is_file():
        raise SystemExit(f"the EdiT5 sits on a T5's encoder: ship that T5 to {sibling} first")
    t5 = T5ForConditionalGeneration.from_pretrained(sibling, dtype=torch.bfloat16)
    ours = model.encoder.state_dict()
    if any(not torch.equal(w, ours[k].to(w.dtype)) for k, w in t5.encoder.state_dict().items()):
        raise SystemExit(f"the T5 in {sibling} has another encoder than the one the EdiT5 was trained on")
    return "../t5"


def ship(src: Path, dest: Path) -> None:
    model_type = checkpoint_type(src)  # "t5" or "edit5", a one-line error for anything else
    cls = T5ForConditionalGeneration if model_type == "t5" else EdiT5Model
    model = cls.from_pretrained(src, dtype=torch.float32).to(torch.bfloat16)
    kept = keep_run_time(dest, model.config)
    if getattr(model.config, "t5_encoder", None):
        model.config.t5_encoder = bundle_encoder(model, dest)
    if model_type == "t5":  # transformers' generate() completes a correction with the saved settings
        complete_generation(model, trained_length(str(src)))
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    load_tokenizer(src).save_pretrained(tmp)
    if (src / "training.json").exists():
        shutil.copy(src / "training.json", tmp / "training.json")
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    size = sum(f.stat().st_size for f in dest.iterdir()) / 1e6
    print(f"shipped {model_type} ({sum(p.numel() for p in model.parameters()) / 1e6:.1f}M "
          f"parameters) to {dest}: {size:.1f} MB"
          + (f"; kept its run-time settings {kept}" if kept else ""))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paths", type=Path, nargs="+", metavar="SRC DEST",
                   help="a trained model directory and where it ships; several pairs ship in order")
    args = p.parse_args()
    if len(args.paths) % 2:
        p.error("give SRC DEST pairs")
    for src, dest in zip(args.paths[::2], args.paths[1::2]):
        ship(src, dest)


if __name__ == "__main__":
    main()
