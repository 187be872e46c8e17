"""One profile run: load the models, time the modes and the architectures, write the report.

``profile("dev.m2", "runs/prof", modes=["speculative"], limit=100)`` reads 100 sentences
(``editspec.profiling.sentences``), loads the bundle as ``editspec correct`` does (plus its
``t5-draft/`` when a mode needs it), times T5 (always: the reference) and the speculative mode on
the same batches (``editspec.profiling.profiler``), the spelling and rescoring steps apart when
the bundle turns them on (``editspec.profiling.side_steps``), and with ``architectures=True``
random T5/EdiT5 at real sizes (``editspec.profiling.architectures``); then writes report.json,
report.md and the plots into ``out`` (``editspec.profiling.report``) and returns the report.
The number of CPU threads is fixed for the whole run.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Sequence

import torch
import transformers

from editspec.corrector import Corrector
from editspec.decoding.measured import device_name
from editspec.errors import EditspecError
from editspec.modeling.loading import DEFAULT_MODEL, quiet_transformers, resolve_device, resolve_models
from editspec.modeling import quantization
from editspec.modeling.precision import dtype_name, resolve_dtype
from editspec.modeling.t5 import load_t5
from editspec.profiling import ct2 as ct2_peer
from editspec.profiling.architectures import known, profile_architectures
from editspec.profiling.sentences import read_data
from editspec.profiling.end_to_end import end_to_end as whole_path
from editspec.modes import BY_NAME, check_modes
from editspec.profiling.pipeline import profile_pipeline
from editspec.profiling.profiler import Profiler, profile_modes
from editspec.profiling.report import write_report
from editspec.profiling.side_steps import time_rescoring, time_spelling
from editspec.profiling.timed import CT2, TIMED
from editspec.tokenization.tokens import load_tokenizer


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


def load_profiler(corrector: Corrector, modes: Sequence[str], model: str | None, t5_draft: str | None, dev,
                  torch_dtype, quantize: str | None, ct2_cache, report: dict, **settings) -> Profiler:
    """The ``Profiler`` of ``corrector``'s models and what ``modes`` need beside them: the small T5
    (``t5_draft``, else the bundle's ``t5-draft/``), transformers' T5 (hf-*), the CTranslate2 peer
    (ct2-*; its version or why it is missing goes into ``report``), all quantized as asked."""
    small = None
    draft_dir = t5_draft
    if draft_dir is None:
        root = Path(model) if model else DEFAULT_MODEL
        draft_dir = root / "t5-draft" if (root / "t5-draft" / "config.json").is_file() else None
    if draft_dir is not None and any("t5-draft" in BY_NAME[m].needs for m in modes):
        small, small_tok = load_t5(draft_dir, device=dev, dtype=torch_dtype, transformers=True)
        t5_tokenizer = corrector.bundle.t5_tokenizer
        if t5_tokenizer is not None and small_tok.get_vocab() != t5_tokenizer.get_vocab():
            raise EditspecError(f"the small T5 at {draft_dir} has another tokenizer than the T5")
    hf_t5 = None  # transformers' generate (hf-*) runs on transformers' model of the same T5
    if corrector.bundle.t5 is not None and any(m.startswith("hf-") for m in modes):
        hf_t5, _ = load_t5(corrector.bundle.paths["t5"], device=dev, dtype=torch_dtype, transformers=True)
    if quantize is not None:  # the T5 first: a shared encoder is then quantized once
        for m in (corrector.bundle.t5, corrector.bundle.edit5, small, hf_t5):
            if m is not None:
                quantization.quantize(m, quantize)
    peer, peer_why = None, None
    if any(isinstance(TIMED[m], CT2) for m in modes):
        peer, peer_why = load_ct2(corrector.bundle.paths.get("t5"), dev, ct2_cache)
        report["ctranslate2"] = peer_why or ct2_version()
    return Profiler(corrector.bundle, small, ct2=peer, ct2_unavailable=peer_why, hf_t5=hf_t5, **settings)


def correct_path(load: dict, sources: list[str], warmup: int, pipeline: bool, end_to_end: bool, ct2_cache) -> dict:
    """The report's ``pipeline`` (with the load's seconds) and/or ``end_to_end`` entries, of a
    corrector loaded as ``editspec correct`` loads it (``load``: ``Corrector.from_pretrained``'s arguments)."""
    start = time.perf_counter()
    corrector = Corrector.from_pretrained(**load)
    load_seconds = time.perf_counter() - start
    out = {}
    if pipeline:
        out["pipeline"] = {**profile_pipeline(corrector, sources, warmup), "load_seconds": load_seconds}
    if end_to_end:
        peer, peer_why = load_ct2(corrector.bundle.paths.get("t5"), load["device"], ct2_cache)
        out["end_to_end"] = whole_path(corrector, sources, peer, peer_why, warmup=warmup)
    return out


def check_architectures(names: list[str] | None) -> list[str] | None:
    """``names`` (None: the defaults); an unknown one is an error."""
    unknown = sorted(set(names or ()) - set(known()))
    if unknown:
        raise EditspecError(f"unknown architecture(s) {', '.join(unknown)} (known: {', '.join(known())})")
    return names


def profile(data: str | os.PathLike, out: str | os.PathLike, modes: Sequence[str] = (), *,
            architectures: bool | Sequence[str] | None = False, model: str | None = None, edit5: str | None = None,
            t5: str | None = None, t5_draft: str | None = None, device: str | None = None,
            threads: int | None = None, batch_size: int = 1, limit: int | None = 100,
            seed: int | None = None, warmup: int = 5, gamma: int | str = "auto",
            prompt_lookup_tokens: int = 10, dtype: str | None = None, quantize: str | None = None,
            trace: bool = False, pipeline: bool = False, end_to_end: bool = False,
            ct2_cache: str | os.PathLike | None = None, options: dict | None = None, progress: bool = False) -> dict:
    """Profile ``modes`` (and with ``architectures`` the random architectures) on the sentences
    of ``data``; write the report into ``out`` and return it. ``gamma``: the speculative modes'
    draft window: "auto" (the decoding core's, from measured pass costs), a fixed number of
    tokens, or "all" (the whole remaining draft, up to 48); ``dtype``: a name of
    ``precision.DTYPES`` (None: ``precision.default_dtype``, as ``editspec correct``);
    ``quantize``: "int8" (``editspec.modeling.quantization``), every model timed quantized;
    ``pipeline``: also time ``editspec correct``'s whole path step by step
    (``editspec.profiling.pipeline``), the sentences as lines; ``end_to_end``: that path against
    ``--mode t5`` and CTranslate2's bare greedy decoding, in turns (``editspec.profiling.end_to_end``);
    ``ct2_cache``: where the CTranslate2 conversion of the T5 is kept (default ``editspec.cache``'s
    ``ct2/``); ``options``: recorded as given (the CLI's flags)."""
    modes = check_modes(modes)
    if batch_size < 1:
        raise EditspecError("batch size must be at least 1")
    if warmup < 0:
        raise EditspecError("--warmup must be 0 or more")
    use_architectures = architectures is True or isinstance(architectures, (list, tuple))  # [] : the defaults
    if not modes and not use_architectures and not pipeline and not end_to_end:
        raise EditspecError("nothing to profile: give --modes, --architectures, --pipeline or --end-to-end")
    sources, targets = read_data(data, limit, seed)
    if use_architectures and targets is None:
        raise EditspecError("--architectures forces decoder steps from gold targets: give an M2 file or "
                            "source<TAB>target lines")
    torch.set_num_threads(threads or torch.get_num_threads())  # fixed for the whole run
    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, dev, quantize)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise EditspecError(f"--out {out} is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    report: dict = {
        "device": device_name(dev), "threads": torch.get_num_threads(), "sentences": 0,
        "batch_size": batch_size, "torch": torch.__version__, "transformers": transformers.__version__,
        "dtype": dtype_name(torch_dtype), "quantize": quantize,
        "data": str(data), "limit": limit, "seed": seed,
        "warmup": warmup, "gamma": gamma, "prompt_lookup_tokens": prompt_lookup_tokens,
        "skipped_long": 0, "options": dict(options or {}), "modes": {}, "architectures": {},
    }
    raw = None
    tokenizer = None
    with quiet_transformers():
        if modes:
            corrector = Corrector.from_pretrained(model, edit5=edit5, t5=t5, device=dev, dtype=torch_dtype)
            profiler = load_profiler(corrector, modes, model, t5_draft, dev, torch_dtype, quantize, ct2_cache,
                                     report, gamma=gamma, prompt_lookup_tokens=prompt_lookup_tokens)
            max_ids = min(n for _, n in corrector.limits)
            report["modes"], raw = profile_modes(profiler, sources, modes, batch_size, warmup, max_ids,
                                                 out if trace else None, progress=progress)
            report["sentences"], report["skipped_long"] = raw["sentences"], raw["skipped_long"]
            if corrector.spelling:
                report["spelling"] = time_spelling(sources, warmup)
            if corrector.rescore:
                report["rescoring"] = time_rescoring(corrector, sources, warmup)
            tokenizer = profiler.tokenizer
        if pipeline or end_to_end:
            load = dict(model=model, edit5=edit5, t5=t5, device=dev, batch_size=batch_size, dtype=torch_dtype,
                        quantize=quantize)
            report.update(correct_path(load, sources, warmup, pipeline, end_to_end, ct2_cache))
            report["sentences"] = report["sentences"] or len(sources)
        if use_architectures:
            if tokenizer is None:
                edit5_path, t5_path = resolve_models(model, edit5, t5) if (model or edit5 or t5) else (None, None)
                tokenizer = load_tokenizer(t5_path or edit5_path or DEFAULT_MODEL / "tokenizer")
            names = None if architectures is True else list(architectures) or None  # none named: the defaults
            report["architectures"] = profile_architectures(sources, targets, tokenizer, dev, torch_dtype, batch_size,
                                                            warmup, names=check_architectures(names), progress=progress)
            if not modes:
                report["sentences"] = next(iter(report["architectures"].values()))["sentences"]
    write_report(out, report, raw)
    return report
