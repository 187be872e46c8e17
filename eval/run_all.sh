#!/usr/bin/env bash
# Every standard dev evaluation of one model bundle, in every mode it supports, plus the
# no-change baseline; writes one JSON (and the outputs) per set and mode, then summary.{json,md}.
#
#   eval/run_all.sh MODEL_DIR OUT_DIR [MODE ...]      (modes default: those the bundle has)
#
# Environment: DATA (default ../shared/data beside the repo), LIMIT (first N sentences of each
# set), DEVICE, DTYPE (float32 or bfloat16; default: editspec's), BATCH_SIZE (16), PYTHON
# (.venv/bin/python if present, else python3).
# Sets: W&I+LOCNESS dev (ERRANT), FCE test (ERRANT; never used for selection or tuning),
# CoNLL-2013 (ERRANT spans on NUCLE's edits, not the M2Scorer numbers CoNLL papers report),
# JFLEG dev (GLEU, plus ERRANT on dev.ref.m2).
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n 2,12p "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
MODEL=$1 OUT=$2
shift 2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA=${DATA:-$ROOT/../shared/data}
PYTHON=${PYTHON:-$( [ -x "$ROOT/.venv/bin/python" ] && echo "$ROOT/.venv/bin/python" || echo python3 )}
BATCH_SIZE=${BATCH_SIZE:-16}
MODES=("$@")
if [ ${#MODES[@]} -eq 0 ]; then
  [ -d "$MODEL/edit5" ] && MODES+=(edit5)
  [ -d "$MODEL/t5" ] && MODES+=(t5)
  [ -d "$MODEL/edit5" ] && [ -d "$MODEL/t5" ] && MODES+=(speculative)
  [ ${#MODES[@]} -gt 0 ] || { echo "run_all: no edit5/ or t5/ in $MODEL" >&2; exit 2; }
fi
mkdir -p "$OUT"

J=$DATA/jfleg_dev
declare -A SETS=(
  [wi_dev]="--m2 $DATA/wi_locness/ABCN.dev.gold.bea19.m2"
  [fce_test]="--m2 $DATA/fce/fce.test.gold.bea19.m2"
  [conll2013]="--m2 $DATA/conll2013/official_2013-preprocessed.m2"
  [jfleg_dev]="--src $J/dev.src --refs $J/dev.ref0 $J/dev.ref1 $J/dev.ref2 $J/dev.ref3 --m2 $J/dev.ref.m2"
)
COMMON=(--json ${LIMIT:+--limit "$LIMIT"})
MODEL_OPTS=(--model "$MODEL" --batch-size "$BATCH_SIZE" ${DEVICE:+--device "$DEVICE"} ${DTYPE:+--dtype "$DTYPE"})

for set in wi_dev fce_test conll2013 jfleg_dev; do
  read -r -a args <<< "${SETS[$set]}"
  # the no-change baseline: outputs = detokenized sources (must score 0 TP and 0 FP)
  "$PYTHON" - "${args[1]}" > "$OUT/$set.identity.txt" <<'PY'
import sys
from editspec.data.m2 import read_blocks, source_tokens
from editspec.data.tokenized import detokenize
path = sys.argv[1]
tokens = ([line.split() for line in open(path, encoding="utf-8")] if not path.endswith(".m2")
          else [source_tokens(b) for b in read_blocks(path)])
sys.stdout.write("".join(detokenize(" ".join(t)) + "\n" for t in tokens))
PY
  "$PYTHON" -m editspec eval "${args[@]}" "${COMMON[@]}" --hyp "$OUT/$set.identity.txt" \
    > "$OUT/$set.identity.part" && mv "$OUT/$set.identity.part" "$OUT/$set.identity.json"
  for mode in "${MODES[@]}"; do
    echo "run_all: $set $mode" >&2
    "$PYTHON" -m editspec eval "${args[@]}" "${COMMON[@]}" "${MODEL_OPTS[@]}" --mode "$mode" \
      --save-hyp "$OUT/$set.$mode.txt" --save-m2 "$OUT/$set.$mode.m2" > "$OUT/$set.$mode.part"
    mv "$OUT/$set.$mode.part" "$OUT/$set.$mode.json"  # only finished reports are summarized
  done
done
"$PYTHON" "$ROOT/eval/summarize.py" "$OUT" --model "$MODEL"
cat "$OUT/summary.md"
