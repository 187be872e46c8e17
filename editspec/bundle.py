"""The loaded models of a correction and what is built once for them: the ``Bundle``.

    bundle = Bundle.load(edit5="models/edit5", t5="models/t5", kinds=("t5", "edit5"))
    bundle.t5, bundle.t5_tokenizer         the T5 and its tokenizer (None: not loaded)
    bundle.edit5, bundle.edit5_tokenizer   the EdiT5 and its tokenizer
    bundle.markers                         EdiT5's position markers (<extra_id_N> ids)
    bundle.shared_vocab                    EdiT5 reads the T5's ids: its drafts need no re-tokenizing
    bundle.decoders                        each T5's decoding-core decoder, kept across calls
    bundle.costs                           the T5's pass costs and what each speculative drafter has
                                           cost per sentence, kept for the next process (``decoding.costs``)

The corrector (and so the server and Ray's actors), ``editspec profile``'s ``Profiler`` and
training's dev scoring (the model being trained, alone) run the modes of ``editspec.decoding.runners``
on a bundle; nothing about the models is kept anywhere else (a tokenizer's ``Codec`` is kept on
the tokenizer, ``tokenization.tokens``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Sequence

import torch

from editspec.decoding.costs import Costs
from editspec.decoding.decoder import Decoders
from editspec.modeling import quantization
from editspec.modeling.loading import load_edit5, resolve_device
from editspec.modeling.precision import resolve_dtype
from editspec.modeling.t5 import load_t5
from editspec.tokenization.tokens import marker_ids

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

KINDS = ("t5", "edit5")


@dataclass(eq=False)
class Bundle:
    """Loaded models (either may be None), their tokenizers and paths, and what is built once
    for them (see the module docstring)."""

    t5: torch.nn.Module | None = None
    t5_tokenizer: PreTrainedTokenizerBase | None = None
    edit5: torch.nn.Module | None = None
    edit5_tokenizer: PreTrainedTokenizerBase | None = None
    paths: dict[str, str | None] = field(default_factory=dict)  # kind -> the directory it came from
    decoders: Decoders = field(default_factory=Decoders)
    costs: Costs = field(init=False)  # a fresh one for each set of models (``only``)

    def __post_init__(self) -> None:
        self.markers = marker_ids(self.edit5_tokenizer) if self.edit5 is not None else []
        self.shared_vocab = self.t5 is not None and self.edit5 is not None and \
            self.edit5_tokenizer.get_vocab() == self.t5_tokenizer.get_vocab()
        self.costs = Costs(self.t5, self.edit5 if self.shared_vocab else None)

    @classmethod
    def load(cls, edit5: str | os.PathLike | None = None, t5: str | os.PathLike | None = None,
             kinds: Sequence[str] = KINDS, device: str | torch.device | None = None,
             dtype: str | torch.dtype | None = None, quantize: str | None = None) -> Bundle:
        """The models of ``kinds`` among those at ``edit5`` and ``t5`` (checkpoint directories;
        None: none), on ``device`` (``loading.resolve_device``) in ``dtype``
        (``precision.resolve_dtype``), their linears quantized if asked (``modeling.quantization``).
        An EdiT5 whose heads sit on this T5's encoder shares it."""
        dev = resolve_device(device)
        dtype = resolve_dtype(dtype, dev, quantize)
        loaded: dict = {}
        if "t5" in kinds and t5 is not None:
            loaded["t5"], loaded["t5_tokenizer"] = load_t5(t5, device=dev, dtype=dtype)
        if "edit5" in kinds and edit5 is not None:
            loaded["edit5"], loaded["edit5_tokenizer"] = load_edit5(edit5, dev, loaded.get("t5"), t5)
            loaded["edit5"].to(dtype)
        if quantize is not None:  # the T5 first: a shared encoder is then quantized once
            for kind in KINDS:
                if kind in loaded:
                    quantization.quantize(loaded[kind], quantize)
        return cls(**loaded, paths={"edit5": edit5 and str(edit5), "t5": t5 and str(t5)})

    def only(self, *kinds: str) -> Bundle:
        """The same models of ``kinds`` alone, sharing this bundle's decoders (no model loads again)."""
        drop = {k: None for kind in KINDS if kind not in kinds for k in (kind, f"{kind}_tokenizer")}
        return replace(self, **drop)

    @property
    def device(self) -> torch.device:
        return (self.t5 if self.t5 is not None else self.edit5).device
