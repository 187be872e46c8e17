"""CTranslate2 as a peer of our decoding core: the same T5 weights, converted once and cached.

A user who wants a fast T5 on CPU would reach for CTranslate2, so ``editspec profile`` times it on
the same sentences, batches, warm-up and threads as the other modes::

    ct2-greedy   CTranslate2 greedy search, float32 compute (should equal our T5 greedy output)
    ct2-int8     ... int8 compute (weights quantized when the model loads; may differ)
    ct2-beam4    CTranslate2 beam search, 4 beams, float32 (its own length penalty and stopping rule)

``converted(t5_dir)`` converts the T5 directory with ``ctranslate2.converters.TransformersConverter``
into ``~/.cache/editspec/ct2/<sha256 of config.json and the weights, and the ctranslate2 version>``
(``editspec.cache``; or ``cache``), once: the conversion is written to a temporary folder and renamed into place, so
a run that is interrupted leaves nothing half-written. It is converted from the float32 weights
(as ``load_t5`` reads them); ``ct2-int8`` loads the same files with ``compute_type="int8"`` (CTranslate2 quantizes at load time).

``CT2Peer.translate`` decodes rows of input ids (EOS included) with ``translate_batch``:
``beam_size=1`` (greedy), ``min_decoding_length=0`` (EOS may come first, as in our greedy
decoding), ``max_decoding_length`` = ``max_new``, no scores (``profiling.timed`` passes the batch's
largest row budget and cuts each row to its own, as our core's budgets are). Ids
become CTranslate2's string tokens and back through the converted model's own vocabulary.

``ctranslate2`` is an optional extra (``pip install editspec[peers]``): it is imported only here,
and the modes are skipped with a note when it is missing.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Sequence

from editspec.cache import cache_dir
from editspec.errors import EditspecError

COMPUTE = {"ct2-greedy": "float32", "ct2-int8": "int8", "ct2-beam4": "float32"}  # mode -> CTranslate2 compute_type
BEAMS = {"ct2-beam4": 4}  # mode -> beam_size (others: 1, greedy)
WEIGHT_FILES = ("config.json", "model.safetensors", "pytorch_model.bin")
# the converter writes the vocabulary from the folder's tokenizer: a conversion made without one
# (placeholder tokens) must not be found for a folder that has one
KEYED_FILES = (*WEIGHT_FILES, "tokenizer.json", "tokenizer_config.json", "spiece.model")


def missing() -> str | None:
    """Why the ct2 modes cannot run here (ctranslate2 not installed), or None."""
    try:
        import ctranslate2  # noqa: F401  (deliberately lazy: an optional extra)
    except ImportError:
        return "ctranslate2 is not installed (pip install 'editspec[peers]')"
    return None


def weights_key(t5_dir: str | os.PathLike) -> str:
    """sha256 of the T5's config, weight and tokenizer files and of the ctranslate2 version (a new
    version may write another model format)."""
    import ctranslate2  # deliberately lazy: an optional extra

    digest = hashlib.sha256(ctranslate2.__version__.encode())
    found = False
    for name in KEYED_FILES:
        path = Path(t5_dir) / name
        if path.is_file():
            found = found or name in WEIGHT_FILES[1:]
            digest.update(name.encode())
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
    if not found:
        raise EditspecError(f"no T5 weights in {t5_dir} to convert for CTranslate2")
    return digest.hexdigest()


def _converter(t5_dir: str | os.PathLike):
    """``TransformersConverter`` that loads the T5 in float32, as ``modeling.t5.load_t5`` does
    (it would load the dtype of the config, and cannot read float64 checkpoints)."""
    import torch
    from ctranslate2.converters import TransformersConverter  # deliberately lazy: an optional extra

    class Float32Converter(TransformersConverter):
        def load_model(self, model_class, model_name_or_path, **kwargs):
            return super().load_model(model_class, model_name_or_path, **{**kwargs, "dtype": torch.float32})

    return Float32Converter(str(t5_dir))


def converted(t5_dir: str | os.PathLike, cache: str | os.PathLike | None = None) -> Path:
    """The CTranslate2 conversion (float32) of the T5 in ``t5_dir``, converted on the first call
    and found in the cache afterwards."""
    if not Path(t5_dir).is_dir():
        raise EditspecError(f"CTranslate2 converts a local T5 directory, not {t5_dir}")
    target = Path(cache or cache_dir("ct2")) / weights_key(t5_dir)
    if (target / "model.bin").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
    try:
        _converter(t5_dir).convert(str(work / "model"), quantization="float32", force=True)
        try:
            os.replace(work / "model", target)
        except OSError:  # another process converted it first
            if not (target / "model.bin").is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


class CT2Peer:
    """Translators of one converted T5 (one per compute type, loaded on first use) and the
    id <-> token mapping around them."""

    def __init__(self, model_dir: Path, device: str = "cpu", threads: int = 1):
        self.model_dir, self.device, self.threads = model_dir, device, threads
        # the converter writes the tokenizer's tokens in id order: a token's index is its id
        vocab = json.loads((model_dir / "shared_vocabulary.json").read_text(encoding="utf-8"))
        self.tokens: list[str] = vocab
        self.ids: dict[str, int] = {}
        for i, token in enumerate(vocab):
            self.ids.setdefault(token, i)
        self.translators: dict[str, object] = {}

    @classmethod
    def load(cls, t5_dir: str | os.PathLike, device: str = "cpu", threads: int = 1,
             cache: str | os.PathLike | None = None) -> "CT2Peer":
        return cls(converted(t5_dir, cache), device, threads)

    def translator(self, compute_type: str):
        if compute_type not in self.translators:
            import ctranslate2  # deliberately lazy: an optional extra

            # intra_threads: the profile's fixed thread count, as torch's; one batch at a time
            self.translators[compute_type] = ctranslate2.Translator(
                str(self.model_dir), device=self.device, compute_type=compute_type,
                inter_threads=1, intra_threads=self.threads)
        return self.translators[compute_type]

    def translate(self, mode: str, rows: Sequence[Sequence[int]], max_new: int) -> list[list[int]]:
        """Greedy (or the mode's beam search's best) output ids per row (``rows``: input ids with EOS;
        output: no start token, no EOS)."""
        source = [[self.tokens[i] for i in row] for row in rows]
        results = self.translator(COMPUTE[mode]).translate_batch(
            source, beam_size=BEAMS.get(mode, 1), max_decoding_length=max_new, min_decoding_length=0,
            max_input_length=0, return_scores=False)
        return [[self.ids[t] for t in r.hypotheses[0]] for r in results]
