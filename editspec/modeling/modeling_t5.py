"""A T5 checkpoint for inference without transformers: ``config.json`` and ``model.safetensors``
read into ``t5_layers``' modules (the checkpoint's own key names), for the decoding core
(``editspec.decoding``), the scorers and EdiT5 heads that sit on its encoder.

    InferenceT5.from_pretrained(dir, dtype)     shared, encoder, decoder, lm_head (tied to shared)
    supported(dir)                              None, or why transformers must load it instead

What it reads is what training saves (T5 1.0 layout: tied embeddings, an activation of
``t5_layers.ACTIVATIONS``, one safetensors file); a hub id, ``pytorch_model.bin``, sharded weights or
an untied T5 1.1 head go through transformers' ``T5ForConditionalGeneration``
(``modeling.t5.load_t5`` chooses). The modules are built empty and take the file's
tensors as they are (cast to ``dtype``): nothing is initialised only to be overwritten
(``t5_layers.uninitialised``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from torch import nn

from editspec.modeling.t5_layers import ACTIVATIONS, Stack, uninitialised

WEIGHTS = "model.safetensors"
# transformers' T5Config defaults, for the fields a config.json may leave out (tested against T5Config)
T5_DEFAULTS = {"vocab_size": 32128, "d_model": 512, "d_kv": 64, "d_ff": 2048, "num_layers": 6,
               "num_decoder_layers": None, "num_heads": 8, "relative_attention_num_buckets": 32,
               "relative_attention_max_distance": 128, "layer_norm_epsilon": 1e-6, "feed_forward_proj": "relu",
               "pad_token_id": 0, "eos_token_id": 1, "decoder_start_token_id": None, "dropout_rate": 0.1}
# checkpoints of older transformers carry it; T5 never reads it (transformers ignores it too)
UNUSED = "decoder.block.0.layer.1.EncDecAttention.relative_attention_bias.weight"


def activation(feed_forward_proj: str) -> tuple[bool, str]:
    """(gated, activation name) of a ``feed_forward_proj`` ("gated-gelu": gated, gelu_new), as
    ``T5Config`` derives them."""
    parts = feed_forward_proj.split("-")
    return parts[0] == "gated", "gelu_new" if feed_forward_proj == "gated-gelu" else parts[-1]


class Settings:
    """A ``config.json`` as its transformers config reads it: ``DEFAULTS`` for the fields it leaves
    out, and the T5 blocks' derived fields."""

    model_type = ""
    DEFAULTS: dict = {}

    def __init__(self, values: dict):
        for key, default in self.DEFAULTS.items():
            setattr(self, key, values.get(key, default))
        self.is_gated_act, self.dense_act_fn = activation(self.feed_forward_proj)

    def to_dict(self) -> dict:
        """The settings, as a transformers config's ``to_dict`` lists them."""
        return {"model_type": self.model_type, **vars(self)}

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike):
        return cls(json.loads((Path(path) / "config.json").read_text(encoding="utf-8")))


class T5Settings(Settings):
    """A T5 ``config.json`` as ``T5Config`` reads it (the derived fields included)."""

    model_type = "t5"
    DEFAULTS = T5_DEFAULTS

    def __init__(self, values: dict):
        super().__init__(values)
        if self.num_decoder_layers is None:
            self.num_decoder_layers = self.num_layers
        if self.decoder_start_token_id is None:
            self.decoder_start_token_id = self.pad_token_id
        # T5 1.0 scales the decoder output before the tied head
        self.scale_decoder_outputs = values.get("scale_decoder_outputs", values.get("tie_word_embeddings", True) is not False)
        self.tie_word_embeddings = True
        self.is_encoder_decoder = True


def checkpoint(path: str | os.PathLike, settings: type[Settings]) -> tuple[dict, set[str]] | str:
    """(its config.json, its weights' names) of a checkpoint of ``settings.model_type`` with one
    safetensors file and an activation ``t5_layers`` has; else why it is none we read
    (transformers then loads it, and reports what is damaged)."""
    where = Path(path)
    if not (where / "config.json").is_file() or not (where / WEIGHTS).is_file():
        return f"no config.json and {WEIGHTS} in {path}"
    try:
        values = json.loads((where / "config.json").read_text(encoding="utf-8"))
        from safetensors import safe_open

        with safe_open(str(where / WEIGHTS), "pt") as f:
            keys = set(f.keys())
    except Exception as e:  # a damaged file
        return f"unreadable: {e}"
    if not isinstance(values, dict) or values.get("model_type") != settings.model_type:
        return f"not a {settings.model_type} config"
    act = settings(values).dense_act_fn
    return f"activation {act}" if act not in ACTIVATIONS else (values, keys)


def supported(path: str | os.PathLike) -> str | None:
    """None when ``InferenceT5`` reads the checkpoint at ``path``, else why not."""
    found = checkpoint(path, T5Settings)
    if isinstance(found, str):
        return found
    values, keys = found
    if "lm_head.weight" in keys or values.get("tie_word_embeddings") is False:
        return "an untied output layer"
    return None


class InferenceT5(nn.Module):
    """T5 for the decoding core: the modules of transformers' ``T5ForConditionalGeneration`` (same
    names: ``shared``, ``encoder``, ``decoder``, ``lm_head``), no ``forward`` or ``generate``."""

    def __init__(self, config: T5Settings):
        super().__init__()
        self.config = config
        self.shared = nn.Embedding(config.vocab_size, config.d_model)
        self.encoder = Stack(config, config.num_layers, embed_tokens=self.shared)
        self.decoder = Stack(config, config.num_decoder_layers, decoder=True, embed_tokens=self.shared)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.lm_head.weight = self.shared.weight

    @property
    def device(self) -> torch.device:
        return self.shared.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.shared.weight.dtype

    def get_input_embeddings(self) -> nn.Embedding:
        return self.shared

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, dtype: torch.dtype = torch.float32) -> "InferenceT5":
        """The checkpoint at ``path`` (``supported``) in ``dtype``, eval mode, on the CPU."""
        from safetensors.torch import load_file

        config = T5Settings.from_pretrained(path)
        with uninitialised():
            model = cls(config)
        state = {k: v.to(dtype) for k, v in load_file(str(Path(path) / WEIGHTS)).items() if k != UNUSED}
        missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
        aliases = {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "lm_head.weight"}
        if unexpected or set(missing) - aliases:
            raise ValueError(f"{path}: weights {sorted(unexpected)[:3]} unexpected, {sorted(set(missing) - aliases)[:3]} "
                             "missing")
        model.encoder.embed_tokens = model.decoder.embed_tokens = model.shared  # tied, as transformers ties them
        model.lm_head.weight = model.shared.weight
        return model.eval()
