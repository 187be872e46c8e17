"""An EdiT5 checkpoint for inference without transformers: ``EdiT5Heads``' modules over ``t5_layers``'
blocks, loaded from ``config.json`` and ``model.safetensors`` (the names ``EdiT5Model.save_pretrained``
writes, ``edit5_heads.CHECKPOINT_NAMES``), so ``generate_edits`` and ``log_likelihood`` equal
``EdiT5Model``'s bit for bit (``tests/modeling/test_inference_models.py``) without the ~2.5 s of
importing transformers' T5.

    InferenceEdiT5.from_pretrained(dir, t5=None)   on the T5 it names (``t5_encoder``) when given
    supported(dir)                                 None, or why ``EdiT5Model`` must load it instead
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import torch
from torch import nn

from editspec.modeling.edit5_heads import EdiT5Heads, to_modules
from editspec.modeling.modeling_t5 import WEIGHTS, InferenceT5, Settings, checkpoint
from editspec.modeling.modeling_t5 import supported as t5_supported
from editspec.modeling.t5_layers import Block, Cache, LayerNorm, Stack, padding_mask, uninitialised

# EdiT5Config's defaults, for the fields a config.json may leave out (tested against EdiT5Config)
EDIT5_DEFAULTS = {"vocab_size": 32128, "d_model": 768, "d_kv": 64, "d_ff": 3072, "num_heads": 12, "num_layers": 12,
                  "num_decoder_layers": 1, "relative_attention_num_buckets": 32,
                  "relative_attention_max_distance": 128, "dropout_rate": 0.1, "layer_norm_epsilon": 1e-6,
                  "initializer_factor": 1.0, "feed_forward_proj": "relu", "max_order_positions": 512,
                  "tag_embedding_dim": 64, "tag_loss_weight": 1.0, "pointer_loss_weight": 1.0,
                  "insertion_loss_weight": 1.0, "loss_weighting": "tokens", "keep_bias": 0.0, "order_bias": 0.0,
                  "stop_bias": 0.0, "pointer_offset_bias": True, "marker_ids": None, "marker_gap": False,
                  "pad_token_id": 0, "eos_token_id": 1, "decoder_start_token_id": 0, "tie_word_embeddings": True,
                  "t5_encoder": None}


class EdiT5Settings(Settings):
    """An EdiT5 ``config.json`` as ``EdiT5Config`` reads it, with the T5 blocks' derived fields."""

    model_type = "edit5"
    DEFAULTS = EDIT5_DEFAULTS


def supported(path: str | os.PathLike) -> str | None:
    """None when ``InferenceEdiT5`` reads the checkpoint at ``path`` (and the T5 it sits on), else why not."""
    found = checkpoint(path, EdiT5Settings)
    if isinstance(found, str):
        return found
    values, keys = found
    settings = EdiT5Settings(values)
    if settings.tie_word_embeddings and "insertion.lm_head.weight" in to_modules(dict.fromkeys(keys)):
        return "a tied output layer saved apart"
    if settings.t5_encoder:
        return t5_supported(Path(path) / settings.t5_encoder)
    return None


class _Layers:
    """``edit5_heads.Layers`` of ``t5_layers``' modules."""

    def __init__(self, config: EdiT5Settings):
        self.config = config

    def block(self, relative_bias: bool) -> Block:
        return Block(self.config, relative_bias=relative_bias)

    def norm(self) -> LayerNorm:
        return LayerNorm(self.config.d_model, self.config.layer_norm_epsilon)

    def decoder(self) -> Stack:
        return Stack(self.config, self.config.num_decoder_layers, decoder=True)


class InferenceEdiT5(EdiT5Heads, nn.Module):
    """EdiT5 on ``t5_layers``: ``EdiT5Model``'s modules and parameter names, its heads' code."""

    output_class = SimpleNamespace  # forward's fields, as EdiT5Output's
    cache_arg = "cache"

    def __init__(self, config: EdiT5Settings):
        super().__init__()
        self.config = config
        self.shared = nn.Embedding(config.vocab_size, config.d_model)
        self.encoder = Stack(config, config.num_layers)
        self._build_heads(config, _Layers(config))  # tagger, pointer, insertion

    @property
    def device(self) -> torch.device:
        return self.tagger.classifier.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.tagger.classifier.weight.dtype

    # -- t5_layers' parts for the heads (``EdiT5Heads``) --

    def _encode(self, input_ids, attention_mask, encoder_hidden_states=None):
        h = encoder_hidden_states  # given when the encoder is a T5's that has already run
        if h is None:
            h = self.encoder(inputs_embeds=self.shared(input_ids), attention_mask=attention_mask).last_hidden_state
        return h, padding_mask(attention_mask, h.shape[1])

    def _new_cache(self) -> Cache:
        return Cache()

    def _cross_mask(self, states, attention_mask):
        return padding_mask(attention_mask, 1)

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, t5: InferenceT5 | None = None,
                        dtype: torch.dtype = torch.float32) -> "InferenceEdiT5":
        """The checkpoint at ``path`` (``supported``) in ``dtype``, eval mode, on the CPU; one with
        ``t5_encoder`` sits on ``t5`` when given (the T5 it names, loaded already), else on that
        T5's encoder, loaded here."""
        from safetensors.torch import load_file

        config = EdiT5Settings.from_pretrained(path)
        with uninitialised():
            model = cls(config)
        # under the checkpoint's names: the heads' load_state_dict hook renames them to the modules'
        state = {k: v.to(dtype) for k, v in load_file(str(Path(path) / WEIGHTS)).items()}
        missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
        tied = ("insertion.lm_head.",) if config.tie_word_embeddings else ()
        borrowed = model._t5_parts() if config.t5_encoder else tied
        lacking = [k for k in missing if not k.startswith(borrowed)]
        if unexpected or lacking:
            raise ValueError(f"{path}: weights {sorted(unexpected)[:3]} unexpected, {lacking[:3]} missing")
        if config.t5_encoder:
            model.sit_on(t5 if t5 is not None else InferenceT5.from_pretrained(Path(path) / config.t5_encoder, dtype))
        elif config.tie_word_embeddings:
            model.insertion.lm_head.weight = model.shared.weight
        return model.eval()
