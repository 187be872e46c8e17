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

Modules, bottom-up as transformers builds its models (each step one ``nn.Module``)::

    EdiT5Model              shared embedding, T5 encoder; forward (teacher-forced), generate_edits
      tagger                EdiT5Tagger: step 1, and the tagged states s
      pointer               EdiT5PointerNetwork: step 2's successor logits
      insertion             EdiT5InsertionDecoder: step 3 (order layer, decoder, lm head, greedy loop)
        markers             EdiT5PointedMarkers: the pointed markers' logits and inputs

Checkpoints keep the flat names of the first EdiT5s (``tag_layer.*``, ``pointer_key.*``,
``decoder.*``, ``lm_head.*``, ...): ``CHECKPOINT_NAMES`` maps them to these modules on load and
back on save (transformers' conversion mapping), so every saved EdiT5 loads and saves unchanged.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F
from transformers import AutoConfig, AutoModel, T5Config, T5EncoderModel
from transformers import initialization as init
from transformers.cache_utils import DynamicCache, EncoderDecoderCache
from transformers.conversion_mapping import register_checkpoint_conversion_mapping
from transformers.core_model_loading import WeightRenaming
from transformers.masking_utils import create_bidirectional_mask
from transformers.modeling_outputs import ModelOutput
from transformers.utils import logging
from transformers.models.t5.modeling_t5 import T5Attention, T5Block, T5LayerNorm, T5PreTrainedModel, T5Stack

from editspec.modeling.configuration_edit5 import EdiT5Config
from editspec.modeling.t5 import CACHE_ARG
from editspec.modeling.tensors import IGNORE, label_log_probs
from editspec.tokenization.edits import DELETE, KEEP, Edits


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


class EdiT5Tagger(nn.Module):
    """Step 1: keep/delete logits from one T5 block over the encoder states, and the tagged states
    ``s = Linear([h ; tag_embedding(tags)])`` that steps 2 and 3 read ("concatenated, feed-forward")."""

    def __init__(self, config: EdiT5Config, layer_config: T5Config):
        super().__init__()
        d = config.d_model
        self.dropout = nn.Dropout(config.dropout_rate)
        self.layer = T5Block(layer_config, has_relative_attention_bias=True)
        self.norm = T5LayerNorm(d, eps=config.layer_norm_epsilon)
        self.classifier = nn.Linear(d, 2)
        self.embedding = nn.Embedding(2, config.tag_embedding_dim)
        self.projection = nn.Linear(d + config.tag_embedding_dim, d)

    def forward(self, h: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """Tag logits (B, L, 2) of the encoder states h (B, L, d)."""
        return self.classifier(self.norm(self.layer(h, attention_mask=mask)[0]))

    def tagged_states(self, h: torch.Tensor, tags: torch.LongTensor) -> torch.Tensor:
        """s (B, L, d): each state with its tag (gold in training, predicted in inference)."""
        return self.dropout(self.projection(torch.cat([h, self.embedding(tags)], -1)))


class EdiT5PointerNetwork(nn.Module):
    """Step 2: row i of the logits scores each kept position as the successor of position i,
    ``Linear_q(s) · Linear_k(norm(T5Block(s)))ᵀ / √d`` plus the learned offset bias."""

    def __init__(self, config: EdiT5Config, layer_config: T5Config):
        super().__init__()
        d = config.d_model
        self.scale = d**0.5
        self.num_buckets = config.relative_attention_num_buckets
        self.max_distance = config.relative_attention_max_distance
        self.query = nn.Linear(d, d)
        self.key_layer = T5Block(layer_config, has_relative_attention_bias=True)
        self.key_norm = T5LayerNorm(d, eps=config.layer_norm_epsilon)
        self.key = nn.Linear(d, d)
        self.offset = nn.Embedding(self.num_buckets, 1) if config.pointer_offset_bias else None

    def forward(self, s: torch.Tensor, mask: torch.Tensor | None, kept: torch.Tensor,
                is_eos: torch.Tensor) -> torch.Tensor:
        """Pointer logits (B, L, L), masked to kept successors other than oneself."""
        query = self.query(s)
        key = self.key(self.key_norm(self.key_layer(s, attention_mask=mask)[0]))
        logits = query @ key.transpose(1, 2) / self.scale
        length = s.shape[1]
        if self.offset is not None:
            positions = torch.arange(length, device=s.device)
            bucket = T5Attention._relative_position_bucket(
                positions[None, :] - positions[:, None], bidirectional=True,
                num_buckets=self.num_buckets, max_distance=self.max_distance,
            )
            # stored /10: Adam moves each parameter by ~lr per step whatever its gradient, so a
            # plain scalar would need thousands of steps to reach a margin of a few nats
            logits = logits + 10.0 * self.offset(bucket).squeeze(-1).to(logits.dtype)
        # successors are kept tokens other than oneself; EOS may point to itself (nothing kept)
        self_loop = torch.eye(length, dtype=torch.bool, device=s.device) & ~is_eos[:, :, None]
        allowed = kept[:, None, :] & ~self_loop
        return logits.masked_fill(~allowed, torch.finfo(logits.dtype).min)


# One batch's pointed markers: per marker p, the state of the kept token it inserts after (B, M, d),
# that state's key (B, M, d) and whether p can occur (B, M); M = min(markers, input length).
Markers = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


class EdiT5PointedMarkers(nn.Module):
    """Pointed markers (module docstring): a marker's logit is the decoder state's match with the
    kept token it inserts after, and a marker fed back brings that token's state with it."""

    def __init__(self, config: EdiT5Config):
        super().__init__()
        d = config.d_model
        self.scale = d**0.5
        self.marker_ids, self.vocab_size = list(config.marker_ids), config.vocab_size
        self.query = nn.Linear(d, d)
        self.key = nn.Linear(d, d)
        self.gap_key = nn.Linear(d, d) if config.marker_gap else None
        self._lookup = None  # (marker ids, token id -> p or -1), built on first use

    def tables(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """(marker token ids (M,), token id -> marker number or -1 (vocab,)); not buffers, which
        loading from a checkpoint would leave uninitialised."""
        if self._lookup is None or self._lookup[0].device != device:
            ids = torch.tensor(self.marker_ids, device=device)
            index = torch.full((self.vocab_size,), -1, dtype=torch.long, device=device)
            index[ids] = torch.arange(len(ids), device=device)
            self._lookup = (ids, index)
        return self._lookup

    def forward(self, states: torch.Tensor, order_positions: torch.LongTensor) -> Markers:
        """The batch's ``Markers`` from the states the insertion decoder reads."""
        batch, length, d = states.shape
        count = min(len(self.marker_ids), length)
        last = order_positions.max(1, keepdim=True).values  # EOS: n + 1, unique
        # the token at each new position q = 0..count; q = 0 (marker 0, the start) is EOS too
        rows, cols = ((order_positions > 0) & (order_positions <= count)).nonzero(as_tuple=True)
        at = torch.zeros(batch, count + 1, dtype=torch.long, device=states.device)
        at[rows, order_positions[rows, cols]] = cols
        at[:, 0] = (order_positions == last).long().argmax(1)
        gather = lambda index: states.gather(1, index[..., None].expand(batch, count, d))  # noqa: E731
        marker_states = gather(at[:, :count])
        keys = self.key(marker_states)
        if self.gap_key is not None:  # the token at new position p + 1 closes gap p (EOS: gap n)
            keys = keys + self.gap_key(gather(at[:, 1:]))
        valid = torch.arange(count, device=states.device) < last  # p <= n
        return marker_states, keys, valid

    def embed(self, ids: torch.LongTensor, embeds: torch.Tensor, markers: Markers) -> torch.Tensor:
        """Decoder inputs: the token embeddings, plus for a pointed marker its kept token's state."""
        marker_states, _, valid = markers
        p = self.tables(ids.device)[1][ids]
        p = p.masked_fill(p >= valid.shape[1], -1)  # teacher forcing only: decoding never emits one
        pointed = marker_states.gather(1, p.clamp(min=0)[..., None].expand(*p.shape, embeds.shape[-1]))
        return embeds + pointed * (p >= 0).unsqueeze(-1).to(embeds.dtype)

    def point(self, hidden: torch.Tensor, logits: torch.Tensor, markers: Markers) -> torch.Tensor:
        """``logits`` (B, T, vocab) with the markers' columns replaced by their pointed logits."""
        _, keys, valid = markers
        scores = self.query(hidden) @ keys.transpose(-1, -2) / self.scale  # (B, T, M)
        floor = torch.finfo(logits.dtype).min
        marker_ids, count = self.tables(logits.device)[0], valid.shape[1]
        logits[..., marker_ids[:count]] = scores.masked_fill(~valid[:, None], floor).to(logits.dtype)
        logits[..., marker_ids[count:]] = floor  # past the input: cannot occur
        return logits


class EdiT5InsertionDecoder(nn.Module):
    """Step 3: the tagged states in their new order (``order_embedding`` of each kept token's new
    position, one T5 block), and the one-layer T5 decoder that writes the insertions from them,
    with its lm head and, with ``marker_ids``, the pointed markers. The token embedding is the
    model's (``shared``, which may be a T5's), passed in."""

    def __init__(self, config: EdiT5Config, layer_config: T5Config):
        super().__init__()
        d = config.d_model
        self.config = config
        self.order_embedding = nn.Embedding(config.max_order_positions, d)
        self.order_layer = T5Block(layer_config, has_relative_attention_bias=False)
        self.order_norm = T5LayerNorm(d, eps=config.layer_norm_epsilon)
        self.decoder = _stack(config.t5_config(decoder=True))
        self.lm_head = nn.Linear(d, config.vocab_size, bias=False)
        self.markers = EdiT5PointedMarkers(config) if config.marker_ids else None

    def states(self, s: torch.Tensor, order_positions: torch.LongTensor,
               mask: torch.Tensor | None) -> tuple[torch.Tensor, Markers | None]:
        """(the states the decoder cross-attends (B, L, d), the batch's markers or None)."""
        placed = (order_positions > 0).unsqueeze(-1).to(s.dtype)  # deleted tokens get no position
        x = s + self.order_embedding(order_positions) * placed
        states = self.order_norm(self.order_layer(x, attention_mask=mask)[0])
        return states, None if self.markers is None else self.markers(states, order_positions)

    def embed(self, ids: torch.LongTensor, shared: nn.Embedding, markers: Markers | None) -> torch.Tensor:
        embeds = shared(ids)
        return embeds if markers is None else self.markers.embed(ids, embeds, markers)

    def logits(self, hidden: torch.Tensor, markers: Markers | None) -> torch.Tensor:
        """Insertion logits (B, T, vocab); pointed markers' logits replaced."""
        # T5 1.0 rescales before the tied output embedding
        logits = self.lm_head(hidden * self.config.d_model**-0.5 if self.config.tie_word_embeddings else hidden)
        return logits if markers is None else self.markers.point(hidden, logits, markers)

    def forward(self, decoder_input_ids: torch.LongTensor, states: torch.Tensor, attention_mask: torch.Tensor,
                markers: Markers | None, shared: nn.Embedding) -> torch.Tensor:
        """Teacher-forced insertion logits (B, T, vocab)."""
        hidden = self.decoder(
            inputs_embeds=self.embed(decoder_input_ids, shared, markers), encoder_hidden_states=states,
            encoder_attention_mask=attention_mask,
        ).last_hidden_state
        return self.logits(hidden, markers)

    def greedy(self, states: torch.Tensor, attention_mask: torch.Tensor, max_tokens: int,
               markers: Markers | None, shared: nn.Embedding, stop_bias: float = 0.0) -> list[list[int]]:
        """Greedy decoding with a KV cache, calling the decoder's T5Blocks directly: per step,
        T5Stack.forward rebuilds both masks and runs output-capturing wrappers, which costs as
        much as the one layer's compute. Equal to the teacher-forced pass (tested)."""
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
            hidden, self_bias = self.embed(token, shared, markers), None
            for block in self.decoder.block:
                hidden, self_bias, _ = block(
                    hidden, position_bias=self_bias, encoder_hidden_states=states,
                    encoder_attention_mask=cross_mask, encoder_decoder_position_bias=cross_bias,
                    **{CACHE_ARG: cache},
                )
            hidden = self.decoder.final_layer_norm(hidden[:, -1:])
            logits = self.logits(hidden, markers)[:, 0]
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


# The checkpoints' names (the first EdiT5s' flat attributes) -> the modules above. transformers
# renames on load and back on save, so a checkpoint's keys never change. A name matches whole
# (transformers ends an alphanumeric pattern at a name boundary): pointer_key, not pointer_key_layer.
CHECKPOINT_NAMES = {
    "tag_layer": "tagger.layer", "tag_norm": "tagger.norm", "tag_classifier": "tagger.classifier",
    "tag_embedding": "tagger.embedding", "tag_projection": "tagger.projection",
    "pointer_query": "pointer.query", "pointer_key_layer": "pointer.key_layer",
    "pointer_key_norm": "pointer.key_norm", "pointer_key": "pointer.key", "pointer_offset": "pointer.offset",
    "order_embedding": "insertion.order_embedding", "order_layer": "insertion.order_layer",
    "order_norm": "insertion.order_norm", "decoder": "insertion.decoder", "lm_head": "insertion.lm_head",
    "marker_query": "insertion.markers.query", "marker_key": "insertion.markers.key",
    "marker_gap_key": "insertion.markers.gap_key",
}
register_checkpoint_conversion_mapping(
    "edit5", [WeightRenaming(f"^{old}", new) for old, new in CHECKPOINT_NAMES.items()], overwrite=True)

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
    _tied_weights_keys = {"insertion.lm_head.weight": "shared.weight"}  # only if config.tie_word_embeddings

    def __init__(self, config: EdiT5Config):
        super().__init__(config)
        self.shared = nn.Embedding(config.vocab_size, config.d_model)
        self.encoder = _stack(config.t5_config())
        layer_config = config.t5_config()  # standalone blocks read their attention backend here
        layer_config._attn_implementation = self.encoder.config._attn_implementation
        self.tagger = EdiT5Tagger(config, layer_config)
        self.pointer = EdiT5PointerNetwork(config, layer_config)
        self.insertion = EdiT5InsertionDecoder(config, layer_config)
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
            markers = insertion.markers
            init.normal_(module.shared.weight, std=factor * 1.0)
            if not self.config.tie_word_embeddings:
                init.normal_(insertion.lm_head.weight, std=factor * 1.0)
            init.normal_(tagger.embedding.weight, std=factor * 1.0)
            init.normal_(insertion.order_embedding.weight, std=factor * 1.0)
            if pointer.offset is not None:
                init.zeros_(pointer.offset.weight)  # no prior: learned from the data
            linears = [tagger.classifier, tagger.projection, pointer.query, pointer.key]
            if markers is not None:
                linears += [markers.query, markers.key]
            for linear in linears:
                init.normal_(linear.weight, std=factor * linear.in_features**-0.5)
                init.zeros_(linear.bias)
            if markers is not None and markers.gap_key is not None:  # zero: added to a pointed
                init.zeros_(markers.gap_key.weight)  # checkpoint, it starts as that model
                init.zeros_(markers.gap_key.bias)

    def get_input_embeddings(self) -> nn.Embedding:
        return self.shared

    def set_input_embeddings(self, embeddings: nn.Embedding) -> None:
        self.shared = embeddings

    def get_output_embeddings(self) -> nn.Linear:
        return self.insertion.lm_head

    def encode(self, input_ids: torch.LongTensor, attention_mask: torch.Tensor,
               encoder_hidden_states: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(encoder states h, the heads' attention mask); ``encoder_hidden_states``: h, when the
        encoder is a T5's that has run already."""
        h = encoder_hidden_states
        if h is None:
            h = self.encoder(inputs_embeds=self.shared(input_ids), attention_mask=attention_mask).last_hidden_state
        mask = create_bidirectional_mask(config=self._layer_config, inputs_embeds=h, attention_mask=attention_mask)
        return h, mask

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
        h, mask = self.encode(input_ids, attention_mask)
        tag_logits = self.tagger(h, mask)
        if rows is not None:
            h, tag_logits, input_ids, attention_mask = h[rows], tag_logits[rows], input_ids[rows], attention_mask[rows]
            mask = None if mask is None else mask[rows]
        kept = tags == KEEP
        s = self.tagger.tagged_states(h, tags.clamp(min=0))  # padding (IGNORE) embeds as DELETE
        pointer_logits = self.pointer(s, mask, kept, input_ids == self.config.eos_token_id)
        states, markers = self.insertion.states(s, order_positions, mask)
        insertion_logits = self.insertion(decoder_input_ids, states, attention_mask, markers, self.shared)

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

        h, mask = self.encode(input_ids, attention_mask, encoder_hidden_states)
        keep_bias = self.config.keep_bias if keep_bias is None else keep_bias
        order_bias = self.config.order_bias if order_bias is None else order_bias
        stop_bias = self.config.stop_bias if stop_bias is None else stop_bias
        tag_logits = self.tagger(h, mask)
        keep_margin = tag_logits[..., KEEP] - tag_logits[..., 1 - KEEP] + keep_bias
        kept = ((keep_margin > 0) & valid) | is_eos
        s = self.tagger.tagged_states(h, kept.long())
        order = decode_order(self.pointer(s, mask, kept, is_eos), kept, eos_position, order_bias)

        order_positions = torch.zeros_like(input_ids)
        for b, row in enumerate(order):  # one scatter per row (not per token)
            order_positions[b, row] = torch.arange(1, len(row) + 1, device=input_ids.device)
            order_positions[b, eos_position[b]] = len(row) + 1
        states, markers = self.insertion.states(s, order_positions, mask)
        insertions = self.insertion.greedy(states, attention_mask, max_insertion_tokens, markers, self.shared,
                                           stop_bias)

        tags = kept.long().tolist()
        return [
            Edits(tags=tags[b][:n], order=order[b], insertions=insertions[b])
            for b, n in enumerate(eos_position.tolist())
        ]

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
            self.insertion.lm_head.weight = self.shared.weight

    def _t5_parts(self) -> tuple[str, ...]:
        return T5_PARTS + (("insertion.lm_head.",) if self.config.tie_word_embeddings else ())  # tied: T5's embedding

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
