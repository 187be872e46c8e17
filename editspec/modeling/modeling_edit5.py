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
    realize     yesterday he went to the school .             (editspec.edits.realize)

Architecture (h: encoder states, one vector per input token)::

    h        = T5 encoder(input_ids)                            (T5Stack, 12 layers in base)
    tags     = argmax classifier(norm(T5Block(h)))              (relative position bias)
    s        = Linear([h ; tag_embedding(tags)])                ("concatenated, feed-forward")
    pointer  = Linear_q(s) · Linear_k(norm(T5Block(s)))ᵀ / √d   over kept positions
               + b[bucket(j - i)]                                 (learned offset bias)
    states   = norm(T5Block(s + order_embedding(new position) · kept))
    decoder  = T5Stack decoder (1 layer) cross-attending `states`; shared embedding, lm head

The position embedding of the p-th kept token of the new order is p, which is also the number
of the marker that inserts after it (EOS gets n + 1, deleted tokens none): the decoder's
cross-attention can find "after which token" by position alone.

Pointer loss: cross-entropy of each kept token's (and EOS's) row of pointer logits, masked to
kept positions, against its successor; not Sinkhorn normalisation. Sinkhorn pushes the whole
matrix towards a permutation, which matters when many tokens move and compete for the same
successor (DiscoFuse, where the paper measured it). GEC hardly reorders: on W&I+LOCNESS train
(word level, annotator 0, editspec.edits.convert) 7.7% of pairs move a token, but only 1.5% of
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

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import torch
from torch import nn
from torch.nn import functional as F
from transformers import AutoConfig, AutoModel, PreTrainedTokenizerBase, T5Config, T5EncoderModel
from transformers import initialization as init
from transformers.cache_utils import DynamicCache, EncoderDecoderCache
from transformers.masking_utils import create_bidirectional_mask
from transformers.modeling_outputs import ModelOutput
from transformers.utils import logging
from transformers.models.t5.modeling_t5 import T5Attention, T5Block, T5LayerNorm, T5PreTrainedModel, T5Stack

from editspec.modeling.tensors import IGNORE, label_log_probs, pad
from editspec.modeling.configuration_edit5 import EdiT5Config
from editspec.modeling.t5 import CACHE_ARG
from editspec.tokenization.edits import DELETE, KEEP, Edits, realize_aligned
from editspec.tokenization.tokens import encode, marker_ids, render


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


def _stack(config: T5Config) -> T5Stack:
    stack = T5Stack(config)
    # EdiT5Model owns the one embedding (``shared``) and passes inputs_embeds; a stack-owned copy
    # would be a second vocab x d_model matrix (or an alias that safetensors refuses to save).
    stack.embed_tokens = None
    return stack


def decode_order(
    pointer_logits: torch.Tensor, kept: torch.Tensor, start: torch.Tensor, order_bias: float = 0.0
) -> list[list[int]]:
    """Greedy pointer walk: a permutation of each row's kept positions (``start`` excluded).

    pointer_logits (B, L, L): row i scores the successor of position i. kept (B, L) bool,
    True at ``start``. start (B,) the EOS position where the walk begins. From ``start``, go to
    the highest-scoring kept position not yet visited, until all are visited. Vectorised over
    the batch; one step per kept token, except in the common case where every row's best
    successor is already the next kept token in source order (no reordering), which is
    checked at once and returns the source order (the walk would give exactly that).
    ``order_bias`` is added to each position's source-order successor: a confidence bias
    (as GECToR's for KEEP) that trades reordering recall for precision.
    """
    batch, length, _ = pointer_logits.shape
    rows = torch.arange(batch, device=kept.device)
    positions = torch.arange(length, device=kept.device).expand(batch, length)
    tokens = kept.clone()
    tokens[rows, start] = False  # the kept tokens to order
    counts = tokens.sum(1)

    # Next kept token in source order: suffix minimum of kept positions, shifted by one.
    pos = torch.where(tokens, positions, length)
    suffix_min = pos.flip(1).cummin(1).values.flip(1)
    following = torch.cat([suffix_min[:, 1:], suffix_min.new_full((batch, 1), length)], 1)
    following = torch.where(following == length, start[:, None], following)
    following[rows, start] = torch.where(counts > 0, suffix_min[:, 0], start)
    if order_bias:
        pointer_logits = pointer_logits.clone()
        pointer_logits[rows[:, None], positions, following] += order_bias
    masked = pointer_logits.masked_fill(~kept[:, None, :], float("-inf"))
    if bool((masked.argmax(-1) == following)[kept].all()):
        return [positions[b][tokens[b]].tolist() for b in range(batch)]

    visited = ~tokens
    current = start.clone()
    steps = []
    for _ in range(int(counts.max())):
        scores = masked[rows, current].masked_fill(visited, float("-inf"))
        current = scores.argmax(-1)
        steps.append(current)
        visited[rows, current] = True  # finished rows re-mark a visited position: harmless
    order = torch.stack(steps, 1).tolist() if steps else [[] for _ in range(batch)]
    return [row[:n] for row, n in zip(order, counts.tolist())]


# what a shared-encoder EdiT5 reads from its T5 (never saved with it), and the T5 settings that
# must agree for the heads to read that encoder
T5_PARTS = ("encoder.", "shared.")
ENCODER_FIELDS = ("vocab_size", "d_model", "d_kv", "d_ff", "num_heads", "num_layers", "feed_forward_proj",
                  "relative_attention_num_buckets", "relative_attention_max_distance", "layer_norm_epsilon")


class EdiT5Model(T5PreTrainedModel):
    """EdiT5; see the module docstring. A ``T5PreTrainedModel`` (so a ``PreTrainedModel``) for
    T5's weight initialisation of every T5 block, including those outside the two stacks."""

    config_class = EdiT5Config
    config: EdiT5Config
    base_model_prefix = "edit5"
    _tied_weights_keys = {"lm_head.weight": "shared.weight"}  # only if config.tie_word_embeddings

    def __init__(self, config: EdiT5Config):
        super().__init__(config)
        d = config.d_model
        self.shared = nn.Embedding(config.vocab_size, d)
        self.encoder = _stack(config.t5_config())
        layer_config = config.t5_config()  # standalone blocks read their attention backend here
        layer_config._attn_implementation = self.encoder.config._attn_implementation
        self.dropout = nn.Dropout(config.dropout_rate)
        # 1. tags
        self.tag_layer = T5Block(layer_config, has_relative_attention_bias=True)
        self.tag_norm = T5LayerNorm(d, eps=config.layer_norm_epsilon)
        self.tag_classifier = nn.Linear(d, 2)
        self.tag_embedding = nn.Embedding(2, config.tag_embedding_dim)
        self.tag_projection = nn.Linear(d + config.tag_embedding_dim, d)
        # 2. pointers
        self.pointer_query = nn.Linear(d, d)
        self.pointer_key_layer = T5Block(layer_config, has_relative_attention_bias=True)
        self.pointer_key_norm = T5LayerNorm(d, eps=config.layer_norm_epsilon)
        self.pointer_key = nn.Linear(d, d)
        self.pointer_offset = (
            nn.Embedding(config.relative_attention_num_buckets, 1) if config.pointer_offset_bias else None
        )
        # 3. insertions: new-order positions, one layer, the decoder
        self.order_embedding = nn.Embedding(config.max_order_positions, d)
        self.order_layer = T5Block(layer_config, has_relative_attention_bias=False)
        self.order_norm = T5LayerNorm(d, eps=config.layer_norm_epsilon)
        self.decoder = _stack(config.t5_config(decoder=True))
        self.lm_head = nn.Linear(d, config.vocab_size, bias=False)
        if config.marker_ids:  # pointed markers
            self.marker_query = nn.Linear(d, d)
            self.marker_key = nn.Linear(d, d)
            self.marker_gap_key = nn.Linear(d, d) if config.marker_gap else None
            self._marker_lookup = None  # (marker ids, token id -> p or -1), built on first use
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
            factor, d = self.config.initializer_factor, self.config.d_model
            init.normal_(module.shared.weight, std=factor * 1.0)
            if not self.config.tie_word_embeddings:
                init.normal_(module.lm_head.weight, std=factor * 1.0)
            init.normal_(module.tag_embedding.weight, std=factor * 1.0)
            init.normal_(module.order_embedding.weight, std=factor * 1.0)
            if module.pointer_offset is not None:
                init.zeros_(module.pointer_offset.weight)  # no prior: learned from the data
            linears = [module.tag_classifier, module.tag_projection, module.pointer_query, module.pointer_key]
            if self.config.marker_ids:
                linears += [module.marker_query, module.marker_key]
            for linear in linears:
                init.normal_(linear.weight, std=factor * linear.in_features**-0.5)
                init.zeros_(linear.bias)
            if self.config.marker_ids and self.config.marker_gap:  # zero: added to a pointed
                init.zeros_(module.marker_gap_key.weight)  # checkpoint, it starts as that model
                init.zeros_(module.marker_gap_key.bias)

    def get_input_embeddings(self) -> nn.Embedding:
        return self.shared

    def set_input_embeddings(self, embeddings: nn.Embedding) -> None:
        self.shared = embeddings

    # -- the pieces, shared by training (forward) and inference (generate_edits) --

    def _encode(self, input_ids, attention_mask, encoder_hidden_states=None):
        h = encoder_hidden_states  # given when the encoder is a T5's that has already run
        if h is None:
            h = self.encoder(inputs_embeds=self.shared(input_ids), attention_mask=attention_mask).last_hidden_state
        mask = create_bidirectional_mask(config=self._layer_config, inputs_embeds=h, attention_mask=attention_mask)
        return h, mask

    def _tag_logits(self, h, mask):
        return self.tag_classifier(self.tag_norm(self.tag_layer(h, attention_mask=mask)[0]))

    def _tagged_states(self, h, tags):
        return self.dropout(self.tag_projection(torch.cat([h, self.tag_embedding(tags)], -1)))

    def _pointer_logits(self, s, mask, kept, is_eos):
        query = self.pointer_query(s)
        key = self.pointer_key(self.pointer_key_norm(self.pointer_key_layer(s, attention_mask=mask)[0]))
        logits = query @ key.transpose(1, 2) / self.config.d_model**0.5
        length = s.shape[1]
        if self.pointer_offset is not None:
            positions = torch.arange(length, device=s.device)
            bucket = T5Attention._relative_position_bucket(
                positions[None, :] - positions[:, None], bidirectional=True,
                num_buckets=self.config.relative_attention_num_buckets,
                max_distance=self.config.relative_attention_max_distance,
            )
            # stored /10: Adam moves each parameter by ~lr per step whatever its gradient, so a
            # plain scalar would need thousands of steps to reach a margin of a few nats
            logits = logits + 10.0 * self.pointer_offset(bucket).squeeze(-1).to(logits.dtype)
        # successors are kept tokens other than oneself; EOS may point to itself (nothing kept)
        self_loop = torch.eye(length, dtype=torch.bool, device=s.device) & ~is_eos[:, :, None]
        allowed = kept[:, None, :] & ~self_loop
        return logits.masked_fill(~allowed, torch.finfo(logits.dtype).min)

    def _decoder_states(self, s, order_positions, mask):
        placed = (order_positions > 0).unsqueeze(-1).to(s.dtype)  # deleted tokens get no position
        x = s + self.order_embedding(order_positions) * placed
        return self.order_norm(self.order_layer(x, attention_mask=mask)[0])

    def _marker_states(self, states, order_positions):
        """Per marker p: the state of the token it inserts after (B, M, d), that state's key
        (B, M, d) and whether p can occur (B, M); M = min(markers, input length). None without
        pointed markers."""
        if not self.config.marker_ids:
            return None
        batch, length, d = states.shape
        count = min(len(self.config.marker_ids), length)
        last = order_positions.max(1, keepdim=True).values  # EOS: n + 1, unique
        # the token at each new position q = 0..count; q = 0 (marker 0, the start) is EOS too
        rows, cols = ((order_positions > 0) & (order_positions <= count)).nonzero(as_tuple=True)
        at = torch.zeros(batch, count + 1, dtype=torch.long, device=states.device)
        at[rows, order_positions[rows, cols]] = cols
        at[:, 0] = (order_positions == last).long().argmax(1)
        gather = lambda index: states.gather(1, index[..., None].expand(batch, count, d))
        marker_states = gather(at[:, :count])
        keys = self.marker_key(marker_states)
        if self.config.marker_gap:  # the token at new position p + 1 closes gap p (EOS: gap n)
            keys = keys + self.marker_gap_key(gather(at[:, 1:]))
        valid = torch.arange(count, device=states.device) < last  # p <= n
        return marker_states, keys, valid

    def _marker_tables(self, device):
        """(marker token ids (M,), token id -> marker number or -1 (vocab,)); not buffers, which
        loading from a checkpoint would leave uninitialised."""
        if self._marker_lookup is None or self._marker_lookup[0].device != device:
            ids = torch.tensor(self.config.marker_ids, device=device)
            index = torch.full((self.config.vocab_size,), -1, dtype=torch.long, device=device)
            index[ids] = torch.arange(len(ids), device=device)
            self._marker_lookup = (ids, index)
        return self._marker_lookup

    def _insertion_embeds(self, ids, markers):
        """Decoder inputs: token embeddings, plus for a pointed marker its kept token's state."""
        embeds = self.shared(ids)
        if markers is None:
            return embeds
        marker_states, _, valid = markers
        p = self._marker_tables(ids.device)[1][ids]
        p = p.masked_fill(p >= valid.shape[1], -1)  # teacher forcing only: decoding never emits one
        pointed = marker_states.gather(1, p.clamp(min=0)[..., None].expand(*p.shape, embeds.shape[-1]))
        return embeds + pointed * (p >= 0).unsqueeze(-1).to(embeds.dtype)

    def _lm_logits(self, hidden, markers=None):
        """Insertion logits (B, T, vocab); pointed markers' logits replaced (see above)."""
        # T5 1.0 rescales before the tied output embedding
        logits = self.lm_head(hidden * self.config.d_model**-0.5 if self.config.tie_word_embeddings else hidden)
        if markers is None:
            return logits
        _, keys, valid = markers
        scores = self.marker_query(hidden) @ keys.transpose(-1, -2) / self.config.d_model**0.5  # (B, T, M)
        floor = torch.finfo(logits.dtype).min
        marker_ids, count = self._marker_tables(logits.device)[0], valid.shape[1]
        logits[..., marker_ids[:count]] = scores.masked_fill(~valid[:, None], floor).to(logits.dtype)
        logits[..., marker_ids[count:]] = floor  # past the input: cannot occur
        return logits

    def _shift_right(self, labels):
        shifted = labels.new_full(labels.shape, self.config.pad_token_id)
        shifted[:, 1:] = labels[:, :-1]
        shifted[:, 0] = self.config.decoder_start_token_id
        return shifted.masked_fill(shifted == IGNORE, self.config.pad_token_id)

    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor,
        tags: torch.LongTensor,
        order_positions: torch.LongTensor,
        insertion_labels: torch.LongTensor | None = None,
        pointers: torch.LongTensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        rows: torch.LongTensor | None = None,
    ) -> EdiT5Output:
        """Teacher-forced pass (``editspec.modeling.features.collate_edit5`` gives the arguments).

        Gold ``tags`` and ``order_positions`` feed the later steps; the losses are computed
        for the labels given (``tags`` always, ``pointers`` and ``insertion_labels`` if given).
        With ``rows``, label row i reads input row ``rows[i]``: the encoder runs once per input,
        however many targets it has (``log_likelihood`` of an output's variants).
        """
        if int(order_positions.max()) >= self.config.max_order_positions:
            raise ValueError(
                f"order position {int(order_positions.max())} needs max_order_positions > the "
                f"feature max_length (config has {self.config.max_order_positions})"
            )
        if decoder_input_ids is None:
            if insertion_labels is None:
                raise ValueError("forward needs insertion_labels or decoder_input_ids")
            decoder_input_ids = self._shift_right(insertion_labels)
        h, mask = self._encode(input_ids, attention_mask)
        tag_logits = self._tag_logits(h, mask)
        if rows is not None:
            h, tag_logits, input_ids, attention_mask = h[rows], tag_logits[rows], input_ids[rows], attention_mask[rows]
            mask = None if mask is None else mask[rows]
        kept = tags == KEEP
        s = self._tagged_states(h, tags.clamp(min=0))  # padding (IGNORE) embeds as DELETE
        pointer_logits = self._pointer_logits(s, mask, kept, input_ids == self.config.eos_token_id)
        states = self._decoder_states(s, order_positions, mask)
        markers = self._marker_states(states, order_positions)
        hidden = self.decoder(
            inputs_embeds=self._insertion_embeds(decoder_input_ids, markers), encoder_hidden_states=states,
            encoder_attention_mask=attention_mask,
        ).last_hidden_state
        insertion_logits = self._lm_logits(hidden, markers)

        parts = {
            "tag": (tags, tag_logits, self.config.tag_loss_weight),
            "pointer": (pointers, pointer_logits, self.config.pointer_loss_weight),
            "insertion": (insertion_labels, insertion_logits, self.config.insertion_loss_weight),
        }
        losses, total, tokens = {}, tag_logits.new_zeros(()), 0
        for name, (labels, logits, weight) in parts.items():
            if labels is None:
                continue
            losses[name] = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=IGNORE)
            count = int((labels != IGNORE).sum())
            if count:  # an empty part (say, no insertions in the batch) has a NaN mean
                scale = count if self.config.loss_weighting == "tokens" else 1
                total = total + weight * scale * losses[name]
                tokens += count
        if self.config.loss_weighting == "tokens":
            total = total / max(tokens, 1)
        return EdiT5Output(
            loss=total, tag_loss=losses.get("tag"), pointer_loss=losses.get("pointer"),
            insertion_loss=losses.get("insertion"), tag_logits=tag_logits,
            pointer_logits=pointer_logits, insertion_logits=insertion_logits,
        )

    @torch.inference_mode()
    def log_likelihood(self, input_ids: torch.LongTensor, attention_mask: torch.Tensor,
                       tags: torch.LongTensor, order_positions: torch.LongTensor,
                       insertion_labels: torch.LongTensor, pointers: torch.LongTensor,
                       rows: torch.LongTensor | None = None) -> torch.Tensor:
        """log P(tags, order, insertions | input) per row [batch] (``collate_edit5`` gives the
        arguments; ``rows`` as in ``forward``): the teacher-forced log-probabilities of the three
        parts' labels, summed, as the factorisation above multiplies them (the losses of
        ``forward`` are their means)."""
        out = self(input_ids=input_ids, attention_mask=attention_mask, tags=tags, rows=rows,
                   order_positions=order_positions, insertion_labels=insertion_labels, pointers=pointers)
        return (label_log_probs(out.tag_logits, tags) + label_log_probs(out.pointer_logits, pointers)
                + label_log_probs(out.insertion_logits, insertion_labels))

    # -- inference --

    @torch.inference_mode()
    def generate_edits(
        self, input_ids: torch.LongTensor, attention_mask: torch.Tensor | None = None,
        max_insertion_tokens: int = 64, keep_bias: float | None = None, order_bias: float | None = None,
        stop_bias: float | None = None, encoder_hidden_states: torch.Tensor | None = None,
    ) -> list[Edits]:
        """Batched greedy tags, then order, then insertions (with a KV cache).

        ``encoder_hidden_states``: the encoder's output for these inputs, when the encoder is a
        T5's (``t5_encoder``) that has run already: the draft then costs the heads alone.

        ``keep_bias`` (added to the KEEP logit) and ``order_bias`` (added to the pointer logit of
        the source-order successor) are confidence biases for precision, ``stop_bias`` (added to
        the insertion decoder's EOS logit) its counterpart for insertions; default: the config's.

        Input rows are ``ids + [EOS]``, right-padded. Returned edits index each row's tokens
        without EOS; ``insertions`` end with EOS unless ``max_insertion_tokens`` ran out.
        """
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        batch, length = input_ids.shape
        if length >= self.config.max_order_positions:
            raise ValueError(
                f"input of {length} tokens; this model takes at most "
                f"{self.config.max_order_positions - 1} (with EOS)"
            )
        rows = torch.arange(batch, device=input_ids.device)
        valid = attention_mask.bool()
        eos_position = valid.sum(1) - 1
        if (eos_position < 0).any() or (input_ids[rows, eos_position] != self.config.eos_token_id).any():
            raise ValueError("every input row must end with EOS (right padding)")
        is_eos = torch.zeros_like(valid)
        is_eos[rows, eos_position] = True

        h, mask = self._encode(input_ids, attention_mask, encoder_hidden_states)
        keep_bias = self.config.keep_bias if keep_bias is None else keep_bias
        order_bias = self.config.order_bias if order_bias is None else order_bias
        stop_bias = self.config.stop_bias if stop_bias is None else stop_bias
        tag_logits = self._tag_logits(h, mask)
        keep_margin = tag_logits[..., KEEP] - tag_logits[..., 1 - KEEP] + keep_bias
        kept = ((keep_margin > 0) & valid) | is_eos
        s = self._tagged_states(h, kept.long())
        order = decode_order(self._pointer_logits(s, mask, kept, is_eos), kept, eos_position, order_bias)

        order_positions = torch.zeros_like(input_ids)
        for b, row in enumerate(order):  # one scatter per row (not per token)
            order_positions[b, row] = torch.arange(1, len(row) + 1, device=input_ids.device)
            order_positions[b, eos_position[b]] = len(row) + 1
        states = self._decoder_states(s, order_positions, mask)
        markers = self._marker_states(states, order_positions)
        insertions = self._greedy_insertions(states, attention_mask, max_insertion_tokens, markers, stop_bias)

        tags = kept.long().tolist()
        return [
            Edits(tags=tags[b][:n], order=order[b], insertions=insertions[b])
            for b, n in enumerate(eos_position.tolist())
        ]

    def _greedy_insertions(self, states, attention_mask, max_tokens: int, markers=None,
                           stop_bias: float = 0.0) -> list[list[int]]:
        """Greedy decoding with a KV cache, calling the decoder's T5Blocks directly: per step,
        T5Stack.forward rebuilds both masks and runs output-capturing wrappers, which costs as
        much as the one layer's compute. Equal to the teacher-forced T5Stack pass (tested)."""
        batch, eos, pad_id = states.shape[0], self.config.eos_token_id, self.config.pad_token_id
        cache = EncoderDecoderCache(DynamicCache(), DynamicCache())  # cross-attention K/V once
        cross_mask = create_bidirectional_mask(
            config=self.decoder.config, inputs_embeds=states[:, :1], attention_mask=attention_mask,
            encoder_hidden_states=states,
        )
        cross_bias = states.new_zeros(1, self.config.num_heads, 1, states.shape[1])  # T5: none
        token = torch.full((batch, 1), self.config.decoder_start_token_id, device=states.device)
        done = torch.zeros(batch, dtype=torch.bool, device=states.device)
        out = []
        for _ in range(max_tokens):
            # one query over all cached keys needs no causal mask; block 0 adds the relative bias
            hidden, self_bias = self._insertion_embeds(token, markers), None
            for block in self.decoder.block:
                hidden, self_bias, _ = block(
                    hidden, position_bias=self_bias, encoder_hidden_states=states,
                    encoder_attention_mask=cross_mask, encoder_decoder_position_bias=cross_bias,
                    **{CACHE_ARG: cache},
                )
            hidden = self.decoder.final_layer_norm(hidden[:, -1:])
            logits = self._lm_logits(hidden, markers)[:, 0]
            if stop_bias:
                logits[:, eos] += stop_bias
            token = logits.argmax(-1).masked_fill(done, pad_id)
            out.append(token)
            done = done | (token == eos)
            if bool(done.all()):
                break
            token = token[:, None]
        result = []
        for row in torch.stack(out, 1).tolist() if out else [[] for _ in range(batch)]:
            result.append(row[: row.index(eos) + 1] if eos in row else row)
        return result

    def correct(
        self, tok: PreTrainedTokenizerBase, texts: Sequence[str], batch_size: int = 32,
        max_insertion_tokens: int = 64,
    ) -> list[str]:
        """Corrected texts: encode, generate_edits, realize, render (source characters kept)."""
        markers, eos = marker_ids(tok), tok.eos_token_id
        encoded = encode(tok, texts)
        out = []
        for start in range(0, len(encoded), batch_size):
            chunk = encoded[start : start + batch_size]
            ids = [e.ids + [eos] for e in chunk]
            input_ids = pad(ids, tok.pad_token_id).to(self.device)
            attention_mask = pad([[1] * len(i) for i in ids], 0).to(self.device)
            for enc, edits in zip(chunk, self.generate_edits(input_ids, attention_mask, max_insertion_tokens)):
                out.append(render(tok, enc, realize_aligned(enc.ids, edits, markers, eos)))
        return out

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
                _copy_stack(t5.decoder, model.decoder)
                if not tied and not model.config.tie_word_embeddings:  # T5 1.1: its own lm head
                    model.lm_head.weight.copy_(t5.lm_head.weight)
        return model


    # -- the heads on a T5's encoder --

    def sit_on(self, t5: nn.Module) -> None:
        """Read ``t5``'s encoder and embeddings from now on: the same modules, not copies (one
        encoder pass serves the draft and the verification). ``t5``: a T5ForConditionalGeneration
        or T5EncoderModel whose encoder has this EdiT5's shape."""
        theirs = t5.config
        mismatched = [f"{f} {getattr(theirs, f)} != {getattr(self.config, f)}" for f in ENCODER_FIELDS
                      if getattr(theirs, f) != getattr(self.config, f)]
        if mismatched:
            raise ValueError(f"the T5's encoder does not fit this EdiT5: {'; '.join(mismatched)}")
        self.shared = t5.get_input_embeddings()
        self.encoder = t5.encoder
        if self.config.tie_word_embeddings:
            self.lm_head.weight = self.shared.weight

    def _t5_parts(self) -> tuple[str, ...]:
        return T5_PARTS + (("lm_head.",) if self.config.tie_word_embeddings else ())  # tied: the T5's embedding

    @classmethod
    def on_t5(cls, t5: nn.Module, t5_encoder: str = "../t5", **overrides) -> "EdiT5Model":
        """Fresh EdiT5 heads on ``t5``'s encoder (shared, see ``sit_on``); ``t5_encoder`` is where
        ``save_pretrained``'s directory finds that T5 again (relative to it)."""
        model = cls.from_t5(t5, t5_encoder=t5_encoder, **overrides)
        model.sit_on(t5)
        return model

    def save_pretrained(self, save_directory, *args, **kwargs):
        """As ``PreTrainedModel.save_pretrained``; with ``t5_encoder``, without the T5's encoder and
        embeddings (the T5's checkpoint holds them)."""
        if self.config.t5_encoder and kwargs.get("state_dict") is None:
            kwargs["state_dict"] = {k: v for k, v in self.state_dict().items() if not k.startswith(self._t5_parts())}
        return super().save_pretrained(save_directory, *args, **kwargs)

    @classmethod
    def from_pretrained(cls, path, *args, t5: nn.Module | None = None, **kwargs) -> "EdiT5Model":
        """As ``PreTrainedModel.from_pretrained``; an EdiT5 with ``t5_encoder`` sits on ``t5`` when
        given (the T5 already loaded), else on the encoder of the T5 checkpoint it names."""
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
