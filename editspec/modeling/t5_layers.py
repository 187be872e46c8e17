"""T5's layers for inference, without transformers: the same modules, parameter names and arithmetic
as transformers' ``modeling_t5`` with its default ``sdpa`` attention, so a checkpoint's state dict
loads as is and every logit equals transformers' bit for bit (``tests/modeling/test_t5_layers.py``).

Why written here: importing transformers' T5 costs ~2.5 s of every process (its modeling imports
pull in torch.distributed, dynamo, the generation stack), more than a whole one-line correction is
allowed. transformers stays the reference, and what training, a hub id and any checkpoint this
file does not read (``modeling_t5.supported``) load through.

    Stack (encoder)   embed -> Block x n -> final_layer_norm          bidirectional, relative bias
    Stack (decoder)   embed -> Block x n (self, cross, FF) -> norm     causal (teacher-forced), or
                                                                       one step over a ``Cache``
    Block             layer[0] self-attention, layer[1] cross-attention (decoder), layer[-1] FF,
                      each ``x + f(layer_norm(x))``
    Attention         q, k, v, o (no 1/sqrt(d) scaling); block 0 of a stack owns the relative
                      position bias table, later blocks reuse the bias it computed

Masks are transformers' sdpa masks: None when no row is padded, else a boolean [batch, 1, q, k]
that ``torch.where`` turns, with the position bias, into the additive mask SDPA reads.
"""

from __future__ import annotations

import contextlib
import math
import threading
from typing import Iterator, NamedTuple

import torch
import torch.nn.functional as F
from torch import nn


_INIT = threading.Lock()


@contextlib.contextmanager
def uninitialised() -> Iterator[None]:
    """Modules built inside allocate their weights without filling them (a checkpoint's replace
    them at once): ``nn.Linear``'s and ``nn.Embedding``'s ``reset_parameters`` do nothing meanwhile.
    The random init took ~0.4 s of the shipped T5's load, and on the meta device it imports
    torch._dynamo (~2 s). One load at a time (the patch is the classes')."""
    with _INIT:
        saved = nn.Linear.reset_parameters, nn.Embedding.reset_parameters
        nn.Linear.reset_parameters = nn.Embedding.reset_parameters = lambda self: None
        try:
            yield
        finally:
            nn.Linear.reset_parameters, nn.Embedding.reset_parameters = saved


def relative_position_bucket(relative_position: torch.Tensor, bidirectional: bool = True, num_buckets: int = 32,
                             max_distance: int = 128) -> torch.Tensor:
    """T5's bucket of each relative position (key - query): exact below ``num_buckets // 2`` (half
    of them per direction when ``bidirectional``), logarithmic up to ``max_distance``, then one bucket."""
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    if_large = max_exact + (torch.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact)
                            * (num_buckets - max_exact)).to(torch.long)
    if_large = torch.min(if_large, torch.full_like(if_large, num_buckets - 1))
    return relative_buckets + torch.where(is_small, relative_position, if_large)


def padding_mask(attention_mask: torch.Tensor | None, queries: int) -> torch.Tensor | None:
    """transformers' sdpa mask of a [batch, keys] 0/1 mask: None when nothing is padded, else a
    boolean [batch, 1, queries, keys] (True: attend)."""
    if attention_mask is None:
        return None
    keep = attention_mask.bool()
    if bool(keep.all()):
        return None
    return keep[:, None, None, :].expand(keep.shape[0], 1, queries, keep.shape[1])


def new_gelu(x: torch.Tensor) -> torch.Tensor:
    """transformers' ``gelu_new`` (tanh approximation), op for op: F.gelu(approximate="tanh") rounds
    differently in bfloat16."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


ACTIVATIONS = {"gelu_new": new_gelu, "relu": F.relu, "gelu": F.gelu}


class LayerNorm(nn.Module):
    """T5's RMS norm: no mean, no bias; the variance in float32, the product in the weight's type."""

    def __init__(self, size: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.variance_epsilon = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.variance_epsilon)
        if self.weight.dtype in (torch.float16, torch.bfloat16):
            x = x.to(self.weight.dtype)
        return self.weight * x


class DenseActDense(nn.Module):
    """The feed-forward: ``wo(act(wi(x)))``, or gated ``wo(act(wi_0(x)) * wi_1(x))``."""

    def __init__(self, d_model: int, d_ff: int, act: str, gated: bool):
        super().__init__()
        if gated:
            self.wi_0 = nn.Linear(d_model, d_ff, bias=False)
            self.wi_1 = nn.Linear(d_model, d_ff, bias=False)
        else:
            self.wi = nn.Linear(d_model, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, d_model, bias=False)
        self.act, self.gated = ACTIVATIONS[act], gated

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.act(self.wi_0(x)) * self.wi_1(x) if self.gated else self.act(self.wi(x))
        weight = self.wo.weight  # a quantized linear has none: it takes float activations
        if isinstance(weight, torch.Tensor) and x.dtype != weight.dtype and weight.dtype != torch.int8:
            x = x.to(weight.dtype)
        return self.wo(x)


class LayerFF(nn.Module):
    def __init__(self, d_model: int, d_ff: int, act: str, gated: bool, eps: float):
        super().__init__()
        self.DenseReluDense = DenseActDense(d_model, d_ff, act, gated)
        self.layer_norm = LayerNorm(d_model, eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.DenseReluDense(self.layer_norm(x))


class Cache:
    """Keys and values per layer of one decoding run, one step at a time: self-attention's grow,
    cross-attention's are computed at the first step and kept."""

    def __init__(self):
        self.self_kv: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.cross_kv: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}


class Attention(nn.Module):
    """T5 attention (self or cross), transformers' sdpa path."""

    def __init__(self, d_model: int, d_kv: int, heads: int, buckets: int, max_distance: int,
                 relative_bias: bool, decoder: bool, causal: bool, layer: int = 0):
        super().__init__()
        inner = heads * d_kv
        self.q = nn.Linear(d_model, inner, bias=False)
        self.k = nn.Linear(d_model, inner, bias=False)
        self.v = nn.Linear(d_model, inner, bias=False)
        self.o = nn.Linear(inner, d_model, bias=False)
        self.has_relative_attention_bias = relative_bias
        if relative_bias:
            self.relative_attention_bias = nn.Embedding(buckets, heads)
        self.relative_attention_num_buckets, self.relative_attention_max_distance = buckets, max_distance
        self.n_heads, self.key_value_proj_dim = heads, d_kv
        self.is_decoder, self.is_causal, self.layer = decoder, causal, layer

    def compute_bias(self, queries: int, keys: int, past: int = 0) -> torch.Tensor:
        """The relative position bias [1, heads, queries, keys], queries starting at ``past``."""
        device = self.relative_attention_bias.weight.device
        context = torch.arange(queries, dtype=torch.long, device=device)[:, None] + past
        memory = torch.arange(keys, dtype=torch.long, device=device)[None, :]
        bucket = relative_position_bucket(memory - context, bidirectional=not self.is_decoder,
                                          num_buckets=self.relative_attention_num_buckets,
                                          max_distance=self.relative_attention_max_distance)
        return self.relative_attention_bias(bucket).permute([2, 0, 1]).unsqueeze(0)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, kv: torch.Tensor | None = None,
                position_bias: torch.Tensor | None = None,
                cache: Cache | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(output [B, T, d_model], the position bias used, for the next blocks). ``kv``: the
        encoder states (cross-attention); ``cache``: one decoding step's."""
        batch, length = x.shape[:2]
        q = self.q(x).view(batch, length, -1, self.key_value_proj_dim).transpose(1, 2)
        store = None if cache is None else cache.cross_kv if kv is not None else cache.self_kv
        past = store[self.layer][0].shape[2] if store is not None and kv is None and self.layer in store else 0
        if store is not None and kv is not None and self.layer in store:
            k, v = store[self.layer]
        else:
            source = kv if kv is not None else x
            k = self.k(source).view(batch, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)
            v = self.v(source).view(batch, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)
            if store is not None:
                if kv is None and self.layer in store:
                    k, v = torch.cat([store[self.layer][0], k], -2), torch.cat([store[self.layer][1], v], -2)
                store[self.layer] = (k, v)
        if position_bias is None:
            if self.has_relative_attention_bias:
                position_bias = self.compute_bias(length, k.shape[-2], past)
            else:
                position_bias = torch.zeros((1, self.n_heads, length, k.shape[-2]), device=q.device, dtype=q.dtype)
        # transformers' sdpa: a causal pass over a whole target (teacher forcing) gets its causal
        # mask with the bias; one step, or no causality, takes the bias as it is
        causal = length > 1 and mask is None and self.is_causal
        if mask is not None:
            bias = torch.where(mask, position_bias, torch.finfo(k.dtype).min)
        elif causal:
            lower = torch.arange(length, device=k.device)[:, None] >= torch.arange(k.shape[-2], device=k.device)[None, :]
            bias = torch.where(lower.view(1, 1, length, -1), position_bias, torch.finfo(k.dtype).min)
        else:
            bias = position_bias
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias.contiguous(), dropout_p=0.0, scale=1.0)
        out = out.transpose(1, 2).contiguous().reshape(batch, length, -1).contiguous()
        return self.o(out), position_bias


class LayerSelfAttention(nn.Module):
    def __init__(self, attention: Attention, d_model: int, eps: float):
        super().__init__()
        self.SelfAttention = attention
        self.layer_norm = LayerNorm(d_model, eps)

    def forward(self, x, mask=None, position_bias=None, cache=None):
        out, position_bias = self.SelfAttention(self.layer_norm(x), mask, position_bias=position_bias, cache=cache)
        return x + out, position_bias


class LayerCrossAttention(nn.Module):
    def __init__(self, attention: Attention, d_model: int, eps: float):
        super().__init__()
        self.EncDecAttention = attention
        self.layer_norm = LayerNorm(d_model, eps)

    def forward(self, x, states, mask=None, position_bias=None, cache=None):
        out, position_bias = self.EncDecAttention(self.layer_norm(x), mask, states, position_bias, cache)
        return x + out, position_bias


def _clamped(x: torch.Tensor) -> torch.Tensor:
    """transformers' float16 guard against infinities (nothing in other types)."""
    if x.dtype != torch.float16:
        return x
    top = torch.where(torch.isinf(x).any(), torch.finfo(x.dtype).max - 1000, torch.finfo(x.dtype).max)
    return torch.clamp(x, min=-top, max=top)


class Block(nn.Module):
    """A T5 block; called as transformers' ``T5Block`` is (EdiT5's heads call both alike)."""

    def __init__(self, config, relative_bias: bool, decoder: bool = False, layer: int = 0):
        super().__init__()
        c = config
        shape = dict(d_model=c.d_model, d_kv=c.d_kv, heads=c.num_heads, buckets=c.relative_attention_num_buckets,
                     max_distance=c.relative_attention_max_distance)
        self.is_decoder = decoder
        self.layer = nn.ModuleList([LayerSelfAttention(
            Attention(**shape, relative_bias=relative_bias, decoder=decoder, causal=decoder, layer=layer),
            c.d_model, c.layer_norm_epsilon)])
        if decoder:
            self.layer.append(LayerCrossAttention(
                Attention(**shape, relative_bias=False, decoder=True, causal=False, layer=layer),
                c.d_model, c.layer_norm_epsilon))
        self.layer.append(LayerFF(c.d_model, c.d_ff, c.dense_act_fn, c.is_gated_act, c.layer_norm_epsilon))

    def forward(self, x, attention_mask=None, position_bias=None, encoder_hidden_states=None,
                encoder_attention_mask=None, encoder_decoder_position_bias=None, cache: Cache | None = None):
        """(states, self-attention's position bias, cross-attention's), as ``T5Block`` returns them."""
        x, position_bias = self.layer[0](x, attention_mask, position_bias, cache)
        x = _clamped(x)
        cross_bias = None
        if self.is_decoder and encoder_hidden_states is not None:
            x, cross_bias = self.layer[1](x, encoder_hidden_states, encoder_attention_mask,
                                          encoder_decoder_position_bias, cache)
            x = _clamped(x)
        return _clamped(self.layer[-1](x)), position_bias, cross_bias


class StackOutput(NamedTuple):
    last_hidden_state: torch.Tensor


class Stack(nn.Module):
    """T5's encoder or decoder stack (``embed_tokens`` may be None: the caller passes embeddings)."""

    def __init__(self, config, layers: int, decoder: bool = False, embed_tokens: nn.Embedding | None = None):
        super().__init__()
        self.embed_tokens = embed_tokens
        self.is_decoder = decoder
        self.block = nn.ModuleList([Block(config, i == 0, decoder, i) for i in range(layers)])
        self.final_layer_norm = LayerNorm(config.d_model, config.layer_norm_epsilon)

    def forward(self, input_ids: torch.Tensor | None = None, attention_mask: torch.Tensor | None = None,
                encoder_hidden_states: torch.Tensor | None = None, encoder_attention_mask: torch.Tensor | None = None,
                inputs_embeds: torch.Tensor | None = None, cache: Cache | None = None) -> StackOutput:
        """Encoder: ``attention_mask`` [B, T] marks real tokens. Decoder: causal over the whole
        ``inputs_embeds`` (teacher forcing; no decoder padding), or one step over ``cache``;
        ``encoder_attention_mask`` [B, S] marks the encoder's real states."""
        x = self.embed_tokens(input_ids) if inputs_embeds is None else inputs_embeds
        queries = x.shape[1]
        mask = None if self.is_decoder else padding_mask(attention_mask, queries)
        cross_mask = padding_mask(encoder_attention_mask, queries) if self.is_decoder else None
        bias = cross_bias = None
        for block in self.block:
            x, bias, cross = block(x, mask, bias, encoder_hidden_states, cross_mask, cross_bias, cache)
            if self.is_decoder and encoder_hidden_states is not None:
                cross_bias = cross
        return StackOutput(self.final_layer_norm(x))
