"""EdiT5 (Mallinson et al. 2022): a T5 encoder, keep/delete tags, a pointer network that orders the
kept tokens, and a one-layer insertion decoder. Built from transformers' T5 blocks.

Inference is three greedy steps, in the order of the factorisation
P(y|x) = P(tags|x) · P(order|tags, x) · P(insertions|order, tags, x)::

    input       he  go  to  school  yesterday  .  </s>        (</s> = EOS, always kept)
    1. tags     1   0   1   1       1          1  1           tag layer + keep/delete classifier
    2. order    </s> -> yesterday -> he -> to -> school -> . -> </s>
                each kept token points to its successor; EOS is the start and the end. The walk
                from EOS takes the best unvisited kept token, so the order is always a
                permutation of the kept tokens.
    3. insert   <extra_id_2> went <extra_id_3> the </s>       1-layer decoder, greedy, KV cache
    realize     yesterday he went to the school .             (editspec.tokenization.edits.realize)

Architecture (h: encoder states, one vector per input token)::

    h        = T5 encoder(input_ids)                            (T5Stack, 12 layers in base)
    tags     = argmax classifier(norm(T5Block(h)))              (relative position bias)   tagger
    s        = Linear([h ; tag_embedding(tags)])                ("concatenated, feed-forward")
    pointer  = Linear_q(s) · Linear_k(norm(T5Block(s)))ᵀ / √d   over kept positions         pointer
               + b[bucket(j - i)]                                 (learned offset bias)
    states   = norm(T5Block(s + order_embedding(new position) · kept))                  insertion
    decoder  = T5Stack decoder (1 layer) cross-attending `states`; shared embedding, lm head

Each of the three heads is a module (``edit5_heads``: ``EdiT5Tagger``, ``EdiT5Pointer``,
``EdiT5InsertionDecoder``, named on the right); checkpoints keep the flat names they always had.

The position embedding of the p-th kept token of the new order is p, which is also the number
of the marker that inserts after it (EOS gets n + 1, deleted tokens none): the decoder's
cross-attention can find "after which token" by position alone.

Pointer loss: cross-entropy of each kept token's (and EOS's) row of pointer logits, masked to
kept positions, against its successor; not Sinkhorn normalisation. Sinkhorn pushes the whole
matrix towards a permutation, which matters when many tokens move and compete for the same
successor (DiscoFuse, where the paper measured it). GEC hardly reorders: on W&I+LOCNESS train
(word level, annotator 0, editspec.tokenization.edits.convert) 7.7% of pairs move a token, but only 1.5% of
all pointers differ from "the next kept token" (mostly one moved word or comma). Rows rarely
compete, so the row softmax trains the same decisions without Sinkhorn's iterations over
B x L x L and its numerical care; validity is guaranteed by the decoding walk instead.

The offset bias b (one scalar per T5 relative-position bucket of j - i) is ours, not the
paper's: with it "point to the next kept token" is one learned scalar, so a from-scratch model
orders correctly within a few hundred steps instead of first learning to match each token to
its predecessor through query·key. Measured (d_model 128, 2 layers, from scratch on W&I+FCE,
lr 2e-3, 1024-token batches; dev pointer loss on 300 W&I dev sentences at steps 100/300/400):
no bias 2.42/2.13/2.09, bias 2.26/1.50/1.26, bias stored /10 (below) 1.26/0.22/0.21.

Pointed markers (``marker_ids`` set; ours, not the paper's). With markers as vocabulary outputs,
the decoder must turn "this goes after that token" into the vocabulary row of that token's number,
a mapping it learns slowly: the EdiT5 shipped with them, teacher-forced on W&I dev's gold edits
(gold tags, order and insertion prefix fed), put 21% of the markers of replacements exactly
where the deleted token was (16% of other insertions' markers; reports/models.md, "Pointed markers").
Pointed, a marker's logit is the decoder state's match with the kept token it inserts after, as
the pointer network matches successors::

    logit(<marker p>) = Linear_q(hidden) · Linear_k(states[token at new position p]) / √d
                        (p = 0, "at the start": EOS's state, where the pointer walk starts too)

and a marker fed back to the decoder brings that token's state with it, so the span that follows
knows where it goes. Markers past the last kept token get no logit (they would insert at the end,
like marker n). With ``marker_gap`` the key is the gap's, both of its sides::

    key(p) = Linear_k(states[token at p]) + Linear_g(states[token at p + 1])   (p = n: EOS)

since whether a word is missing depends on what follows as much as on what precedes ("to
[the] store"). ``Linear_g`` starts at zero, so adding it to a pointed checkpoint changes nothing
until it is trained.

Losses are teacher-forced (gold tags feed the tag embedding and the pointer mask, gold order
feeds the position embeddings). ``loss_weighting="tokens"`` (the default, best in the paper)
weights each loss by its number of target tokens (tags, pointers, insertions), i.e. every
token counts the same; ``"mean"`` adds the three mean losses. ``*_loss_weight`` multiply either.
"""

from __future__ import annotations

import inspect
import os
import re
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from transformers import AutoConfig, AutoModel, T5Config, T5EncoderModel
from transformers import initialization as init
from transformers.cache_utils import DynamicCache, EncoderDecoderCache
from transformers.masking_utils import create_bidirectional_mask
from transformers.modeling_outputs import ModelOutput
from transformers.utils import logging
from transformers.models.t5.modeling_t5 import T5Block, T5LayerNorm, T5PreTrainedModel, T5Stack

from editspec.modeling.tensors import IGNORE
from editspec.modeling.configuration_edit5 import EdiT5Config
from editspec.modeling.edit5_heads import CHECKPOINT_NAMES, EdiT5Heads, to_checkpoint
from editspec.tokenization.edits import DELETE, KEEP


# the keyword of the key/value cache in T5's forward methods: transformers 5.24 renamed it from
# past_key_values (which now warns on every call, and goes in 5.40) to cache
CACHE_ARG = "cache" if "cache" in inspect.signature(T5Block.forward).parameters else "past_key_values"
# from_pretrained's renaming of a checkpoint's keys (regular expressions): tag_layer.* -> tagger.layer.*
KEY_MAPPING = {"^" + re.escape(old): new for old, new in CHECKPOINT_NAMES.items()}


@dataclass
class EdiT5Output(ModelOutput):
    loss: torch.Tensor | None = None
    tag_loss: torch.Tensor | None = None
    pointer_loss: torch.Tensor | None = None
    insertion_loss: torch.Tensor | None = None
    tag_logits: torch.Tensor | None = None  # (batch, length, 2)
    pointer_logits: torch.Tensor | None = None  # (batch, length, length): row i -> successor
    insertion_logits: torch.Tensor | None = None  # (batch, insertion length, vocab)


def tag_margins(tag_logits: torch.Tensor, tags: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(logit DELETE - logit KEEP, is a gold deletion) for every tagged token (``tags != IGNORE``):
    what training's ``dev_tag_auc`` ranks."""
    tagged = tags != IGNORE
    logits = tag_logits[tagged].float()
    return logits[:, DELETE] - logits[:, KEEP], tags[tagged] == DELETE


class _T5Layers:
    """``edit5_heads.Layers`` of transformers' T5 modules."""

    def __init__(self, config: EdiT5Config, layer_config: T5Config):
        self.config, self.layer_config = config, layer_config

    def block(self, relative_bias: bool) -> T5Block:
        return T5Block(self.layer_config, has_relative_attention_bias=relative_bias)

    def norm(self) -> T5LayerNorm:
        return T5LayerNorm(self.config.d_model, eps=self.config.layer_norm_epsilon)

    def decoder(self) -> T5Stack:
        return _stack(self.config.t5_config(decoder=True))


def _stack(config: T5Config) -> T5Stack:
    stack = T5Stack(config)
    # EdiT5Model owns the one embedding (``shared``) and passes inputs_embeds; a stack-owned copy
    # would be a second vocab x d_model matrix (or an alias that safetensors refuses to save).
    stack.embed_tokens = None
    return stack


class EdiT5Model(EdiT5Heads, T5PreTrainedModel):
    """EdiT5; see the module docstring: ``shared``, ``encoder`` and the heads ``tagger``, ``pointer``,
    ``insertion``, built from transformers' T5 modules (``_T5Layers``). A ``T5PreTrainedModel`` (so a
    ``PreTrainedModel``) for T5's weight initialisation of every T5 block, including those outside
    the two stacks; the heads' computations are ``EdiT5Heads``' (shared with
    ``edit5_inference.InferenceEdiT5``)."""

    config_class = EdiT5Config
    config: EdiT5Config
    base_model_prefix = "edit5"
    _tied_weights_keys = {"insertion.lm_head.weight": "shared.weight"}  # only if config.tie_word_embeddings
    output_class = EdiT5Output
    cache_arg = CACHE_ARG

    def __init__(self, config: EdiT5Config):
        super().__init__(config)
        self.shared = nn.Embedding(config.vocab_size, config.d_model)
        self.encoder = _stack(config.t5_config())
        layer_config = config.t5_config()  # standalone blocks read their attention backend here
        layer_config._attn_implementation = self.encoder.config._attn_implementation
        self._build_heads(config, _T5Layers(config, layer_config))  # tagger, pointer, insertion
        self._layer_config = layer_config
        self.post_init()

    @classmethod
    def is_custom_code(cls) -> bool:
        # transformers skips `_init_weights` of "custom code" modules without direct parameters
        # (a guard for remote code that writes weights in place), which would skip T5's init of
        # T5Attention / T5DenseActDense in our standalone blocks and the heads below. Our init
        # uses transformers.initialization, which respects loaded weights like library models.
        return False

    def _init_weights(self, module):
        super()._init_weights(module)  # T5 blocks and norms as in T5; generic init otherwise
        if isinstance(module, EdiT5Model):  # runs after the children: set the heads' scale
            factor = self.config.initializer_factor
            tagger, pointer, insertion = module.tagger, module.pointer, module.insertion
            init.normal_(module.shared.weight, std=factor * 1.0)
            if not self.config.tie_word_embeddings:
                init.normal_(insertion.lm_head.weight, std=factor * 1.0)
            init.normal_(tagger.embedding.weight, std=factor * 1.0)
            init.normal_(insertion.order_embedding.weight, std=factor * 1.0)
            if pointer.offset is not None:
                init.zeros_(pointer.offset.weight)  # no prior: learned from the data
            linears = [tagger.classifier, tagger.projection, pointer.query, pointer.key]
            if self.config.marker_ids:
                linears += [insertion.marker_query, insertion.marker_key]
            for linear in linears:
                init.normal_(linear.weight, std=factor * linear.in_features**-0.5)
                init.zeros_(linear.bias)
            if self.config.marker_ids and self.config.marker_gap:  # zero: added to a pointed
                init.zeros_(insertion.marker_gap_key.weight)  # checkpoint, it starts as that model
                init.zeros_(insertion.marker_gap_key.bias)

    def get_input_embeddings(self) -> nn.Embedding:
        return self.shared

    def set_input_embeddings(self, embeddings: nn.Embedding) -> None:
        self.shared = embeddings

    # -- transformers' T5 parts for the heads (``EdiT5Heads``) --

    def _encode(self, input_ids, attention_mask, encoder_hidden_states=None):
        h = encoder_hidden_states  # given when the encoder is a T5's that has already run
        if h is None:
            h = self.encoder(inputs_embeds=self.shared(input_ids), attention_mask=attention_mask).last_hidden_state
        mask = create_bidirectional_mask(config=self._layer_config, inputs_embeds=h, attention_mask=attention_mask)
        return h, mask

    def _new_cache(self) -> EncoderDecoderCache:
        return EncoderDecoderCache(DynamicCache(), DynamicCache())

    def _cross_mask(self, states, attention_mask):
        return create_bidirectional_mask(config=self.insertion.decoder.config, inputs_embeds=states[:, :1],
                                         attention_mask=attention_mask, encoder_hidden_states=states)

    # -- initialisation from T5 --

    @classmethod
    def from_t5(cls, t5: str | os.PathLike | nn.Module, **overrides) -> "EdiT5Model":
        """EdiT5 whose embedding, encoder and (if ``t5`` has one) first decoder layers come from a
        T5 checkpoint (directory, hub id or model); the heads start fresh. ``overrides`` set
        other EdiT5Config fields (``num_layers`` may be smaller: the first layers are taken).
        The insertion decoder inherits T5's span-corruption output format: sentinels + spans.
        """
        if not isinstance(t5, nn.Module):
            from transformers import T5ForConditionalGeneration

            t5 = T5ForConditionalGeneration.from_pretrained(t5)
        c = t5.config
        tied = bool(getattr(c, "scale_decoder_outputs", c.tie_word_embeddings))
        fields = dict(
            vocab_size=c.vocab_size, d_model=c.d_model, d_kv=c.d_kv, d_ff=c.d_ff, num_heads=c.num_heads,
            num_layers=c.num_layers, relative_attention_num_buckets=c.relative_attention_num_buckets,
            relative_attention_max_distance=c.relative_attention_max_distance,
            dropout_rate=c.dropout_rate, layer_norm_epsilon=c.layer_norm_epsilon,
            feed_forward_proj=c.feed_forward_proj, pad_token_id=c.pad_token_id,
            eos_token_id=c.eos_token_id, tie_word_embeddings=tied,
            decoder_start_token_id=getattr(c, "decoder_start_token_id", None) or c.pad_token_id,
        )
        model = cls(EdiT5Config(**{**fields, **overrides}))
        with torch.no_grad():
            model.shared.weight.copy_(t5.get_input_embeddings().weight)
            _copy_stack(t5.encoder, model.encoder)
            if getattr(t5, "decoder", None) is not None:
                _copy_stack(t5.decoder, model.insertion.decoder)
                if not tied and not model.config.tie_word_embeddings:  # T5 1.1: its own lm head
                    model.insertion.lm_head.weight.copy_(t5.lm_head.weight)
        return model

    # -- the heads on a T5's encoder (``EdiT5Heads.sit_on``) --

    @classmethod
    def on_t5(cls, t5: nn.Module, t5_encoder: str = "../t5", **overrides) -> "EdiT5Model":
        """Fresh EdiT5 heads on ``t5``'s encoder (shared, see ``sit_on``); ``t5_encoder`` is where
        ``save_pretrained``'s directory finds that T5 again (relative to it)."""
        model = cls.from_t5(t5, t5_encoder=t5_encoder, **overrides)
        model.sit_on(t5)
        return model

    def save_pretrained(self, save_directory, *args, **kwargs):
        """As ``PreTrainedModel.save_pretrained``, under the names checkpoints hold (``CHECKPOINT_NAMES``,
        one format on disk); with ``t5_encoder``, without the T5's encoder and embeddings (the T5's
        checkpoint holds them); a tied output layer is the embedding, saved once."""
        if kwargs.get("state_dict") is None:
            tied = ("insertion.lm_head.",) if self.config.tie_word_embeddings else ()
            skip = self._t5_parts() if self.config.t5_encoder else tied
            kwargs["state_dict"] = to_checkpoint({k: v for k, v in self.state_dict().items() if not k.startswith(skip)})
        return super().save_pretrained(save_directory, *args, save_original_format=False, **kwargs)

    @classmethod
    def from_pretrained(cls, path, *args, t5: nn.Module | None = None, **kwargs) -> "EdiT5Model":
        """As ``PreTrainedModel.from_pretrained``, the checkpoint's names mapped to the modules'
        (``CHECKPOINT_NAMES``); an EdiT5 with ``t5_encoder`` sits on ``t5`` when given (the T5
        already loaded), else on the encoder of the T5 checkpoint it names."""
        kwargs.setdefault("key_mapping", KEY_MAPPING)
        config = kwargs.get("config")
        if not isinstance(config, EdiT5Config):
            config = EdiT5Config.from_pretrained(path)
        if not config.t5_encoder:
            return super().from_pretrained(path, *args, **kwargs)
        if t5 is None:
            where = Path(path) / config.t5_encoder
            if not (where / "config.json").is_file():
                raise ValueError(f"this EdiT5 sits on the T5 encoder at {where}, and no T5 is there")
            t5 = T5EncoderModel.from_pretrained(where, dtype=kwargs.get("dtype"))
        verbosity = logging.get_verbosity()
        logging.set_verbosity_error()  # the T5's parts are missing from this checkpoint by design
        try:
            model, info = super().from_pretrained(path, *args, output_loading_info=True, **kwargs)
        finally:
            logging.set_verbosity(verbosity)
        missing = [k for k in info["missing_keys"] if not k.startswith(model._t5_parts())]
        if missing:
            raise ValueError(f"the EdiT5 checkpoint at {path} lacks {', '.join(missing[:3])}")
        model.sit_on(t5)
        return model


def _copy_stack(source: T5Stack, target: T5Stack) -> None:
    """Copy the first ``len(target.block)`` blocks and the final norm (strict: shapes must match)."""
    keep = len(target.block)
    state = {
        k: v for k, v in source.state_dict().items()
        if not k.startswith("embed_tokens.")
        and not k.endswith("EncDecAttention.relative_attention_bias.weight")  # unused in old checkpoints
        and not (k.startswith("block.") and int(k.split(".")[1]) >= keep)
    }
    target.load_state_dict(state, strict=True)


# The Auto classes know "edit5" once this module is imported: AutoTokenizer reads config.json too
# and would otherwise warn about an unknown model type on every EdiT5 directory.
AutoConfig.register("edit5", EdiT5Config, exist_ok=True)
AutoModel.register(EdiT5Config, EdiT5Model, exist_ok=True)
