"""EdiT5's heads over T5 layers: everything of ``EdiT5Model`` that is not the T5 encoder itself,
built bottom-up from three modules, shared by the two models that run them::

    EdiT5Tagger            1. keep/delete tags, and the tagged states      (tagger.*)
    EdiT5Pointer           2. each kept token's successor: the new order   (pointer.*)
    EdiT5InsertionDecoder  3. the states in the new order, the insertion   (insertion.*)
                              decoder, pointed markers
    EdiT5Heads             the mixin over them: the teacher-forced pass, log-likelihood, greedy
                           inference (tags, the pointer walk, insertions), sitting on a T5's encoder

    EdiT5Model      (modeling_edit5)        transformers' T5 blocks: training, from_t5, save
    InferenceEdiT5  (edit5_inference)       ``t5_layers``' blocks: inference without transformers

Each model gives its ``Layers`` (the T5 blocks, norm and decoder stack the modules are built from,
called alike), ``_encode`` (encoder states and the blocks' attention mask),
``_new_cache``/``_cross_mask``/``cache_arg`` for the insertion decoder's steps, and ``output_class``.
Checkpoints keep the flat names they always had (``CHECKPOINT_NAMES``: ``tag_layer.*`` is
``tagger.layer.*``), mapped on load and on save. The design, the factorisation and the worked
example are in ``modeling_edit5``'s docstring.
"""

from __future__ import annotations

from typing import Protocol

import torch
from torch import nn
from torch.nn import functional as F

from editspec.modeling.tensors import IGNORE, label_log_probs
from editspec.modeling.t5_layers import relative_position_bucket
from editspec.tokenization.edits import KEEP, Edits


# what a shared-encoder EdiT5 reads from its T5 (never saved with it), and the T5 settings that
# must agree for the heads to read that encoder
T5_PARTS = ("encoder.", "shared.")
ENCODER_FIELDS = ("vocab_size", "d_model", "d_kv", "d_ff", "num_heads", "num_layers", "feed_forward_proj",
                  "relative_attention_num_buckets", "relative_attention_max_distance", "layer_norm_epsilon")

# The names checkpoints hold (every EdiT5 saved, the shipped one included, and what ``save_pretrained``
# still writes: one format on disk) -> the modules' names: ``to_modules`` on load, ``to_checkpoint``
# on save. Keys under neither (encoder., shared.) are the same in both.
CHECKPOINT_NAMES = {
    "tag_layer.": "tagger.layer.", "tag_norm.": "tagger.norm.", "tag_classifier.": "tagger.classifier.",
    "tag_embedding.": "tagger.embedding.", "tag_projection.": "tagger.projection.",
    "pointer_query.": "pointer.query.", "pointer_key_layer.": "pointer.key_layer.",
    "pointer_key_norm.": "pointer.key_norm.", "pointer_key.": "pointer.key.", "pointer_offset.": "pointer.offset.",
    "order_embedding.": "insertion.order_embedding.", "order_layer.": "insertion.order_layer.",
    "order_norm.": "insertion.order_norm.", "decoder.": "insertion.decoder.", "lm_head.": "insertion.lm_head.",
    "marker_query.": "insertion.marker_query.", "marker_key.": "insertion.marker_key.",
    "marker_gap_key.": "insertion.marker_gap_key.",
}


def _renamed(name: str, names: dict[str, str]) -> str:
    prefix = next((p for p in names if name.startswith(p)), None)  # prefixes end in ".": at most one matches
    return name if prefix is None else names[prefix] + name[len(prefix):]


def to_modules(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A checkpoint's state dict under the modules' names (a key already so named is kept)."""
    return {_renamed(k, CHECKPOINT_NAMES): v for k, v in state.items()}


def _to_modules_hook(module: nn.Module, state: dict, prefix: str, *_) -> None:
    """``load_state_dict``'s pre-hook: the keys under ``prefix`` renamed in place, as ``to_modules``."""
    for key in [k for k in state if k.startswith(prefix)]:
        renamed = prefix + _renamed(key[len(prefix):], CHECKPOINT_NAMES)
        if renamed != key:
            state[renamed] = state.pop(key)


def to_checkpoint(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The modules' state dict under the names checkpoints hold."""
    return {_renamed(k, {new: old for old, new in CHECKPOINT_NAMES.items()}): v for k, v in state.items()}


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



class Layers(Protocol):
    """The T5 modules a model builds its heads from: transformers' (``EdiT5Model``) or ``t5_layers``'
    (``InferenceEdiT5``); they are called alike."""

    def block(self, relative_bias: bool) -> nn.Module: ...  # one T5 encoder block
    def norm(self) -> nn.Module: ...  # T5's layer norm
    def decoder(self) -> nn.Module: ...  # the insertion decoder's stack, without its own embedding


class EdiT5Tagger(nn.Module):
    """1. Keep or delete each token: a T5 block over the encoder states, a norm and a classifier;
    then each state joined with its tag's embedding: the tagged states the pointer and the
    insertion decoder read."""

    def __init__(self, config, layers: Layers):
        super().__init__()
        d = config.d_model
        self.layer = layers.block(relative_bias=True)
        self.norm = layers.norm()
        self.classifier = nn.Linear(d, 2)
        self.embedding = nn.Embedding(2, config.tag_embedding_dim)
        self.projection = nn.Linear(d + config.tag_embedding_dim, d)
        self.dropout = nn.Dropout(config.dropout_rate)

    def forward(self, h: torch.Tensor, mask) -> torch.Tensor:
        """Tag logits [B, L, 2] of encoder states ``h`` [B, L, d] (``mask``: the blocks' attention mask)."""
        return self.classifier(self.norm(self.layer(h, attention_mask=mask)[0]))

    def tagged(self, h: torch.Tensor, tags: torch.Tensor) -> torch.Tensor:
        """The tagged states [B, L, d]: ``h`` with each token's tag (``KEEP`` or ``DELETE``) [B, L]."""
        return self.dropout(self.projection(torch.cat([h, self.embedding(tags)], -1)))


class EdiT5Pointer(nn.Module):
    """2. The order of the kept tokens: each scores its successor, query · key (a T5 block and a
    norm under the keys), plus a learned offset bias by relative position (``modeling_edit5``)."""

    def __init__(self, config, layers: Layers):
        super().__init__()
        d = config.d_model
        self.config = config
        self.query = nn.Linear(d, d)
        self.key_layer = layers.block(relative_bias=True)
        self.key_norm = layers.norm()
        self.key = nn.Linear(d, d)
        self.offset = nn.Embedding(config.relative_attention_num_buckets, 1) if config.pointer_offset_bias else None

    def forward(self, s: torch.Tensor, mask, kept: torch.Tensor, is_eos: torch.Tensor) -> torch.Tensor:
        """Pointer logits [B, L, L] of the tagged states ``s``: row i scores the successor of
        position i, over the ``kept`` positions other than i (EOS may point to itself)."""
        query = self.query(s)
        key = self.key(self.key_norm(self.key_layer(s, attention_mask=mask)[0]))
        logits = query @ key.transpose(1, 2) / self.config.d_model**0.5
        length = s.shape[1]
        if self.offset is not None:
            positions = torch.arange(length, device=s.device)
            bucket = relative_position_bucket(
                positions[None, :] - positions[:, None], bidirectional=True,
                num_buckets=self.config.relative_attention_num_buckets,
                max_distance=self.config.relative_attention_max_distance,
            )
            # stored /10: Adam moves each parameter by ~lr per step whatever its gradient, so a
            # plain scalar would need thousands of steps to reach a margin of a few nats
            logits = logits + 10.0 * self.offset(bucket).squeeze(-1).to(logits.dtype)
        # successors are kept tokens other than oneself; EOS may point to itself (nothing kept)
        self_loop = torch.eye(length, dtype=torch.bool, device=s.device) & ~is_eos[:, :, None]
        allowed = kept[:, None, :] & ~self_loop
        return logits.masked_fill(~allowed, torch.finfo(logits.dtype).min)


class EdiT5InsertionDecoder(nn.Module):
    """3. What goes between the kept tokens: their states in the new order (a position embedding,
    a T5 block, a norm), cross-attended by a T5 decoder stack that writes ``<marker> span ...
    </s>``; with ``config.marker_ids``, pointed markers (``modeling_edit5``). The token embedding
    is the model's (``shared``): ``embeds`` takes it."""

    def __init__(self, config, layers: Layers):
        super().__init__()
        d = config.d_model
        self.config = config
        self.order_embedding = nn.Embedding(config.max_order_positions, d)
        self.order_layer = layers.block(relative_bias=False)
        self.order_norm = layers.norm()
        self.decoder = layers.decoder()
        self.lm_head = nn.Linear(d, config.vocab_size, bias=False)
        if config.marker_ids:  # pointed markers
            self.marker_query = nn.Linear(d, d)
            self.marker_key = nn.Linear(d, d)
            self.marker_gap_key = nn.Linear(d, d) if config.marker_gap else None
        self._marker_lookup = None  # (marker ids, token id -> p or -1), built on first use

    def states(self, s: torch.Tensor, order_positions: torch.Tensor, mask) -> torch.Tensor:
        """The decoder's memory [B, L, d]: tagged states ``s`` with their new positions."""
        placed = (order_positions > 0).unsqueeze(-1).to(s.dtype)  # deleted tokens get no position
        x = s + self.order_embedding(order_positions) * placed
        return self.order_norm(self.order_layer(x, attention_mask=mask)[0])

    def markers(self, states: torch.Tensor, order_positions: torch.Tensor):
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
        gather = lambda index: states.gather(1, index[..., None].expand(batch, count, d))  # noqa: E731
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

    def embeds(self, ids: torch.Tensor, markers, shared: nn.Embedding) -> torch.Tensor:
        """Decoder inputs: token embeddings (``shared``), plus for a pointed marker its kept token's state."""
        embeds = shared(ids)
        if markers is None:
            return embeds
        marker_states, _, valid = markers
        p = self._marker_tables(ids.device)[1][ids]
        p = p.masked_fill(p >= valid.shape[1], -1)  # teacher forcing only: decoding never emits one
        pointed = marker_states.gather(1, p.clamp(min=0)[..., None].expand(*p.shape, embeds.shape[-1]))
        return embeds + pointed * (p >= 0).unsqueeze(-1).to(embeds.dtype)

    def logits(self, hidden: torch.Tensor, markers=None) -> torch.Tensor:
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

    def forward(self, decoder_input_ids: torch.Tensor, states: torch.Tensor, attention_mask: torch.Tensor,
                markers, shared: nn.Embedding) -> torch.Tensor:
        """Teacher-forced insertion logits (B, T, vocab) of ``decoder_input_ids`` over ``states``."""
        hidden = self.decoder(inputs_embeds=self.embeds(decoder_input_ids, markers, shared),
                              encoder_hidden_states=states, encoder_attention_mask=attention_mask).last_hidden_state
        return self.logits(hidden, markers)


class EdiT5Heads:
    """The heads' computations over the three modules (see the module docstring); a mixin of an
    ``nn.Module`` with EdiT5's ``config``, ``shared`` and ``encoder``."""

    def _build_heads(self, config, layers: Layers) -> None:
        """``tagger``, ``pointer`` and ``insertion``, their parameters made in the order they always
        were (a new model's random initialisation is unchanged)."""
        self.tagger = EdiT5Tagger(config, layers)
        self.pointer = EdiT5Pointer(config, layers)
        self.insertion = EdiT5InsertionDecoder(config, layers)
        # torch's load_state_dict (accelerate's resume, an EMA's, InferenceEdiT5's) reads checkpoint names too
        self.register_load_state_dict_pre_hook(_to_modules_hook)

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
        """Teacher-forced pass (``editspec.features.collate_edit5`` gives the arguments).

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
        tag_logits = self.tagger(h, mask)
        if rows is not None:
            h, tag_logits, input_ids, attention_mask = h[rows], tag_logits[rows], input_ids[rows], attention_mask[rows]
            mask = None if mask is None else mask[rows]
        kept = tags == KEEP
        s = self.tagger.tagged(h, tags.clamp(min=0))  # padding (IGNORE) embeds as DELETE
        pointer_logits = self.pointer(s, mask, kept, input_ids == self.config.eos_token_id)
        states = self.insertion.states(s, order_positions, mask)
        markers = self.insertion.markers(states, order_positions)
        insertion_logits = self.insertion(decoder_input_ids, states, attention_mask, markers, self.shared)

        parts = {
            "tag": (tags, tag_logits, self.config.tag_loss_weight),
            "pointer": (pointers, pointer_logits, self.config.pointer_loss_weight),
            "insertion": (insertion_labels, insertion_logits, self.config.insertion_loss_weight),
        }
        total, losses = self._losses(parts, tag_logits.new_zeros(()))
        return self.output_class(
            loss=total, tag_loss=losses.get("tag"), pointer_loss=losses.get("pointer"),
            insertion_loss=losses.get("insertion"), tag_logits=tag_logits,
            pointer_logits=pointer_logits, insertion_logits=insertion_logits,
        )

    def _losses(self, parts: dict, zero: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The weighted total loss and each part's mean cross-entropy, of the ``parts`` given labels
        (name -> (labels, logits, weight)); ``loss_weighting`` "tokens": the total per label token."""
        losses, total, tokens = {}, zero, 0
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
        return total, losses

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
        tag_logits = self.tagger(h, mask)
        keep_margin = tag_logits[..., KEEP] - tag_logits[..., 1 - KEEP] + keep_bias
        kept = ((keep_margin > 0) & valid) | is_eos
        s = self.tagger.tagged(h, kept.long())
        order = decode_order(self.pointer(s, mask, kept, is_eos), kept, eos_position, order_bias)

        order_positions = torch.zeros_like(input_ids)
        for b, row in enumerate(order):  # one scatter per row (not per token)
            order_positions[b, row] = torch.arange(1, len(row) + 1, device=input_ids.device)
            order_positions[b, eos_position[b]] = len(row) + 1
        states = self.insertion.states(s, order_positions, mask)
        markers = self.insertion.markers(states, order_positions)
        insertions = self._greedy_insertions(states, attention_mask, max_insertion_tokens, markers, stop_bias)

        tags = kept.long().tolist()
        return [
            Edits(tags=tags[b][:n], order=order[b], insertions=insertions[b])
            for b, n in enumerate(eos_position.tolist())
        ]

    def _greedy_insertions(self, states, attention_mask, max_tokens: int, markers=None,
                           stop_bias: float = 0.0) -> list[list[int]]:
        """Greedy decoding with a KV cache, calling the decoder's blocks directly: per step,
        transformers' T5Stack.forward rebuilds both masks and runs output-capturing wrappers, which
        costs as much as the one layer's compute. Equal to the teacher-forced stack pass (tested)."""
        batch, eos, pad_id = states.shape[0], self.config.eos_token_id, self.config.pad_token_id
        cache = self._new_cache()  # cross-attention K/V once
        cross_mask = self._cross_mask(states, attention_mask)
        cross_bias = states.new_zeros(1, self.config.num_heads, 1, states.shape[1])  # T5: none
        token = torch.full((batch, 1), self.config.decoder_start_token_id, device=states.device)
        done = torch.zeros(batch, dtype=torch.bool, device=states.device)
        out = []
        for _ in range(max_tokens):
            # one query over all cached keys needs no causal mask; block 0 adds the relative bias
            hidden, self_bias = self.insertion.embeds(token, markers, self.shared), None
            for block in self.insertion.decoder.block:
                hidden, self_bias, _ = block(
                    hidden, position_bias=self_bias, encoder_hidden_states=states,
                    encoder_attention_mask=cross_mask, encoder_decoder_position_bias=cross_bias,
                    **{self.cache_arg: cache},
                )
            hidden = self.insertion.decoder.final_layer_norm(hidden[:, -1:])
            logits = self.insertion.logits(hidden, markers)[:, 0]
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
        tied = ("insertion.lm_head.",) if self.config.tie_word_embeddings else ()  # the T5's embedding
        return T5_PARTS + tied
