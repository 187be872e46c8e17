"""What a recipe's model is: T5 or EdiT5, built fresh or from a checkpoint, and its optimizer groups."""

from __future__ import annotations

import json

import torch

from editspec.modeling import features
from editspec.tokenization.tokens import marker_ids
from training.config import resolve


class ModelKind:
    """What differs between T5 and EdiT5: features, collate, target length, model class. The
    classes import transformers when asked for: the data workers featurize with a ModelKind and
    build no model (~5 s of imports a spawned worker)."""

    def __init__(self, name: str):
        self.name = name
        if name == "t5":
            self.featurize_batch, self.collate = features.t5_features_batch, features.collate_t5
            self.target_key = "labels"
        elif name == "edit5":
            self.featurize_batch, self.collate = features.edit5_features_batch, features.collate_edit5
            self.target_key = "insertion_labels"
        else:
            raise SystemExit(f"unknown model type {name!r} (t5 or edit5)")

    @property
    def config_cls(self) -> type:
        if self.name == "t5":
            from transformers import T5Config

            return T5Config
        from editspec.modeling.modeling_edit5 import EdiT5Config

        return EdiT5Config

    @property
    def model_cls(self) -> type:
        if self.name == "t5":
            from transformers import T5ForConditionalGeneration

            return T5ForConditionalGeneration
        from editspec.modeling.modeling_edit5 import EdiT5Model

        return EdiT5Model

    def lengths(self, ex: dict) -> tuple[int, int]:
        return len(ex["input_ids"]), len(ex[self.target_key])

    def build(self, model_cfg: dict, tok) -> torch.nn.Module:
        extra = {}  # EdiT5: pointed markers (new heads when the checkpoint has none)
        if model_cfg.get("point_markers"):
            if self.name != "edit5":
                raise SystemExit("model.point_markers is an EdiT5 option")
            extra["marker_ids"] = marker_ids(tok)
            if model_cfg.get("marker_gap"):  # unset: a checkpoint keeps its own
                extra["marker_gap"] = True
        elif model_cfg.get("marker_gap"):
            raise SystemExit("model.marker_gap needs model.point_markers")
        if model_cfg.get("init_from"):
            path = resolve(model_cfg["init_from"])
            source_type = json.loads((path / "config.json").read_text()).get("model_type")
            if self.name == "edit5" and source_type == "t5":  # the paper's start: a T5 checkpoint
                keep = {k: v for k, v in (model_cfg.get("config") or {}).items()
                        if k in ("num_decoder_layers", "max_order_positions", "tag_embedding_dim",
                                 "loss_weighting", "dropout_rate", "tag_loss_weight",
                                 "pointer_loss_weight", "insertion_loss_weight")}
                if model_cfg.get("share_encoder"):  # the heads on this T5's own encoder, frozen
                    from transformers import T5ForConditionalGeneration

                    t5 = T5ForConditionalGeneration.from_pretrained(str(path), dtype=torch.float32)
                    return frozen_encoder(self.model_cls.on_t5(t5, t5_encoder=str(path.resolve()), **keep, **extra))
                return self.model_cls.from_t5(str(path), **keep, **extra)
            # fp32 master weights even from a bf16 checkpoint (the shipped ones); the recipe's
            # dropout applies too (a fine-tune regularises a model pre-trained without it), the
            # architecture comes from the checkpoint
            recipe = model_cfg.get("config") or {}
            regularise = {"dropout_rate": recipe["dropout_rate"]} if "dropout_rate" in recipe else {}
            model = self.model_cls.from_pretrained(str(path), dtype=torch.float32, **regularise, **extra)
            return frozen_encoder(model) if getattr(model.config, "t5_encoder", None) else model
        fields = dict(model_cfg.get("config") or {}, **extra)
        fields.update(vocab_size=len(tok), pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
        if self.name == "t5":
            fields.setdefault("decoder_start_token_id", tok.pad_token_id)
        return self.model_cls(self.config_cls(**fields))


def frozen_encoder(model: torch.nn.Module) -> torch.nn.Module:
    """An EdiT5 whose heads sit on a T5's encoder trains the heads alone: the encoder and the
    embeddings stay the T5's, so the T5's output does not change."""
    for p in [*model.encoder.parameters(), *model.shared.parameters()]:
        p.requires_grad_(False)
    return model

def component_losses(output) -> dict[str, torch.Tensor]:
    """Losses the model reports besides the total (EdiT5: tags, pointers, insertions)."""
    items = output.items() if hasattr(output, "items") else vars(output).items()
    return {k: v for k, v in items if k != "loss" and k.endswith("loss") and torch.is_tensor(v)}


def add_position_prior(model: torch.nn.Module, strength: float) -> int:
    """Add ``strength`` to the relative attention bias of "previous token" (head 0) and, in
    bidirectional layers, "next token" (head 1); returns the number of bias tables changed.

    Copying, most of GEC, needs a head that looks at the neighbouring token (the encoder state
    then says "I follow x", which the decoder's cross-attention matches). T5's only position
    signal is this bias; learned from ~0 it stayed unfocused for 1500 steps of our small T5
    (offset -1 was never a head's clear favourite), so the prior puts those heads in place.
    A copy probe measured it (reports/models.md, "Position prior"): a tiny T5 copies random
    sequences after 200 steps with the prior (loss 0.27) and is still far from it after 600
    without (3.45; 5.29 = chance).
    """
    from transformers.models.t5.modeling_t5 import T5Attention

    changed = 0
    for module in model.modules():
        if isinstance(module, T5Attention) and module.has_relative_attention_bias:
            bidirectional = not module.is_decoder
            offsets = [-1, 1] if bidirectional else [-1]
            for head, offset in enumerate(offsets[: module.n_heads]):
                bucket = T5Attention._relative_position_bucket(
                    torch.tensor(offset), bidirectional=bidirectional,
                    num_buckets=module.relative_attention_num_buckets,
                    max_distance=module.relative_attention_max_distance)
                with torch.no_grad():
                    module.relative_attention_bias.weight[bucket, head] += strength
            changed += 1
    return changed


def param_groups(model: torch.nn.Module, lr: float, weight_decay: float,
                 position_bias_lr_scale: float = 1.0) -> list[dict]:
    """AdamW groups: weights decay; biases and norms do not; relative position biases do not
    and learn ``position_bias_lr_scale`` times faster.

    T5 has no position embeddings: position is only its relative attention bias, one scalar per
    (bucket, head). Adam moves each parameter by about lr per step whatever its gradient, so at
    lr 1e-3 these scalars spanned < 0.5 nats after 1000 steps of our small T5 (measured), too
    little for attention to single out the neighbouring token that copying needs.
    """
    def kind(name: str) -> str:
        if "relative_attention_bias" in name:
            return "position"
        return "no_decay" if any(k in name.lower() for k in ("bias", "norm")) else "decay"

    settings = {"decay": (weight_decay, 1.0), "no_decay": (0.0, 1.0), "position": (0.0, position_bias_lr_scale)}
    named = [(kind(n), p) for n, p in model.named_parameters() if p.requires_grad]
    return [{"params": [p for k, p in named if k == group], "weight_decay": wd, "lr": lr * scale}
            for group, (wd, scale) in settings.items() if any(k == group for k, _ in named)]


