"""The decoder of the decoding core: a T5's encoder once per sentence, then its decoder over a
static cache, a slot per sentence, each writing its keys and values at its own positions. One pass
feeds every active slot its tokens (``editspec.decoding.core`` draws the picture of the slots)::

    packed   to school . like ...          the linears and LM head see real tokens only (ragged)
    padded   [3 slots, width 3]            attention runs padded, over each slot's cache, with
                                           the relative position bias from the slot's OWN query
                                           and key positions (T5's bias depends on j - i)

The layers are T5's own modules (layer norms, q/k/v/o, feed-forward, LM head: the checkpoint's
key names), called on packed tokens; only the attention is written here, as T5's eager attention
(scores + bias + mask, softmax, no 1/sqrt(d) scaling), over the whole cache of the call, so a
row's numbers do not depend on the rows beside it. On the pass's width they depend only in
float32's last bits (torch picks kernels by size), far below a token's margin: speculative output
equalled greedy on every sentence profiled. In bfloat16 torch's attention kernel rounds a query row
by the width (one of 256 outputs differed at batch 32, ``reports/speed.md``), so there attention is
two plain matmuls around an fp32 softmax, and a window's logits are single steps' bit for bit
where those matmuls sum in one order whatever their size (``exact_windows``: a CPU with oneDNN's
bf16 kernels, checked per host, not assumed).
``editspec.decoding.core`` runs the loop over it; ``editspec.decoding.window`` measures its passes' cost.

Whoever holds the models keeps one decoder per model (``Decoders``: a ``Bundle``'s), across calls
as gpt-fast sets its static cache up once: its flat buffers grow when a call needs more slots or
positions, and each call's caches are zeroed views of them shaped as a new decoder's, so its
numbers are a new one's. A call given no ``Decoders`` decodes on a new decoder.
"""

from __future__ import annotations

import contextlib
import math
import threading
import weakref
from typing import TYPE_CHECKING, Callable, ContextManager, Iterator

import torch
import torch.nn.functional as F
from torch.profiler import record_function
from editspec.modeling.tensors import pad
from editspec.modeling import t5
from editspec.modeling.t5_layers import relative_position_bucket

if TYPE_CHECKING:
    from transformers import T5ForConditionalGeneration


def exact_windows(model: T5ForConditionalGeneration) -> bool:
    """Whether a window pass gives each token the logits of single steps bit for bit, whatever the
    rows beside it, on this host: then a decode's own scores and a teacher-forced ``core.score``
    are the same numbers. Checked, not assumed from the dtype: in bf16 the attention below is two
    plain matmuls, and torch runs a small one (a single step's, under 400 products) as a loop that
    sums in k order, a larger one (a window's) as a gemm: oneDNN's, in the same order, only where
    it has bf16 on this CPU (avx512; ``_is_mkldnn_bf16_supported``). Elsewhere (AVX2: ATen's
    fallback gemm sums with several accumulators; CUDA's cuBLAS) an attention output differs in its
    last bit now and then, and a bf16 sentence's log P moves by up to ~0.6 nats, 0.7% (issue 76: a
    random T5, 40 sentences, an AMD EPYC with AVX2 only: 14 of 40 sums differed, 13 of them by the
    encoder's padding below, 1 by the matmul). float32's
    kernel differs in the last bits everywhere. The encoder still rounds a sentence by the padded
    width of its batch (softmax lanes of 16 on avx512), so even there a pair is bit for bit the
    decode's only when its source was encoded at the same padded width."""
    p = next(model.parameters())
    return p.dtype == torch.bfloat16 and p.device.type == "cpu" and onednn_bf16()


def onednn_bf16() -> bool:
    """Whether torch's bf16 matmuls on this CPU run on oneDNN's bf16 kernels (avx512 or AMX)."""
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


class Decoder:
    """T5's decoder over ``slots`` rows, each with its own static cache and its own length.

    ``Decoders.lease(model, ...)`` gives the model's kept decoder for one call, reset (``reset``).
    ``timed``: a context for each pass (``Decoders.timed``: ``editspec profile`` times the passes)."""

    def __init__(self, model: T5ForConditionalGeneration, slots: int, max_source: int, max_target: int):
        cfg, p = model.config, next(model.parameters())
        self._model = weakref.ref(model)  # kept beside its model (``lease``): no reference back to it
        self.blocks, self.dtype, self.device = model.decoder.block, p.dtype, p.device
        self.heads, self.d_kv = cfg.num_heads, cfg.d_kv
        self.start = cfg.decoder_start_token_id
        self.scale = cfg.d_model ** -0.5 if getattr(cfg, "scale_decoder_outputs", cfg.tie_word_embeddings) else 1.0
        self.rel = self.blocks[0].layer[0].SelfAttention  # owns the relative bias table
        self.min = torch.finfo(p.dtype).min
        self.lock = threading.Lock()  # held by the call that leased it
        self.timed: Callable[[], ContextManager] = contextlib.nullcontext
        self._buffers: dict[tuple[str, int], torch.Tensor] = {}  # flat, grown; the caches are views of them
        self.reset(slots, max_source, max_target)

    @property
    def model(self) -> T5ForConditionalGeneration:
        return self._model()

    def reset(self, slots: int, max_source: int, max_target: int) -> None:
        """Empty caches for ``slots`` rows: zeroed views of the kept buffers (grown if too small),
        each of the shape and contiguous layout a new decoder's would have, so a call computes a new
        decoder's numbers (every pass attends over the whole width: see ``_forward``)."""
        shape = lambda n: (slots, self.heads, n, self.d_kv)  # noqa: E731
        layers = range(len(self.blocks))
        with torch.inference_mode(False):  # plain tensors: a call in inference mode or out of it may write them
            # self-attention: [slots, H, target, d_kv]; cross-attention: [slots, H, source, d_kv]
            self.k = [self._zeroed(("k", l), shape(max_target)) for l in layers]
            self.v = [self._zeroed(("v", l), shape(max_target)) for l in layers]
            self.xk = [self._zeroed(("xk", l), shape(max_source)) for l in layers]
            self.xv = [self._zeroed(("xv", l), shape(max_source)) for l in layers]
            self.xmask = self._zeroed(("xmask", 0), (slots, max_source), torch.bool)
        self.slots, self.length = slots, [0] * slots  # tokens in each slot's cache

    def _zeroed(self, key: tuple[str, int], shape: tuple[int, ...], dtype: torch.dtype | None = None) -> torch.Tensor:
        n, buffer = math.prod(shape), self._buffers.get(key)
        if buffer is None or buffer.numel() < n:
            self._buffers[key] = torch.zeros(n, dtype=dtype or self.dtype, device=self.device)
            return self._buffers[key].view(shape)
        return buffer[:n].view(shape).zero_()

    def encode(self, sources: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(ids [b, S], mask [b, S], encoder states [b, S, d_model]) of ``sources`` (ids with
        EOS), right-padded."""
        dev = self.xmask.device
        ids, mask = pad(sources, 0).to(dev), pad([[1] * len(s) for s in sources], 0).to(dev)
        return ids, mask, t5.encode(self.model, ids, mask)

    def admit(self, slots: list[int], mask: torch.Tensor, hidden: torch.Tensor) -> None:
        """Give encoded sentences (``encode``'s mask and states) ``slots``: empty caches, their
        cross-attention keys/values."""
        dev, width = self.xmask.device, hidden.shape[1]
        at = torch.tensor(slots, device=dev)
        for l, block in enumerate(self.blocks):
            cross = block.layer[1].EncDecAttention
            self.xk[l][at, :, :width] = cross.k(hidden).view(len(slots), width, self.heads, self.d_kv).transpose(1, 2).to(self.xk[l].dtype)
            self.xv[l][at, :, :width] = cross.v(hidden).view(len(slots), width, self.heads, self.d_kv).transpose(1, 2).to(self.xv[l].dtype)
        self.xmask[at] = False
        self.xmask[at, :width] = mask.bool()
        for s in slots:
            self.length[s] = 0

    def keep(self, row: int, tokens: int) -> None:
        """The first ``tokens`` fed to ``row`` since its last ``admit`` stay cached: the next pass
        writes after them (a later one overwrites what was fed beyond them, a rejected draft)."""
        self.length[row] = tokens

    @property
    def widths(self) -> tuple[int, int]:
        """(source, target) positions its caches hold: a forced pass at these widths computes what
        this decoder computed (``rescoring.Known.widths``)."""
        return self.xmask.shape[1], self.k[0].shape[2]

    def cached(self, row: int) -> int:
        """Tokens in ``row``'s cache."""
        return self.length[row]

    def copy_rows(self, dst: list[int], src: list[int], width: int) -> None:
        """Each ``dst`` row's self-attention cache, up to position ``width``, becomes its ``src``
        row's, and its length ``src``'s (a beam search's survivors: ``keep`` then sets what each
        keeps); ``src`` is read before anything is written, so rows may swap."""
        if not dst:
            return
        d, s = torch.tensor(dst, device=self.device), torch.tensor(src, device=self.device)
        for cache in (*self.k, *self.v):
            cache[d, :, :width] = cache[s, :, :width]
        lengths = [self.length[r] for r in src]
        for row, n in zip(dst, lengths):
            self.length[row] = n

    def forward(self, rows: list[int], feeds: list[list[int]], wanted: list[int] | None = None) -> torch.Tensor:
        """Logits [tokens, vocab] of the packed ``feeds`` (row i's tokens go to slot rows[i] at
        positions length, length + 1, ...); each token's logits predict the token after it.
        ``wanted``: only these packed positions' logits (the LM head is half a token's work; every
        fed token still writes its keys and values)."""
        with record_function("editspec.decoding.pass"), self.timed():
            return self._forward(rows, feeds, wanted)

    def _forward(self, rows: list[int], feeds: list[list[int]], wanted: list[int] | None = None) -> torch.Tensor:
        dev, B, W = self.xmask.device, len(rows), max(map(len, feeds))
        # every pass attends over the whole cache (masked beyond each row's own keys): a softmax's
        # sum runs in an order that depends on its length, so a row's logits would otherwise
        # depend on the rows beside it (in bf16, often enough to flip a token)
        L, S = self.k[0].shape[2], self.xmask.shape[1]
        ids = torch.tensor([t for f in feeds for t in f], device=dev)  # [T]
        b_of = torch.tensor([b for b, f in enumerate(feeds) for _ in f], device=dev)  # [T]
        j_of = torch.tensor([j for f in feeds for j in range(len(f))], device=dev)  # [T]
        start = torch.tensor([self.length[r] for r in rows], device=dev)  # [B]
        slot_of = torch.tensor(rows, device=dev)[b_of]  # [T]
        pos = start[b_of] + j_of  # [T] each token's own position in its slot
        flat = b_of * W + j_of  # [T] where each token sits in the padded [B * W]
        # consecutive slots in order (every slot, or a beam search's groups): views, no gather
        at = slice(rows[0], rows[-1] + 1) if rows == list(range(rows[0], rows[-1] + 1)) else rows

        # self-attention bias [B, H, W, L]: relative position from each row's own positions
        qpos = start[:, None] + torch.arange(W, device=dev)  # [B, W]
        rel = torch.arange(L, device=dev) - qpos[:, :, None]  # [B, W, L] key - query
        buckets = relative_position_bucket(
            rel, bidirectional=False, num_buckets=self.rel.relative_attention_num_buckets,
            max_distance=self.rel.relative_attention_max_distance)
        bias = self.rel.relative_attention_bias(buckets).permute(0, 3, 1, 2)  # [B, H, W, L]
        bias = bias.masked_fill((rel > 0)[:, None], self.min)  # causal: keys up to the query's own
        xmask = self.xmask[at, :S]  # [B, S]
        xbias = torch.zeros(B, 1, 1, S, dtype=bias.dtype, device=dev).masked_fill(~xmask[:, None, None], self.min)

        def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            # q [T, H*d_kv] packed -> [B, H, W, d_kv] padded; k, v [B, H, keys, d_kv]
            qp = q.new_zeros(B * W, q.shape[-1]).index_copy_(0, flat, q)
            qp = qp.view(B, W, self.heads, self.d_kv).transpose(1, 2)
            if qp.dtype == torch.float32:
                out = F.scaled_dot_product_attention(qp, k, v, attn_mask=b, scale=1.0)  # [B, H, W, d_kv]
            else:  # torch's CPU kernel rounds a query row differently by the pass's width (W >= 4) in
                # bf16, flipping tokens; plain matmuls with an fp32 softmax do not (reports/speed.md)
                scores = qp @ k.transpose(-1, -2)  # [B, H, W, keys]; softmax in >= float32
                scores = scores.to(torch.promote_types(scores.dtype, torch.float32)) + b
                out = scores.softmax(-1).to(v.dtype) @ v
            return out.transpose(1, 2).reshape(B * W, -1)[flat]  # [T, H*d_kv]

        x = self.model.decoder.embed_tokens(ids)  # [T, d_model]
        for l, block in enumerate(self.blocks):
            sa, ca, ff = block.layer
            h = sa.layer_norm(x)
            att = sa.SelfAttention
            self.k[l][slot_of, :, pos] = att.k(h).view(-1, self.heads, self.d_kv).to(self.k[l].dtype)  # each at its own position
            self.v[l][slot_of, :, pos] = att.v(h).view(-1, self.heads, self.d_kv).to(self.v[l].dtype)
            k = self.k[l][at, :, :L]  # [B, H, L, d_kv]
            v = self.v[l][at, :, :L]
            x = x + att.o(attend(att.q(h), k, v, bias))
            h = ca.layer_norm(x)
            att = ca.EncDecAttention
            xk = self.xk[l][at, :, :S]  # [B, H, S, d_kv]
            xv = self.xv[l][at, :, :S]
            x = x + att.o(attend(att.q(h), xk, xv, xbias))
            x = ff(x)  # x + feed-forward(norm(x)), on real tokens only
        if wanted is not None:  # rows are independent: the others' logits are not needed
            x = x[torch.tensor(wanted, dtype=torch.long, device=dev)]
        x = self.model.decoder.final_layer_norm(x) * self.scale
        return self.model.lm_head(x)  # [T or wanted, vocab]


class Decoders:
    """Each model's ``Decoder``, kept across calls by whoever holds the models (a ``Bundle``);
    ``timed``: a context for every pass of them (``editspec profile --pipeline`` times passes so)."""

    def __init__(self, timed: Callable[[], ContextManager] = contextlib.nullcontext):
        self.timed = timed
        self._kept: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> its decoder
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def lease(self, model: T5ForConditionalGeneration, slots: int, max_source: int,
              max_target: int) -> Iterator[Decoder]:
        """The model's decoder, reset to ``slots`` rows of ``max_source`` / ``max_target`` positions,
        for the ``with`` block. A call while another holds it (another thread) gets one of its own."""
        p = next(model.parameters())
        with self._lock:
            dec, fresh = self._kept.get(model), False
            if dec is None or (dec.dtype, dec.device) != (p.dtype, p.device):  # first call, or the model moved
                dec = self._kept[model] = Decoder(model, slots, max_source, max_target)
                fresh = True
            busy = not dec.lock.acquire(blocking=False)
        if busy:
            dec, fresh = Decoder(model, slots, max_source, max_target), True
        try:
            if not fresh:
                dec.reset(slots, max_source, max_target)
            dec.timed = self.timed
            yield dec
        finally:
            if not busy:
                dec.lock.release()

    def release(self, model: T5ForConditionalGeneration) -> None:
        """Drop the model's kept decoder and its buffers."""
        with self._lock:
            self._kept.pop(model, None)
