"""One profile run: load the models, time the modes and the architectures, write the report.

``profile("dev.m2", "runs/prof", ProfileOptions(modes=["speculative"], limit=100))`` reads 100 sentences
(``editspec.profiling.sentences``), loads the bundle as ``editspec correct`` does (plus its
``t5-draft/`` when a mode needs it), times T5 (always: the reference) and the speculative mode on
the same batches (``editspec.profiling.profiler``), the spelling and rescoring steps apart when
the bundle turns them on (``editspec.profiling.side_steps``), and with ``architectures=True``
random T5/EdiT5 at real sizes (``editspec.profiling.architectures``); then writes report.json,
report.md and the plots into ``out`` (``editspec.profiling.report``) and returns the report.
The number of CPU threads is fixed for the whole run.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import torch
import transformers

from editspec.config import LoadOptions
from editspec.corrector import Corrector
from editspec.decoding.measured import device_name
from editspec.errors import EditspecError
from editspec.modeling.loading import DEFAULT_MODEL, quiet_transformers, resolve_device, resolve_models
from editspec.modeling import quantization
from editspec.modeling.precision import dtype_name, resolve_dtype
from editspec.modeling.t5 import load_t5
from editspec.profiling import ct2 as ct2_peer
from editspec.profiling.architectures import Sweep, known, profile_architectures
from editspec.profiling.sentences import read_data
from editspec.profiling.end_to_end import end_to_end as whole_path
from editspec.modes import BY_NAME, check_modes
from editspec.profiling.pipeline import profile_pipeline
from editspec.profiling.profiler import Profiler, profile_modes
from editspec.profiling.report import write_report
from editspec.profiling.side_steps import time_rescoring, time_spelling
from editspec.profiling.timed import CT2, TIMED
from editspec.tokenization.tokens import load_tokenizer

log = logging.getLogger(__name__)  # each phase said as it starts (the CLI shows it: a profile runs for minutes)


def ct2_version() -> str:
    import ctranslate2  # deliberately lazy: an optional extra

    return ctranslate2.__version__


def load_ct2(t5_dir, device: torch.device, cache) -> tuple[ct2_peer.CT2Peer | None, str | None]:
    """(the CTranslate2 peer of the T5 in ``t5_dir``, None) or (None, why not): ctranslate2 not
    installed, or no local T5 directory to convert. Its threads: torch's, fixed for the run."""
    why = ct2_peer.missing() or (None if t5_dir is not None else "no T5 model")
    if why:
        return None, why
    try:
        return ct2_peer.CT2Peer.load(t5_dir, device.type, torch.get_num_threads(), cache), None
    except EditspecError as e:
        return None, str(e)


@dataclass(frozen=True)
class ModelOptions:
    """Which models a profile loads, and how: ``load``, what ``editspec correct`` loads
    (``config.LoadOptions``: model, edit5, t5, device, dtype, quantize; every model timed
    quantized), with the profile's own: ``t5_draft`` (the small T5 that hf-assisted drafts with;
    default the bundle's ``t5-draft/``), ``threads`` (torch's, set by ``profile`` and fixed for
    the whole run; None: as they are) and ``ct2_cache`` (where the CTranslate2 conversion of the
    T5 is kept; default ``editspec.cache``'s ``ct2/``)."""

    load: LoadOptions = LoadOptions()
    t5_draft: str | None = None
    threads: int | None = None
    ct2_cache: str | os.PathLike | None = None


@dataclass(frozen=True)
class ProfileOptions:
    """What a profile times, on which sentences. ``modes`` (``editspec.modes``; T5, the reference,
    always runs), ``architectures`` (True or names: random T5/EdiT5 at real sizes), ``pipeline``
    (``editspec correct``'s whole path step by step, ``profiling.pipeline``), ``end_to_end`` (that
    path against ``--mode t5`` and CTranslate2's bare greedy decoding, in turns,
    ``profiling.end_to_end``), ``trace`` (a torch.profiler trace per mode). ``limit`` sentences of
    the data (a random ``limit`` with ``seed``), ``warmup`` untimed batches of ``batch_size``.
    ``gamma``: the speculative modes' draft window: "auto" (the decoding core's, from measured pass
    costs), a fixed number of tokens, or "all" (the whole remaining draft, up to 48);
    ``prompt_lookup_tokens``: hf-prompt-lookup's."""

    modes: Sequence[str] = ()
    architectures: bool | Sequence[str] = False
    pipeline: bool = False
    end_to_end: bool = False
    trace: bool = False
    batch_size: int = 1
    limit: int | None = 100
    seed: int | None = None
    warmup: int = 5
    gamma: int | str = "auto"
    prompt_lookup_tokens: int = 10

    @property
    def use_architectures(self) -> bool:
        return self.architectures is True or isinstance(self.architectures, (list, tuple))  # [] : the defaults

    def checked(self) -> ProfileOptions:
        """These options with ``modes`` checked (``modes.check_modes``); a one-line error for the rest."""
        if self.batch_size < 1:
            raise EditspecError("batch size must be at least 1")
        if self.warmup < 0:
            raise EditspecError("--warmup must be 0 or more")
        modes = check_modes(self.modes)
        if not modes and not self.use_architectures and not self.pipeline and not self.end_to_end:
            raise EditspecError("nothing to profile: give --modes, --architectures, --pipeline or --end-to-end")
        return replace(self, modes=modes)


def load_profiler(corrector: Corrector, what: ProfileOptions, models: ModelOptions, dev, dtype,
                  report: dict) -> Profiler:
    """The ``Profiler`` of ``corrector``'s models and what ``what.modes`` need beside them: the small
    T5, transformers' T5 (hf-*), the CTranslate2 peer (ct2-*; its version or why it is missing goes
    into ``report``), all quantized as asked."""
    bundle, modes, small = corrector.bundle, what.modes, None
    draft_dir = models.t5_draft
    if draft_dir is None:
        root = Path(models.load.model) if models.load.model else DEFAULT_MODEL
        draft_dir = root / "t5-draft" if (root / "t5-draft" / "config.json").is_file() else None
    if draft_dir is not None and any("t5-draft" in BY_NAME[m].needs for m in modes):
        small, small_tok = load_t5(draft_dir, device=dev, dtype=dtype, transformers=True)
        if bundle.t5_tokenizer is not None and small_tok.get_vocab() != bundle.t5_tokenizer.get_vocab():
            raise EditspecError(f"the small T5 at {draft_dir} has another tokenizer than the T5")
    hf_t5 = None  # transformers' generate (hf-*) runs on transformers' model of the same T5
    if bundle.t5 is not None and any(m.startswith("hf-") for m in modes):
        hf_t5, _ = load_t5(bundle.paths["t5"], device=dev, dtype=dtype, transformers=True)
    if models.load.quantize is not None:  # the T5 first: a shared encoder is then quantized once
        for m in (bundle.t5, bundle.edit5, small, hf_t5):
            if m is not None:
                quantization.quantize(m, models.load.quantize)
    peer, peer_why = None, None
    if any(isinstance(TIMED[m], CT2) for m in modes):
        peer, peer_why = load_ct2(bundle.paths.get("t5"), dev, models.ct2_cache)
        report["ctranslate2"] = peer_why or ct2_version()
    return Profiler(bundle, small, what.gamma, what.prompt_lookup_tokens, ct2=peer, ct2_unavailable=peer_why,
                    hf_t5=hf_t5)


def correct_path(what: ProfileOptions, models: ModelOptions, dev, dtype, sources: list[str]) -> dict:
    """The report's ``pipeline`` (with the load's seconds) and/or ``end_to_end`` entries, of a
    corrector loaded as ``editspec correct`` loads it."""
    start = time.perf_counter()
    corrector = Corrector.from_pretrained(options=models.load, device=dev, batch_size=what.batch_size, dtype=dtype)
    load_seconds = time.perf_counter() - start
    out = {}
    if what.pipeline:
        out["pipeline"] = {**profile_pipeline(corrector, sources, what.warmup), "load_seconds": load_seconds}
    if what.end_to_end:
        peer, peer_why = load_ct2(corrector.bundle.paths.get("t5"), dev, models.ct2_cache)
        out["end_to_end"] = whole_path(corrector, sources, peer, peer_why, warmup=what.warmup)
    return out


def check_architectures(names: list[str] | None) -> list[str] | None:
    """``names`` (None: the defaults); an unknown one is an error."""
    unknown = sorted(set(names or ()) - set(known()))
    if unknown:
        raise EditspecError(f"unknown architecture(s) {', '.join(unknown)} (known: {', '.join(known())})")
    return names


def profile(data: str | os.PathLike, out: str | os.PathLike, what: ProfileOptions,
            models: ModelOptions = ModelOptions(), flags: dict | None = None, progress: bool = False) -> dict:
    """Profile what ``what`` asks for on the sentences of ``data``, with the models ``models``
    says; write the report into ``out`` and return it (``flags``: the CLI's, recorded as given)."""
    what = what.checked()
    sources, targets = read_data(data, what.limit, what.seed)
    if what.use_architectures and targets is None:
        raise EditspecError("--architectures forces decoder steps from gold targets: give an M2 file or "
                            "source<TAB>target lines")
    torch.set_num_threads(models.threads or torch.get_num_threads())  # fixed for the whole run
    dev = resolve_device(models.load.device)
    dtype = resolve_dtype(models.load.dtype, dev, models.load.quantize)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise EditspecError(f"--out {out} is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    report: dict = {
        "device": device_name(dev), "threads": torch.get_num_threads(), "sentences": 0,
        "batch_size": what.batch_size, "torch": torch.__version__, "transformers": transformers.__version__,
        "dtype": dtype_name(dtype), "quantize": models.load.quantize,
        "data": str(data), "limit": what.limit, "seed": what.seed,
        "warmup": what.warmup, "gamma": what.gamma, "prompt_lookup_tokens": what.prompt_lookup_tokens,
        "skipped_long": 0, "options": dict(flags or {}), "modes": {}, "architectures": {},
    }
    with quiet_transformers():
        raw, tokenizer = time_modes(what, models, dev, dtype, sources, out, report, progress)
        if what.pipeline or what.end_to_end:
            log.info("timing correct's path on %d sentences (%s) ...", len(sources),
                     " and ".join(n for n, on in (("pipeline", what.pipeline), ("end to end", what.end_to_end)) if on))
            report.update(correct_path(what, models, dev, dtype, sources))
            report["sentences"] = report["sentences"] or len(sources)
        if what.use_architectures:
            if tokenizer is None:
                o = models.load
                paths = resolve_models(o.model, o.edit5, o.t5) if (o.model or o.edit5 or o.t5) else (None, None)
                tokenizer = load_tokenizer(paths[1] or paths[0] or DEFAULT_MODEL / "t5")
            names = None if what.architectures is True else list(what.architectures) or None  # none: the defaults
            log.info("timing architectures ...")
            sweep = Sweep(check_architectures(names), batch_size=what.batch_size, warmup=what.warmup)
            report["architectures"] = profile_architectures(sources, targets, tokenizer, dev, dtype, sweep, progress)
            if not what.modes:
                report["sentences"] = next(iter(report["architectures"].values()))["sentences"]
    write_report(out, report, raw)
    return report


def time_modes(what: ProfileOptions, models: ModelOptions, dev, dtype, sources: list[str], out: Path,
               report: dict, progress: bool) -> tuple[dict | None, object]:
    """The report's ``modes`` (and ``spelling`` and ``rescoring``, when the bundle turns those
    steps on): (the raw samples for the plots, the tokenizer), or (None, None) without modes."""
    if not what.modes:
        return None, None
    log.info("loading the models and their peers ...")
    corrector = Corrector.from_pretrained(options=models.load, device=dev, dtype=dtype, batch_size=16,
                                          quantize=None)  # ``load_profiler`` quantizes every model
    profiler = load_profiler(corrector, what, models, dev, dtype, report)
    max_ids = min(n for _, n in corrector.limits)
    log.info("timing modes %s on %d sentences ...", " ".join(what.modes), len(sources))
    report["modes"], raw = profile_modes(profiler, sources, what.modes, what.batch_size, what.warmup, max_ids,
                                         out if what.trace else None, progress=progress)
    report["sentences"], report["skipped_long"] = raw["sentences"], raw["skipped_long"]
    if corrector.config.spelling:
        log.info("timing the spelling step ...")
        report["spelling"] = time_spelling(sources, what.warmup)
    if corrector.config.rescore:
        log.info("timing rescoring ...")
        report["rescoring"] = time_rescoring(corrector, sources, what.warmup)
    return raw, profiler.tokenizer
