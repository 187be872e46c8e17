"""Train T5 or EdiT5 for GEC from a YAML recipe, on CPU or on GPUs with accelerate: the loop.

    python -m training.train --config configs/t5-small-cpu-pretrain.yaml --output-dir runs/t5-pre
    python -m training.train --config configs/t5-small-cpu-finetune.yaml --init-from runs/t5-pre/best
    accelerate launch --multi_gpu --num_processes 4 -m training.train --config configs/t5-base.yaml ...
    torchrun --standalone --nproc_per_node 2 -m training.train ...   (also on CPU: gloo)

The recipe (training.config), the model (training.models), the data as ready tensors
(training.data), checkpoints (training.checkpoints), the time budget (training.budget) and dev
evaluation (training.dev) live in modules of their own; this file is the loop. Each step copies a
ready batch to the device, runs forward and backward, and steps a fused AdamW; the loss stays on
the device and is read every ``log_every`` steps, so the host never waits for the GPU in between.

What the output directory holds::

    config.yaml            the resolved recipe
    log.jsonl              one JSON object per log/eval event (step, loss, lr, tokens/s, data wait, dev ...)
    checkpoints/step-N/    accelerate state (model, optimizer, scheduler, RNG) + data position
    best/                  model + tokenizer of the best dev score (F0.5 > approximate F0.5 > loss)
    last/                  model + tokenizer at the end of training (or at --stop-after)
    stable/                model + tokenizer where the decay starts (schedule warmup_stable_decay)
    ema/                   the weights' moving average at the end (train.ema_decay)

Running the same command again resumes from the newest complete checkpoint: model, optimizer,
scheduler, RNG states and the data position (``data_mixture.Position``) are restored, so the
resumed run sees the same batches, in the same order, as an uninterrupted one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

import torch
import yaml
from accelerate import Accelerator
from accelerate.utils import set_seed
from tqdm.auto import tqdm
from transformers import get_scheduler
from transformers.utils import logging as hf_logging

from editspec.data import corpora
from editspec.modeling.tensors import IGNORE
from editspec.tokenization.tokens import load_tokenizer
from training.budget import Budget
from training.checkpoints import TrainState, batch_hash, checkpoints, ema_of, export
from training.config import REPO_ROOT, ConfigLoader, load_config
from training.data import Batches, build_dev, tokenizer_path
from training.dev import dev_approx_f05, dev_f05, dev_loss
from training.models import ModelKind, add_position_prior, component_losses, param_groups


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True, help="YAML recipe (configs/*.yaml)")
    p.add_argument("--output-dir", help="where checkpoints, logs and best/ go (default runs/<config name>)")
    p.add_argument("--data-dir", help="corpus folder (default $EDITSPEC_DATA or ../shared/data)")
    p.add_argument("--max-steps", type=int, help="override train.max_steps (also the LR schedule length)")
    p.add_argument("--init-from", help="start from this model directory (a previous stage's best/)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a recipe option, e.g. train.lr=3e-4 (repeatable)")
    p.add_argument("--stop-after", type=int, metavar="STEP",
                   help="save a checkpoint and stop after this step (the schedule still runs to "
                        "max_steps; run again to go on)")
    p.add_argument("--no-resume", action="store_true", help="ignore existing checkpoints in the output dir")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    overrides = list(args.set)
    if args.max_steps is not None:
        overrides.append(f"train.max_steps={args.max_steps}")
    if args.init_from:
        overrides.append(f"model.init_from={args.init_from}")
    cfg = load_config(args.config, overrides)
    out = Path(args.output_dir or REPO_ROOT / "runs" / Path(args.config).stem)
    return train(cfg, out, args.data_dir, stop_after=args.stop_after, resume=not args.no_resume)


def weighted_loss(logits: torch.Tensor, labels: torch.Tensor, edit_mask: torch.Tensor, weight: float) -> torch.Tensor:
    """Token cross-entropy with the label tokens of edits weighted ``weight`` (the others 1),
    normalised by the total weight: a recall lever for fine-tuning (copying dominates the plain loss)."""
    ce = torch.nn.functional.cross_entropy(logits.float().transpose(1, 2), labels, ignore_index=IGNORE,
                                           reduction="none")  # [batch, target]
    w = (labels != IGNORE).float() * (1 + (weight - 1) * edit_mask.float())
    return (ce * w).sum() / w.sum().clamp(min=1)


def flops_per_token(model: torch.nn.Module) -> tuple[float, float]:
    """Training FLOPs per source and per target token: 6 x the trained parameters each token passes
    through, 2 x the frozen ones (no backward; a frozen encoder under EdiT5 heads); attention's own
    products left out. For the achieved TFLOP/s a lease reports."""
    cfg = model.config
    per = lambda p: (6.0 if p.requires_grad else 2.0) * p.numel()  # noqa: E731
    named = list(model.named_parameters())
    lookup = lambda n: n.startswith("shared.") or n.endswith("embed_tokens.weight")  # noqa: E731  (no arithmetic)
    enc = sum(per(p) for n, p in named if n.startswith("encoder.") and not lookup(n))
    dec = sum(per(p) for n, p in named if not n.startswith("encoder.") and not lookup(n))
    if getattr(cfg, "tie_word_embeddings", False) and not any(n.startswith("lm_head.") for n, _ in named):
        dec += 6.0 * cfg.d_model * cfg.vocab_size  # the output projection, tied to the embedding
    return enc, dec


def train(cfg: dict, out: Path, data_dir: str | None = None, stop_after: int | None = None,
          resume: bool = True) -> dict:
    tc = cfg["train"]
    hf_logging.disable_progress_bar()  # "Writing model shards" bars at every export
    use_cpu = not torch.cuda.is_available()
    accelerator = Accelerator(cpu=use_cpu, mixed_precision=tc["mixed_precision"])
    world, rank, main_proc = accelerator.num_processes, accelerator.process_index, accelerator.is_main_process
    threads = tc["num_threads"] or (max(1, (os.cpu_count() or 1) // world) if use_cpu and world > 1 else None)
    if not threads and not use_cpu and cfg["data"]["workers"]:
        threads = 2  # the GPU does the math: the cores go to the loader and its synthetic workers
    if threads:
        torch.set_num_threads(int(threads))
    set_seed(tc["seed"])
    if not use_cpu:
        torch.backends.cuda.matmul.allow_tf32 = True

    def log(msg: str) -> None:
        if main_proc:
            tqdm.write(f"[train] {msg}", file=sys.stderr)

    out.mkdir(parents=True, exist_ok=True)
    saved = out / "config.yaml"
    if main_proc:
        if resume and checkpoints(out) and saved.is_file():
            before = yaml.load(saved.read_text(encoding="utf-8"), ConfigLoader)
            changed = [f"{section}.{key}" for section in cfg for key in cfg[section]
                       if before.get(section, {}).get(key) != cfg[section][key]]
            if changed:  # the data position means the same batches only under the same data recipe
                log(f"warning: resuming with changed options {', '.join(changed)}")
        saved.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")

    init_from = cfg["model"].get("init_from")
    tok_path = tokenizer_path(cfg)
    tok = load_tokenizer(tok_path)
    kind = ModelKind(cfg["model"]["type"])
    model = kind.build(cfg["model"], tok)
    if tc["position_prior"] and init_from:
        log("position prior skipped: it initialises a model trained from scratch, not one loaded from init_from")
    elif tc["position_prior"]:  # before a resume loads the saved weights, so applied once
        log(f"position prior {tc['position_prior']} on {add_position_prior(model, tc['position_prior'])} bias tables")
    if len(tok) > model.config.vocab_size:
        raise SystemExit(f"tokenizer {tok_path} has {len(tok)} tokens, the model {model.config.vocab_size}")
    edit_weight = float(tc["edit_weight"])
    if edit_weight != 1.0 and kind.name != "t5":
        raise SystemExit("train.edit_weight weighs the T5's label tokens: model.type must be t5")
    log(f"{kind.name}: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters, "
        f"{world} process(es), device {accelerator.device}, mixed precision {tc['mixed_precision']}, "
        f"{torch.get_num_threads()} thread(s)")
    flops_src, flops_tgt = flops_per_token(model)

    data_root = corpora.data_dir(data_dir)
    with accelerator.main_process_first():  # the first process fills the datasets cache, the rest read it
        dev = build_dev(cfg, kind, tok, data_root)

    groups = param_groups(model, tc["lr"], tc["weight_decay"], tc["position_bias_lr_scale"])
    # fused: one kernel for the whole update on a GPU (foreach on the CPU, torch's default there)
    optimizer = torch.optim.AdamW(groups, lr=tc["lr"], betas=tuple(tc["adam_betas"]),
                                  fused=True if not use_cpu else None)

    wsd = tc["schedule"] == "warmup_stable_decay"  # constant, then linear to 0 over the last decay_share

    def decay_steps(total: int) -> int:
        return max(1, round(tc["decay_share"] * total)) if wsd else 0

    def make_scheduler(total: int):  # not prepared: accelerate would step it once per process per step
        return get_scheduler(tc["schedule"], optimizer, num_warmup_steps=tc["warmup_steps"], num_training_steps=total,
                             scheduler_specific_kwargs={"num_decay_steps": decay_steps(total),
                                                        "decay_type": "linear"} if wsd else None)

    scheduler = make_scheduler(tc["max_steps"])
    model, optimizer = accelerator.prepare(model, optimizer)
    state = TrainState()
    accelerator.register_for_checkpointing(scheduler, state)

    found = checkpoints(out) if resume else []
    max_steps = tc["max_steps"]
    budget = Budget(tc["max_minutes"], max_steps)
    if found:
        accelerator.load_state(str(found[-1]))
        log(f"resumed from {found[-1]} (step {state.step})")
        fitted = budget.resume(state.budget, scheduler, make_scheduler)  # the clock and the refitted schedule
        max_steps = min(max_steps, fitted or max_steps)
    ema = ema_of(accelerator.unwrap_model(model), tc["ema_decay"])
    if ema is not None and found and (found[-1] / "ema.pt").is_file():
        ema.load_state_dict(torch.load(found[-1] / "ema.pt", map_location=accelerator.device))

    approx_every = tc["eval_approx_every"]
    select_on = tc["select_on"] or ("f05" if tc["eval_f05_every"] else "approx_f05" if approx_every else "loss")
    log_file = open(out / "log.jsonl", "a", encoding="utf-8") if main_proc else None

    def record(entry: dict) -> None:
        if log_file:
            log_file.write(json.dumps(entry) + "\n")
            log_file.flush()

    def save_model(dest: Path, net: torch.nn.Module | None = None) -> None:
        if main_proc:
            export(net or accelerator.unwrap_model(model), tok, dest,
                   {"step": state.step, "best": state.best, "select_on": select_on, "examples": state.examples})

    def evaluate(f05: bool, approx: bool) -> dict:
        result: dict = {"step": state.step}
        if main_proc and dev is not None:
            net = accelerator.unwrap_model(model)
            net.eval()
            result.update(dev_loss(net, kind, tok, dev, accelerator.device, accelerator.autocast))
            if approx:
                result.update(dev_approx_f05(net, kind, tok, dev, accelerator.autocast, cfg["data"]["max_length"]))
            if f05:
                result.update(dev_f05(net, kind, tok, dev, accelerator.autocast, cfg["data"]["max_length"]))
            net.train()
        accelerator.wait_for_everyone()
        return result

    def maybe_select(result: dict) -> None:
        key = {"f05": "dev_f05", "approx_f05": "dev_approx_f05"}.get(select_on, "dev_loss")
        if key not in result:
            return
        score = -result[key] if key == "dev_loss" else result[key]
        if state.best is None or score > state.best:
            state.best, state.best_step = score, state.step
            save_model(out / "best")
            result["new_best"] = True

    def save_checkpoint() -> None:
        ckpt = out / "checkpoints" / f"step-{state.step}"
        accelerator.save_state(str(ckpt))
        if main_proc:
            if ema is not None:
                torch.save(ema.state_dict(), ckpt / "ema.pt")
            (ckpt / "state.json").write_text(json.dumps(state.state_dict()) + "\n")
            for old in checkpoints(out)[:-max(1, tc["keep_last"])]:
                shutil.rmtree(old, ignore_errors=True)
        accelerator.wait_for_everyone()

    batches = Batches(cfg, data_root, state.position, log)
    per_step = world * tc["grad_accum"]
    end = min(max_steps, stop_after) if stop_after is not None else max_steps
    bar = tqdm(total=end, initial=state.step, disable=not main_proc, desc="train", dynamic_ncols=True)
    model.train()
    last: dict = {}
    zero = lambda: torch.zeros((), device=accelerator.device)  # noqa: E731

    def fresh_window() -> dict:
        return {"loss": zero(), "parts": {}, "n": 0, "tokens": 0, "src": 0, "tgt": 0, "examples": 0,
                "wait": 0.0, "started": time.perf_counter()}

    window = fresh_window()
    try:
        while state.step < end:
            got = []
            for _ in range(per_step):
                batch, waited = batches.next()
                budget.begin()  # the clock starts at the first batch: the data's start-up is not training
                got.append(batch)
                window["wait"] += waited
            mine = got[rank::world]
            for i, ready in enumerate(mine):
                inputs = ready.to(accelerator.device)
                edit_mask = inputs.pop("edit_mask", None)
                sync = i == len(mine) - 1
                with (contextlib.nullcontext() if sync else accelerator.no_sync(model)):
                    if edit_mask is None:
                        output = model(**inputs)
                        loss = output.loss
                    else:  # the model's own (unweighted) loss is not computed: no labels passed
                        labels = inputs.pop("labels")
                        decoder_input_ids = accelerator.unwrap_model(model)._shift_right(labels)
                        output = model(**inputs, decoder_input_ids=decoder_input_ids)
                        loss = weighted_loss(output.logits, labels, edit_mask, edit_weight)
                    accelerator.backward(loss / len(mine))
                window["loss"] += loss.detach() / len(mine)  # stays on the device: no sync
                for k, v in component_losses(output).items():
                    window["parts"][k] = window["parts"].get(k, zero()) + v.detach() / len(mine)
                window["tokens"] += ready.tokens
                window["src"] += ready.source_tokens
                window["tgt"] += ready.target_tokens
                window["examples"] += ready.examples
            if tc["max_grad_norm"]:
                accelerator.clip_grad_norm_(model.parameters(), tc["max_grad_norm"])
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            if ema is not None:
                ema.update_parameters(accelerator.unwrap_model(model))
            state.step += 1
            state.position = got[-1].position
            state.examples += sum(b.examples for b in got)
            window["n"] += 1
            bar.update(1)

            at_log = state.step % tc["log_every"] == 0 or state.step == end
            elapsed = budget.elapsed()
            if world > 1 and at_log:  # every process takes the same decision: the slowest clock
                elapsed = float(accelerator.gather(torch.tensor([elapsed], device=accelerator.device)).max())
            if world == 1 or at_log:
                new_end = budget.check(state.step, elapsed, scheduler, make_scheduler, log)
                if new_end is not None:  # never past the recipe's max_steps (a refit at its last step asks +1)
                    max_steps = min(max_steps, new_end)
                    end = min(end, max_steps)
                    at_log = at_log or state.step == end  # a stop on time logs its last window
            if tc["log_batches"]:
                record({"step": state.step, "batches": batch_hash([b.ids for b in got]), "n_batches": len(got),
                        "loss_local": float(loss.detach())})
            if at_log:
                # the one sync of the window: the losses, summed over processes
                stats = torch.stack([window["loss"], *window["parts"].values()]).double()
                stats = accelerator.reduce(stats, reduction="sum").tolist()
                counts = accelerator.reduce(torch.tensor([window["tokens"], window["src"], window["tgt"],
                                                          window["examples"]], dtype=torch.float64,
                                                         device=accelerator.device), reduction="sum").tolist()
                n, secs = window["n"], max(time.perf_counter() - window["started"], 1e-9)
                last = {"step": state.step, "loss": stats[0] / world / n,
                        **{k: v / world / n for k, v in zip(window["parts"], stats[1:])},
                        "lr": scheduler.get_last_lr()[0], "tokens_per_s": counts[0] / secs,
                        "examples_per_s": counts[3] / secs, "steps_per_s": n / secs,
                        "tflops": (flops_src * counts[1] + flops_tgt * counts[2]) / secs / 1e12,
                        "data_wait": window["wait"] / secs, "examples": state.examples,
                        "position": state.position.state_dict()}
                record(last)
                bar.set_postfix(loss=f"{last['loss']:.3f}", ex_s=f"{last['examples_per_s']:.0f}",
                                wait=f"{last['data_wait']:.0%}")
                window = fresh_window()
            do_f05 = bool(tc["eval_f05_every"]) and (state.step % tc["eval_f05_every"] == 0 or state.step == max_steps)
            do_approx = bool(approx_every) and (state.step % approx_every == 0 or state.step == max_steps)
            do_loss = bool(tc["eval_every"]) and (state.step % tc["eval_every"] == 0 or state.step == max_steps)
            t_pause = time.perf_counter()
            with budget.paused():  # evaluating and saving are not training time, nor step time
                if wsd and state.step == max_steps - decay_steps(max_steps) and main_proc:
                    save_model(out / "stable")  # the stable phase's end: what the next run continues
                if dev is not None and (do_loss or do_f05 or do_approx):
                    result = evaluate(do_f05, do_approx)
                    if main_proc:
                        maybe_select(result)
                        record(result)
                        log(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in result.items()))
                if state.step % tc["save_every"] == 0 or state.step in (max_steps, stop_after):
                    state.budget = budget.state()
                    save_checkpoint()
            window["started"] += time.perf_counter() - t_pause
    finally:
        batches.close()
    bar.close()
    if state.step >= end:
        save_model(out / "last")  # also at --stop-after: a model directory of the newest weights
        if wsd and state.step >= max_steps and not (out / "stable").exists() and main_proc:
            log("stopped before the decay began: stable/ is the last model")  # a series never loses a run
            shutil.copytree(out / "last", out / "stable")
        if ema is not None:  # the weights' average, scored like the checkpoints (a lever to measure)
            save_model(out / "ema", ema.module)
            if dev is not None and approx_every and main_proc:
                ema.module.eval()
                scored = dev_approx_f05(ema.module, kind, tok, dev, accelerator.autocast, cfg["data"]["max_length"])
                record({"step": state.step, **{f"ema_{k}": v for k, v in scored.items()}})
    if state.step >= max_steps:
        if dev is None or not (out / "best").exists():
            save_model(out / "best")  # nothing to select on: the final model is the best we know
    accelerator.wait_for_everyone()
    if log_file:
        log_file.close()
    accelerator.end_training()
    return {"step": state.step, "last": last, "best": state.best, "best_step": state.best_step,
            "examples": state.examples}


if __name__ == "__main__":
    main()
