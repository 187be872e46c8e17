"""Average the weights of checkpoints of one model (checkpoint averaging, as in Vaswani et al. 2017).

    python -m training.average runs/avg runs/t5j/last runs/t5k/last

The checkpoints must share an architecture (the ends of successive fine-tuning cycles of one
run, say); the result is a model directory like its inputs, with the last input's config and
tokenizer, in the dtype of the inputs (the mean is taken in fp32). Its training.json is the last
input's plus ``averaged_from`` (the input directories), so a shipped average says what it is. The
shipped T5s of earlier stops are in the git history
(``git show REV:editspec/models/default/t5/model.safetensors``); the README says what
averaging them measured.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from safetensors.torch import load_file, save_file


def average(sources: list[Path], dest: Path) -> None:
    states = [load_file(src / "model.safetensors") for src in sources]
    if any(s.keys() != states[0].keys() for s in states):
        raise SystemExit("average: the checkpoints hold different weights (not one architecture)")
    mean = {k: (sum(s[k].float() for s in states) / len(states)).to(states[-1][k].dtype) for k in states[0]}
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for f in sources[-1].iterdir():
        if f.is_file() and f.name not in ("model.safetensors", "training.json"):
            shutil.copy(f, tmp / f.name)
    info = sources[-1] / "training.json"
    meta = json.loads(info.read_text()) if info.is_file() else {}
    (tmp / "training.json").write_text(json.dumps({**meta, "averaged_from": [str(s) for s in sources]}))
    save_file(mean, tmp / "model.safetensors", metadata={"format": "pt"})
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dest", type=Path)
    p.add_argument("sources", type=Path, nargs="+", help="model directories (model.safetensors inside)")
    args = p.parse_args()
    average(args.sources, args.dest)
    print(f"averaged {len(args.sources)} checkpoints into {args.dest}")


if __name__ == "__main__":
    main()
