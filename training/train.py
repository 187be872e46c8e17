"""Train T5 or EdiT5 for GEC from a YAML recipe, on CPU or on GPUs with accelerate: the loop.

    python -m training.train --config configs/t5-small-cpu-pretrain.yaml --output-dir runs/t5-pre
    python -m training.train --config configs/t5-small-cpu-finetune.yaml --init-from runs/t5-pre/best
    accelerate launch --multi_gpu --num_processes 4 -m training.train --config configs/t5-base.yaml ...
    torchrun --standalone --nproc_per_node 2 -m training.train ...   (also on CPU: gloo)

The recipe (training.config), the model (training.models), the T5's loss (training.step), the
data as ready tensors (training.data), checkpoints (training.checkpoints), the time budget
(training.budget) and dev evaluation (training.dev) live in modules of their own; this file is the
``Trainer``: ``run`` is the loop, one named method per phase (``step``, ``end_of_window``,
``evaluate``, ``save_checkpoint``). Each step copies a ready batch to the device, runs forward and
backward (a T5 through ``training.step.T5Loss``: no host read, no logits returned; compiled with
``train.compile``) and steps a fused AdamW; the loss stays on the device and is read every
``log_every`` steps, so the host never waits for the GPU in between.

What the output directory holds::

    config.yaml            the resolved recipe
    log.jsonl              one JSON object per log/eval event (step, loss, lr, tokens/s, data wait, dev ...)
    checkpoints/step-N/    accelerate state (model, optimizer, scheduler, RNG) + data position
    best/                  model + tokenizer of the best dev score (F0.5 > approximate F0.5 > loss)
    ranked/step-N/         with train.keep_best > 1: the models of that many best dev scores
    last/                  model + tokenizer at the end of training (or at --stop-after)
    stable/                model + tokenizer where the decay starts (schedule warmup_stable_decay)
    ema/                   the weights' moving average at the end (train.ema_decay)
    interim/               the newest weights, exported at the step after a file EXPORT appears (a
                           lease's first call collects it while the run goes on; EXPORT is removed)

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
from dataclasses import dataclass, field
from pathlib import Path

import torch
import yaml
from accelerate import Accelerator
from accelerate.utils import set_seed
from tqdm.auto import tqdm
from transformers import get_scheduler
from transformers.utils import logging as hf_logging

from editspec.data import corpora
from editspec.tokenization.tokens import load_tokenizer
from training.budget import Budget
from training.checkpoints import TrainState, batch_hash, checkpoints, ema_of, export
from training.config import REPO_ROOT, ConfigLoader, load_config, resolve
from training.data import Batches, build_dev, tokenizer_path
from training.dev import dev_approx_f05, dev_f05, dev_loss
from training.models import ModelKind, add_position_prior, component_losses, param_groups
from training.step import T5Loss
from training.step_bench import bench_step, random_batch

EXPORT_REQUEST = "EXPORT"  # a file in the output directory: export interim/ at the next step


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
    return Trainer(cfg, out, args.data_dir, stop_after=args.stop_after, resume=not args.no_resume).run()


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
    if getattr(cfg, "tie_word_embeddings", False) and not any(n.endswith("lm_head.weight") for n, _ in named):
        dec += 6.0 * cfg.d_model * cfg.vocab_size  # the output projection, tied to the embedding
    return enc, dec


def make_accelerator(tc: dict, data_workers: int) -> Accelerator:
    """The accelerator, with the run's threads set: on CPU under DDP the cores split between the
    processes; on a GPU with data workers the loop takes 2 (the GPU does the math)."""
    use_cpu = not torch.cuda.is_available()
    accelerator = Accelerator(cpu=use_cpu, mixed_precision=tc["mixed_precision"])
    world = accelerator.num_processes
    threads = tc["num_threads"] or (max(1, (os.cpu_count() or 1) // world) if use_cpu and world > 1 else None)
    if not threads and not use_cpu and data_workers:
        threads = 2
    if threads:
        torch.set_num_threads(int(threads))
    set_seed(tc["seed"])
    if not use_cpu:
        torch.backends.cuda.matmul.allow_tf32 = True
    return accelerator


@dataclass
class Window:
    """What a log window adds up between two log steps; the losses stay on the device."""
    loss: torch.Tensor
    parts: dict[str, torch.Tensor] = field(default_factory=dict)
    n: int = 0
    tokens: int = 0
    src: int = 0
    tgt: int = 0
    examples: int = 0
    wait: float = 0.0
    started: float = field(default_factory=time.perf_counter)


class Trainer:
    """One run of a recipe into ``out``; ``run()`` trains and returns a summary."""

    def __init__(self, cfg: dict, out: Path, data_dir: str | None = None, stop_after: int | None = None,
                 resume: bool = True):
        self.cfg, self.tc, self.out, self.stop_after = cfg, cfg["train"], out, stop_after
        hf_logging.disable_progress_bar()  # "Writing model shards" bars at every export
        self.accelerator = make_accelerator(self.tc, cfg["data"]["workers"])
        acc = self.accelerator
        self.world, self.rank, self.main_proc = acc.num_processes, acc.process_index, acc.is_main_process
        self.write_config(resume)
        awaited = self.awaited_init(resume)
        self.build_model()
        data_root = corpora.data_dir(data_dir)
        with acc.main_process_first():  # the first process fills the datasets cache, the rest read it
            self.dev = build_dev(cfg, self.kind, self.tok, data_root)
        self.build_optimizer()
        self.state = TrainState()
        acc.register_for_checkpointing(self.scheduler, self.state)
        self.max_steps = self.tc["max_steps"]
        self.budget = Budget(self.tc["max_minutes"], self.max_steps)
        self.resume(resume)
        self.select_on = self.tc["select_on"] or ("f05" if self.tc["eval_f05_every"] else
                                                  "approx_f05" if self.tc["eval_approx_every"] else "loss")
        self.log_file = open(out / "log.jsonl", "a", encoding="utf-8") if self.main_proc else None
        self.batches = Batches(cfg, data_root, self.state.position, self.log)  # a loader process starts
        if self.tc["bench_steps"] and self.kind.name == "t5" and self.world == 1 and not self.state.step:
            self.bench()  # while the loader makes its first pool
        if awaited is not None:
            self.warm_compile()
            self.load_awaited(awaited)
        if not self.state.step:  # a fresh start: no ranked/ model of an earlier attempt competes
            shutil.rmtree(self.out / "ranked", ignore_errors=True)
        self.end = min(self.max_steps, stop_after) if stop_after is not None else self.max_steps
        self.last: dict = {}

    # ------------------------------------------------------------------------------- set-up
    def log(self, msg: str) -> None:
        if self.main_proc:
            tqdm.write(f"[train] {msg}", file=sys.stderr)

    def write_config(self, resume: bool) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        saved = self.out / "config.yaml"
        if not self.main_proc:
            return
        if resume and checkpoints(self.out) and saved.is_file():
            before = yaml.load(saved.read_text(encoding="utf-8"), ConfigLoader)
            changed = [f"{section}.{key}" for section in self.cfg for key in self.cfg[section]
                       if before.get(section, {}).get(key) != self.cfg[section][key]]
            if changed:  # the data position means the same batches only under the same data recipe
                self.log(f"warning: resuming with changed options {', '.join(changed)}")
        saved.write_text(yaml.safe_dump(self.cfg, sort_keys=False), encoding="utf-8")

    def awaited_init(self, resume: bool) -> Path | None:
        """With ``train.init_wait_minutes``, an ``init_from`` that is not there yet (a lease's fine-tune
        started while the stage it continues still ends): with ``model.init_twin`` (a model of the same
        shape, that stage's stable/) the run builds its model, data, loader and compiled step from the
        twin now and takes init_from's weights when they appear (``load_awaited``); without, it waits
        here. None when there is nothing to wait for."""
        model, minutes = self.cfg["model"], self.tc["init_wait_minutes"]
        init = resolve(model["init_from"]) if model.get("init_from") else None
        if not minutes or init is None or (init / "config.json").is_file() or (resume and checkpoints(self.out)):
            return None
        twin = resolve(model["init_twin"]) if model.get("init_twin") else None
        if twin is None or not (twin / "config.json").is_file():
            self.wait_for(init)
            return None
        self.cfg["model"] = {**model, "init_from": str(twin)}
        self.log(f"built from {twin} until {init} appears")
        return init

    def wait_for(self, init: Path) -> None:
        deadline = time.time() + 60 * self.tc["init_wait_minutes"]
        while not (init / "config.json").is_file():
            if time.time() > deadline:
                raise SystemExit(f"{init} did not appear within {self.tc['init_wait_minutes']} minutes")
            time.sleep(1)

    def warm_compile(self) -> None:
        """The compiled step's first forward and backward, on a random batch of the recipe's shape,
        while the run waits for its weights: compiled before the clock starts, and without timing it
        against eager on a GPU another stage is using (the optimizer takes no step; the gradients go)."""
        if self.forward is self.model:
            return
        t0 = time.perf_counter()
        batch = random_batch(self.cfg["data"]["batch_tokens"], self.net.config.vocab_size, self.accelerator.device)
        try:
            with self.accelerator.autocast():
                self.forward(**batch).backward()
            self.log(f"compiled while waiting: {time.perf_counter() - t0:.1f} s")
        except Exception as e:  # noqa: BLE001  as at a first step: a compiler that fails leaves the run eager
            self.log(f"torch.compile failed while waiting ({type(e).__name__}: {str(e).splitlines()[0][:200]}); eager")
            self.forward = self.model
        self.optimizer.zero_grad(set_to_none=True)

    def load_awaited(self, init: Path) -> None:
        """``init``'s weights into the model built from its twin, in place: the optimizer (no step
        taken yet) and the compiled step keep their tensors."""
        t0 = time.perf_counter()
        self.wait_for(init)
        self.cfg["model"] = {**self.cfg["model"], "init_from": str(init)}
        self.net.load_state_dict(self.kind.build(self.cfg["model"], self.tok).state_dict())
        self.ema = ema_of(self.net, self.tc["ema_decay"])
        self.log(f"waited {time.perf_counter() - t0:.1f} s for {init}: its weights loaded")

    def build_model(self) -> None:
        cfg, tc = self.cfg, self.tc
        init_from = cfg["model"].get("init_from")
        self.tok_path = tokenizer_path(cfg)
        self.tok = load_tokenizer(self.tok_path)
        self.kind = ModelKind(cfg["model"]["type"])
        self.net = self.kind.build(cfg["model"], self.tok)  # the model itself (exported, evaluated)
        if tc["position_prior"] and init_from:
            self.log("position prior skipped: it initialises a model trained from scratch, not one loaded from init_from")
        elif tc["position_prior"]:  # before a resume loads the saved weights, so applied once
            self.log(f"position prior {tc['position_prior']} on {add_position_prior(self.net, tc['position_prior'])} "
                     f"bias tables")
        if len(self.tok) > self.net.config.vocab_size:
            raise SystemExit(f"tokenizer {self.tok_path} has {len(self.tok)} tokens, the model {self.net.config.vocab_size}")
        if float(tc["edit_weight"]) != 1.0 and self.kind.name != "t5":
            raise SystemExit("train.edit_weight weighs the T5's label tokens: model.type must be t5")
        self.log(f"{self.kind.name}: {sum(p.numel() for p in self.net.parameters()) / 1e6:.2f}M parameters, "
                 f"{self.world} process(es), device {self.accelerator.device}, mixed precision "
                 f"{tc['mixed_precision']}, {torch.get_num_threads()} thread(s)")
        self.flops_src, self.flops_tgt = flops_per_token(self.net)

    def build_optimizer(self) -> None:
        tc, acc = self.tc, self.accelerator
        groups = param_groups(self.net, tc["lr"], tc["weight_decay"], tc["position_bias_lr_scale"])
        # fused: one kernel for the whole update on a GPU (foreach on the CPU, torch's default there)
        self.optimizer = torch.optim.AdamW(groups, lr=tc["lr"], betas=tuple(tc["adam_betas"]),
                                           fused=True if acc.device.type == "cuda" else None)
        self.wsd = tc["schedule"] == "warmup_stable_decay"  # constant, then linear to 0 over the last decay_share
        self.scheduler = self.make_scheduler(tc["max_steps"])  # not prepared: accelerate steps it per process
        trained = T5Loss(self.net, float(tc["edit_weight"]), tc["loss_chunk_tokens"]) if self.kind.name == "t5" else self.net
        self.model, self.optimizer = acc.prepare(trained, self.optimizer)
        self.forward, self.compile_proven = self.model, False
        if tc["compile"]:
            self.forward = torch.compile(self.model, dynamic=True)  # one graph for every batch shape
        self.ema = ema_of(self.net, tc["ema_decay"])

    def decay_steps(self, total: int) -> int:
        return max(1, round(self.tc["decay_share"] * total)) if self.wsd else 0

    def make_scheduler(self, total: int):
        tc = self.tc
        return get_scheduler(tc["schedule"], self.optimizer, num_warmup_steps=tc["warmup_steps"], num_training_steps=total,
                             scheduler_specific_kwargs={"num_decay_steps": self.decay_steps(total),
                                                        "decay_type": "linear"} if self.wsd else None)

    def resume(self, resume: bool) -> None:
        found = checkpoints(self.out) if resume else []
        if not found:
            return
        self.accelerator.load_state(str(found[-1]))
        self.log(f"resumed from {found[-1]} (step {self.state.step})")
        fitted = self.budget.resume(self.state.budget, self.scheduler, self.make_scheduler)  # clock and schedule
        self.max_steps = min(self.max_steps, fitted or self.max_steps)
        if self.ema is not None and (found[-1] / "ema.pt").is_file():
            self.ema.load_state_dict(torch.load(found[-1] / "ema.pt", map_location=self.accelerator.device))

    def bench(self) -> None:
        """The step's variants timed while the data starts (training.step_bench); compiled
        training only where compiling was faster."""
        compiled = self.forward if self.forward is not self.model else None
        result = bench_step(self.net, self.model, compiled, self.accelerator.autocast,
                            self.cfg["data"]["batch_tokens"], self.tc["bench_steps"], self.accelerator.device, self.log)
        self.record({"step": 0, "bench": result})
        if compiled is not None and result["compile_faster"] is False:
            self.log("compiled is not faster here: training eager")
            self.forward = self.model
        if compiled is not None and result["compile_faster"]:
            self.compile_proven = True
            self.pin_graph()

    def pin_graph(self) -> None:
        """Once the compiled step has run: a batch its graph does not take runs eager instead of
        recompiling (the third lease lost its synthetic stage to a ~110 s recompile at every step)."""
        if self.forward is not self.model:
            torch.compiler.set_stance("eager_on_recompile")

    # ------------------------------------------------------------------------------- the loop
    def run(self) -> dict:
        bar = tqdm(total=self.end, initial=self.state.step, disable=not self.main_proc, desc="train", dynamic_ncols=True)
        self.model.train()
        self.window = self.fresh_window()
        try:
            while self.state.step < self.end:
                got = self.next_batches()
                loss = self.step(got)
                bar.update(1)
                at_log = self.check_clock()
                if self.tc["log_batches"]:
                    self.record({"step": self.state.step, "batches": batch_hash([b.ids for b in got]),
                                 "n_batches": len(got), "loss_local": float(loss)})
                if at_log:
                    self.end_of_window(bar)
                self.export_if_asked()
                self.evaluate_and_save()
        finally:
            self.batches.close()
            torch.compiler.set_stance("default")  # pin_graph's stance is the process's: it ends with the run
        bar.close()
        return self.finish()

    def fresh_window(self) -> Window:
        return Window(loss=torch.zeros((), device=self.accelerator.device))

    def next_batches(self) -> list:
        got = []
        for _ in range(self.world * self.tc["grad_accum"]):
            batch, waited = self.batches.next()
            self.budget.begin()  # the clock starts at the first batch: the data's start-up is not training
            got.append(batch)
            self.window.wait += waited
        return got

    def loss_of(self, inputs: dict) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The batch's loss (and an EdiT5's component losses); a T5's through T5Loss."""
        if self.kind.name == "t5":
            return self.forward(**inputs), {}
        inputs.pop("edit_mask", None)
        output = self.forward(**inputs)
        return output.loss, component_losses(output)

    def step(self, got: list) -> torch.Tensor:
        """Forward and backward of this process's batches, then one optimizer step; the last loss."""
        mine, w, acc = got[self.rank::self.world], self.window, self.accelerator
        try:
            loss = self.backward(mine)
        except Exception as e:  # noqa: BLE001  the first compiled step only: a compiler that fails runs eager
            if self.compile_proven or self.forward is self.model:
                raise
            self.log(f"torch.compile failed at the first step ({type(e).__name__}: {str(e).splitlines()[0][:200]}); "
                     f"eager from here")
            self.optimizer.zero_grad(set_to_none=True)
            self.forward, self.window = self.model, self.fresh_window()
            loss = self.backward(mine)
        if not self.compile_proven:
            self.compile_proven = True
            self.pin_graph()
        if self.tc["max_grad_norm"]:
            acc.clip_grad_norm_(self.model.parameters(), self.tc["max_grad_norm"])
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.ema is not None:
            self.ema.update_parameters(self.net)
        self.state.step += 1
        self.state.position = got[-1].position
        self.state.examples += sum(b.examples for b in got)
        self.window.n += 1
        return loss

    def backward(self, mine: list) -> torch.Tensor:
        """Each batch's forward and backward (gradients synced at the last), added to the window."""
        w, acc = self.window, self.accelerator
        for i, ready in enumerate(mine):
            with (contextlib.nullcontext() if i == len(mine) - 1 else acc.no_sync(self.model)):
                loss, parts = self.loss_of(ready.to(acc.device))
                acc.backward(loss / len(mine))
            w.loss += loss.detach() / len(mine)  # stays on the device: no sync
            for k, v in parts.items():
                w.parts[k] = w.parts.get(k, torch.zeros_like(w.loss)) + v.detach() / len(mine)
            w.tokens, w.src, w.tgt = w.tokens + ready.tokens, w.src + ready.source_tokens, w.tgt + ready.target_tokens
            w.examples += ready.examples
        return loss.detach()

    def check_clock(self) -> bool:
        """Whether this step ends a log window; the time budget may move the last step."""
        step = self.state.step
        at_log = step % self.tc["log_every"] == 0 or step == self.end
        elapsed = self.budget.elapsed()
        if self.world > 1 and at_log:  # every process takes the same decision: the slowest clock
            elapsed = float(self.accelerator.gather(torch.tensor([elapsed], device=self.accelerator.device)).max())
        if self.world == 1 or at_log:
            new_end = self.budget.check(step, elapsed, self.scheduler, self.make_scheduler, self.log)
            if new_end is not None:  # never past the recipe's max_steps (a refit at its last step asks +1)
                self.max_steps = min(self.max_steps, new_end)
                self.end = min(self.end, self.max_steps)
                if self.tc["eval_approx_times"]:  # evaluations spread over the fitted steps, whatever the rate
                    self.tc["eval_approx_every"] = max(1, -(-self.max_steps // self.tc["eval_approx_times"]))
                at_log = at_log or step == self.end  # a stop on time logs its last window
        return at_log

    def end_of_window(self, bar) -> None:
        """The one sync of the window: losses and counts summed over processes, logged."""
        w, acc, world = self.window, self.accelerator, self.world
        stats = acc.reduce(torch.stack([w.loss, *w.parts.values()]).double(), reduction="sum").tolist()
        counts = acc.reduce(torch.tensor([w.tokens, w.src, w.tgt, w.examples], dtype=torch.float64,
                                         device=acc.device), reduction="sum").tolist()
        secs = max(time.perf_counter() - w.started, 1e-9)
        self.last = {"step": self.state.step, "loss": stats[0] / world / w.n,
                     **{k: v / world / w.n for k, v in zip(w.parts, stats[1:])},
                     "lr": self.scheduler.get_last_lr()[0], "tokens_per_s": counts[0] / secs,
                     "examples_per_s": counts[3] / secs, "steps_per_s": w.n / secs,
                     "tflops": (self.flops_src * counts[1] + self.flops_tgt * counts[2]) / secs / 1e12,
                     "data_wait": w.wait / secs, "examples": self.state.examples,
                     "position": self.state.position.state_dict()}
        self.record(self.last)
        bar.set_postfix(loss=f"{self.last['loss']:.3f}", ex_s=f"{self.last['examples_per_s']:.0f}",
                        wait=f"{self.last['data_wait']:.0%}")
        self.window = self.fresh_window()

    def export_if_asked(self) -> None:
        """interim/ when a file EXPORT has appeared (a stat a step: nothing beside a GPU step)."""
        request = self.out / EXPORT_REQUEST
        if self.main_proc and request.is_file():
            with self.budget.paused():
                self.save_model(self.out / "interim")
            request.unlink(missing_ok=True)
            self.log(f"interim/ exported at step {self.state.step}")

    def evaluate_and_save(self) -> None:
        """At their steps: stable/ where the decay starts, dev evaluation and selection, a checkpoint."""
        tc, step, max_steps = self.tc, self.state.step, self.max_steps
        due = lambda every: bool(every) and (step % every == 0 or step == max_steps)  # noqa: E731
        t_pause = time.perf_counter()
        with self.budget.paused():  # evaluating and saving are not training time, nor step time
            if self.wsd and step == max_steps - self.decay_steps(max_steps) and self.main_proc:
                self.save_model(self.out / "stable")  # the stable phase's end: what the next run continues
            f05, approx, loss = due(tc["eval_f05_every"]), due(tc["eval_approx_every"]), due(tc["eval_every"])
            if self.dev is not None and (f05 or approx or loss):
                result = self.evaluate(f05, approx)
                if self.main_proc:
                    self.select(result)
                    self.record(result)
                    self.log(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in result.items()))
            if step % tc["save_every"] == 0 or step in (max_steps, self.stop_after):
                self.state.budget = self.budget.state()
                self.save_checkpoint()
        self.window.started += time.perf_counter() - t_pause

    # ------------------------------------------------------------------------------- phases
    def record(self, entry: dict) -> None:
        if self.log_file:
            self.log_file.write(json.dumps(entry) + "\n")
            self.log_file.flush()

    def save_model(self, dest: Path, net: torch.nn.Module | None = None, **info) -> None:
        if self.main_proc:
            export(net or self.net, self.tok, dest, {"step": self.state.step, "best": self.state.best,
                                                     "select_on": self.select_on, "examples": self.state.examples,
                                                     "max_length": self.cfg["data"]["max_length"], **info})

    def evaluate(self, f05: bool, approx: bool) -> dict:
        result: dict = {"step": self.state.step}
        if self.main_proc and self.dev is not None:
            net, kind, tok, dev, autocast = self.net, self.kind, self.tok, self.dev, self.accelerator.autocast
            max_length = self.cfg["data"]["max_length"]
            net.eval()
            result.update(dev_loss(net, kind, tok, dev, self.accelerator.device, autocast))
            if approx:
                result.update(dev_approx_f05(net, kind, tok, dev, autocast, max_length))
            if f05:
                result.update(dev_f05(net, kind, tok, dev, autocast, max_length))
            net.train()
        self.accelerator.wait_for_everyone()
        return result

    def select(self, result: dict) -> None:
        key = {"f05": "dev_f05", "approx_f05": "dev_approx_f05"}.get(self.select_on, "dev_loss")
        if key not in result:
            return
        score = -result[key] if key == "dev_loss" else result[key]
        if self.tc["keep_best"] > 1:
            self.keep_ranked(score)
        if self.state.best is None or score > self.state.best:
            self.state.best, self.state.best_step = score, self.state.step
            self.save_model(self.out / "best")
            result["new_best"] = True

    def keep_ranked(self, score: float) -> None:
        """ranked/step-N/: the models of the ``keep_best`` best scores so far (the earlier step wins a tie)."""
        ranked, keep = self.state.ranked, self.tc["keep_best"]
        if len(ranked) >= keep and score <= ranked[-1][0]:
            return
        self.save_model(self.out / "ranked" / f"step-{self.state.step}", score=score)
        ranked.append([score, self.state.step])
        ranked.sort(key=lambda r: (-r[0], r[1]))
        for _, step in ranked[keep:]:
            shutil.rmtree(self.out / "ranked" / f"step-{step}", ignore_errors=True)
        del ranked[keep:]

    def save_checkpoint(self) -> None:
        ckpt = self.out / "checkpoints" / f"step-{self.state.step}"
        self.accelerator.save_state(str(ckpt))
        if self.main_proc:
            if self.ema is not None:
                torch.save(self.ema.state_dict(), ckpt / "ema.pt")
            (ckpt / "state.json").write_text(json.dumps(self.state.state_dict()) + "\n")
            for old in checkpoints(self.out)[:-max(1, self.tc["keep_last"])]:
                shutil.rmtree(old, ignore_errors=True)
        self.accelerator.wait_for_everyone()

    def finish(self) -> dict:
        """last/ (and stable/, ema/ as the recipe asks), best/ when nothing selected one; the summary."""
        out, state = self.out, self.state
        if state.step >= self.end:
            self.save_model(out / "last")  # also at --stop-after: a model directory of the newest weights
            if self.wsd and state.step >= self.max_steps and not (out / "stable").exists() and self.main_proc:
                self.log("stopped before the decay began: stable/ is the last model")  # a series never loses a run
                shutil.copytree(out / "last", out / "stable")
            if self.ema is not None:  # the weights' average, scored like the checkpoints (a lever to measure)
                self.save_model(out / "ema", self.ema.module)
                if self.dev is not None and self.tc["eval_approx_every"] and self.main_proc:
                    self.ema.module.eval()
                    scored = dev_approx_f05(self.ema.module, self.kind, self.tok, self.dev, self.accelerator.autocast,
                                            self.cfg["data"]["max_length"])
                    self.record({"step": state.step, **{f"ema_{k}": v for k, v in scored.items()}})
        if state.step >= self.max_steps and (self.dev is None or not (out / "best").exists()):
            self.save_model(out / "best")  # nothing to select on: the final model is the best we know
        self.accelerator.wait_for_everyone()
        if self.log_file:
            self.log_file.close()
        self.accelerator.end_training()
        return {"step": state.step, "last": self.last, "best": state.best, "best_step": state.best_step,
                "examples": state.examples}


if __name__ == "__main__":
    main()
