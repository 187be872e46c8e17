#!/usr/bin/env bash
# The default pair, from scratch, on one GPU in about 20 minutes (a lease is 30): two chains share
# the GPU, each training leaves it mostly idle (14M-parameter models), synthetic data comes from
# 6 CPU workers each (data.workers in the configs).
#
#   T5:    synthetic pre-training (T5_PRE min) -> W&I + FCE fine-tune (T5_FT min) -> distillation
#   EdiT5: synthetic pre-training (EDIT5_PRE min, until the T5's distilled pairs are ready)
#          -> fine-tune on the T5's corrections (EDIT5_FT min; on W&I + FCE if distillation failed)
#
#   bash training/gpu_pipeline.sh runs/gpu          # data: $EDITSPEC_DATA or ../shared/data
#   bash training/gpu_pipeline.sh runs/try --set data.batch_tokens=2048   # extra options: every stage
#
# Each stage ends by the clock (train.max_minutes) with its LR schedule fitted to that time.
# Writes OUT/{t5,edit5}-{pre,ft}/, OUT/distill/, OUT/ship/{t5,edit5} (bf16, ready for
# editspec/models/default) and OUT/*.log; OUT/t5.done and OUT/edit5.done mark finished chains.
set -euo pipefail
out=${1:-runs/gpu}
shift || true
T5_PRE=${T5_PRE:-9} T5_FT=${T5_FT:-3} EDIT5_PRE=${EDIT5_PRE:-14} EDIT5_FT=${EDIT5_FT:-2.5}
mkdir -p "$out"
train() { python3 -m training.train "$@" "${extra[@]}"; }
extra=("$@")

t5_chain() {
    train --config configs/t5-small-gpu-pretrain.yaml --output-dir "$out/t5-pre" --set train.max_minutes="$T5_PRE"
    train --config configs/t5-small-gpu-finetune.yaml --init-from "$out/t5-pre/best" --output-dir "$out/t5-ft" \
        --set train.max_minutes="$T5_FT"
    python3 -m training.ship "$out/t5-ft/best" "$out/ship/t5"
    touch "$out/t5.done"
    python3 -m training.distill "$out/t5-ft/best" --mode t5 --batch-size 512 --out "$out/distill" \
        --m2 wi_locness/ABC.train.gold.bea19.m2 fce/fce.train.gold.bea19.m2
}

edit5_chain() {
    train --config configs/edit5-small-gpu-pretrain.yaml --output-dir "$out/edit5-pre" \
        --set train.max_minutes="$EDIT5_PRE"
    while [ ! -f "$out/distill/target.txt" ] && kill -0 "$t5_pid" 2>/dev/null; do  # the T5 chain's last product
        sleep 5
    done
    local sources=()  # none: the config's gold W&I + FCE
    if [ -f "$out/distill/target.txt" ]; then
        local d; d=$(cd "$out/distill" && pwd)
        sources=(--set "data.sources=[{name: distill, type: parallel, source: $d/source.txt, target: $d/target.txt}]")
    else  # distillation needs spaCy (editspec.segment); without it the EdiT5 learns the gold edits
        echo "no distilled pairs (see $out/t5.log): the EdiT5 fine-tunes on W&I + FCE" >&2
    fi
    train --config configs/edit5-small-gpu-distill.yaml --init-from "$out/edit5-pre/best" \
        --output-dir "$out/edit5-ft" --set train.max_minutes="$EDIT5_FT" "${sources[@]}"
    python3 -m training.ship "$out/edit5-ft/best" "$out/ship/edit5"
    touch "$out/edit5.done"
}

t5_chain > "$out/t5.log" 2>&1 &
t5_pid=$!
edit5_chain > "$out/edit5.log" 2>&1 &
edit5_pid=$!
status=0
wait "$t5_pid" || { echo "T5 chain failed: $out/t5.log" >&2; status=1; }
wait "$edit5_pid" || { echo "EdiT5 chain failed: $out/edit5.log" >&2; status=1; }
exit $status
