"""Loading checkpoints: which model a directory holds, a bundle's models, the device, and the EdiT5
with the checks that tie a tokenizer to its model (the T5's are in ``editspec.modeling.t5``).

A bundle directory holds ``edit5/`` and/or ``t5/`` (and ``t5-draft/``, a small T5 that ``editspec
profile`` may time as another drafter), each the ``save_pretrained`` output of a model plus its
tokenizer (the shipped bundle's each hold theirs, so each loads and converts as it is: issue 71), or
without one when an older bundle's ``tokenizer/`` is theirs (``tokenization.tokens.tokenizer_path``);
a single checkpoint directory works too, its
``config.json`` ``model_type`` says which.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Iterator

import torch

from editspec.errors import EditspecError
from editspec.tokenization import fast
from editspec.tokenization.tokens import load_tokenizer, marker_ids

DEFAULT_MODEL = Path(__file__).resolve().parents[1] / "models" / "default"
EDIT5_TYPES = {"edit5"}
T5_TYPES = {"t5"}


def _read_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise EditspecError(f"cannot read {path}: {e}") from e
    if not isinstance(value, dict):
        raise EditspecError(f"{path} is not a JSON object")
    return value


def model_type(path: str | os.PathLike) -> str:
    """``edit5`` or ``t5``: what the checkpoint directory's config.json says it is."""
    config = Path(path) / "config.json"
    if not config.is_file():
        raise EditspecError(f"{path} is not a model directory (no config.json)")
    kind = _read_json(config).get("model_type")
    if kind in EDIT5_TYPES:
        return "edit5"
    if kind in T5_TYPES:
        return "t5"
    raise EditspecError(f"{path} holds a {kind!r} model; editspec runs EdiT5 (edit5) and T5 (t5) models")


def resolve_models(
    model: str | os.PathLike | None = None, edit5: str | os.PathLike | None = None,
    t5: str | os.PathLike | None = None,
) -> tuple[str | None, str | None]:
    """(EdiT5 checkpoint, T5 checkpoint) of a bundle or single checkpoint, ``edit5``/``t5``
    overriding; the shipped bundle when nothing is given."""
    found: dict[str, str | None] = {"edit5": None, "t5": None}
    if model is None and edit5 is None and t5 is None:
        model = DEFAULT_MODEL
        if not any((model / k / "config.json").is_file() for k in found):
            raise EditspecError(
                f"no model installed: {model} holds no edit5/ or t5/ checkpoint; pass --model DIR "
                "(a bundle with edit5/ and/or t5/, or one checkpoint directory)")
    if model is not None:
        root = Path(model)
        if not root.exists():
            raise EditspecError(f"model directory {root} does not exist")
        if not root.is_dir():
            raise EditspecError(f"model path {root} is not a directory")
        if (root / "config.json").is_file():
            found[model_type(root)] = str(root)
        else:
            for kind in found:
                if (root / kind).is_dir():
                    found[kind] = str(root / kind)
            if not any(found.values()):
                raise EditspecError(f"{root} is neither a model directory (no config.json) nor a "
                                    "bundle (no edit5/ or t5/ inside)")
    for kind, path in (("edit5", edit5), ("t5", t5)):
        if path is None:
            continue
        if kind == "t5" and not Path(path).exists():  # a T5 may also be a hub id
            path = hub_model(str(path))
        if kind == "edit5" or Path(path).exists():
            actual = model_type(path)
            if actual != kind:
                raise EditspecError(f"{path} is a{'n EdiT5' if actual == 'edit5' else ' T5'} model, "
                                    f"not {'an EdiT5' if kind == 'edit5' else 'a T5'} model")
        found[kind] = str(path)
    return found["edit5"], found["t5"]


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def resolve_device(device: str | torch.device | None) -> torch.device:
    """The torch device asked for (default: ``default_device``), or a one-line error."""
    if device is None:
        return default_device()
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise EditspecError(f"unknown device {device!r}") from e
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise EditspecError(f"device {device!r} asked for, but CUDA is not available")
    return dev


def trained_length(path: str | None) -> int | None:
    info = Path(path) / "training.json" if path else None
    if info is not None and info.is_file():
        value = _read_json(info).get("max_length")
        if value is None:
            return None
        if type(value) is not int or value < 3:  # noqa: E721 (True is an int to isinstance)
            raise EditspecError(f"{info}: max_length must be an integer of at least 3, not {value!r}")
        return value
    return None


def hub_model(name: str) -> str:
    """The local directory of hub model ``name`` when it is in the cache; else ``name``, once
    the hub has answered one quick request (without a network, transformers retries for a
    minute before it fails)."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url, snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    try:
        return snapshot_download(name, local_files_only=True)
    except HFValidationError as e:
        raise EditspecError(f"{name} is neither a model directory nor a hub model id") from e
    except LocalEntryNotFoundError:
        pass
    try:
        get_hf_file_metadata(hf_hub_url(name, "config.json"), timeout=10)
    except Exception as e:  # offline, no such repository, gated: httpx and hub errors alike
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise EditspecError(f"{name} is no directory here and not in the hub cache, and the hub "
                            f"cannot give it: {reason}") from e
    return name


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """No "Loading weights" bars or advisory warnings while loading: a corrector's output is
    the text; real problems raise. (transformers loads here: call it where transformers loads.)"""
    from transformers.utils import logging

    verbosity, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
        if bars:
            logging.enable_progress_bar()


def load_edit5(path: str, device: torch.device, t5=None, t5_path: str | None = None):
    """An EdiT5 checkpoint in eval mode, and its tokenizer (a one-line error if it is broken):
    ``edit5_inference.InferenceEdiT5`` and ``tokenization.fast`` where they read it (no
    transformers import), else ``EdiT5Model`` and transformers' tokenizer.

    An EdiT5 whose heads sit on a T5's encoder (``t5_encoder`` in its config) reads the encoder of
    ``t5`` (loaded from ``t5_path``) when that is the T5 it names, so one encoder serves both;
    else it loads the encoder it names itself."""
    from editspec.modeling import edit5_inference
    from editspec.modeling.modeling_t5 import InferenceT5

    model_type(path)
    named = _read_json(Path(path) / "config.json").get("t5_encoder")
    same = named and t5 is not None and t5_path is not None and \
        (Path(path) / named).resolve() == Path(t5_path).resolve()
    # ours sits on our T5 only; a transformers T5 given (a user's) takes transformers' EdiT5
    ours = edit5_inference.supported(path) is None and fast.readable(path) and \
        (not same or isinstance(t5, InferenceT5))
    try:  # shipped bf16, computed fp32
        if ours:
            model = edit5_inference.InferenceEdiT5.from_pretrained(path, t5=t5 if same else None)
        else:
            from editspec.modeling.modeling_edit5 import EdiT5Model

            with quiet_transformers():
                model = EdiT5Model.from_pretrained(path, dtype=torch.float32, t5=t5 if same else None)
    except Exception as e:  # missing/corrupt weights, wrong shapes
        raise EditspecError(f"cannot load an EdiT5 model from {path}: {str(e).splitlines()[0]}") from e
    tok = fast.load(path) if ours else load_tokenizer(path)
    if len(tok) > model.config.vocab_size:
        raise EditspecError(f"tokenizer at {path} has {len(tok)} tokens but the model only "
                            f"{model.config.vocab_size}: they do not belong together")
    if not marker_ids(tok):
        raise EditspecError(f"tokenizer at {path} has no <extra_id_N> markers, which EdiT5 needs")
    if tok.eos_token_id != model.config.eos_token_id:
        raise EditspecError(f"tokenizer at {path} has EOS id {tok.eos_token_id}, the model "
                            f"{model.config.eos_token_id}")
    return model.to(device).eval(), tok
