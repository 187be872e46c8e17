"""The T5 training step's forward: masks ready for the device, the loss without a logits copy.

transformers' T5 forward, called with a 2D ``attention_mask``, builds the encoder's and the
cross-attention's masks with ``masking_utils``, whose SDPA shortcut asks ``padding_mask.all()`` in a
Python ``and`` (twice a step): a device-to-host read, so on a GPU the CPU waits for every step
before it can queue the next. A 4D mask is taken as it is (``_preprocess_mask_arguments``), so
``T5Loss`` hands the model ``mask[:, None, None, :]`` as bool: the same mask T5 attention builds
from it (``torch.where(mask, position_bias, min)``), computed on the device without a read.

The loss: ``T5ForConditionalGeneration`` makes the [batch, target, vocab] logits, and accelerate's
bf16 wrapper then keeps an fp32 copy of them as the output that nothing reads (16k vocabulary:
the biggest tensor of the step). ``T5Loss`` runs encoder and decoder itself and takes the
cross-entropy chunk by chunk of target tokens from the decoder's hidden states (the tied output
layer, T5's ``d_model ** -0.5`` scale), so no full logits tensor is ever returned; the module's
output is the loss alone. Hand-written because transformers has no loss-only T5 forward and the
fused linear-cross-entropy kernels (Liger and others) are CUDA-only packages the lent machine
lacks. Under ``torch.compile`` the loss is one piece (the compiled graph fuses the matmul and the
log-softmax): a Python loop over the N target tokens would specialise the graph on N and recompile it
for every batch shape, as it did through the third lease.

``host_reads`` is the CPU's check of the first claim: inside it, any tensor read on the host
(``bool()``, ``item()``, ``tolist()``, a data-dependent shape) raises, as
``torch.cuda.set_sync_debug_mode("error")`` does on a GPU.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch.nn import functional as F
from torch.overrides import TorchFunctionMode

from editspec.modeling.tensors import IGNORE

CHUNK_TOKENS = 8192  # target positions per cross-entropy chunk: [8192, 16k] bf16 logits = 256 MiB


def device_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """[batch, source] 0/1 -> [batch, 1, 1, source] bool: kept as it is by transformers' mask helpers."""
    return attention_mask[:, None, None, :].bool()


def chunked_cross_entropy(hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor,
                          token_weight: torch.Tensor | None = None, chunk: int = CHUNK_TOKENS) -> torch.Tensor:
    """Mean cross-entropy of ``hidden @ weight.T`` against ``labels`` (IGNORE left out), each token
    weighted by ``token_weight`` (default 1) and normalised by the weights' sum; the logits exist
    one chunk of ``chunk`` tokens at a time.  hidden: [N, d], weight: [V, d], labels: [N]."""
    if torch.compiler.is_compiling():  # one piece: a loop over N would specialise the graph on N (a
        chunk = None                   # recompile per batch shape); the compiled graph fuses it instead
    total = hidden.new_zeros((), dtype=torch.float32)
    for piece in ([slice(None)] if chunk is None else
                  [slice(start, start + chunk) for start in range(0, hidden.shape[0], chunk)]):
        logits = hidden[piece] @ weight.T  # [c, V]
        ce = F.cross_entropy(logits.float(), labels[piece], ignore_index=IGNORE, reduction="none")
        if token_weight is not None:
            ce = ce * token_weight[piece]
        total = total + ce.sum()
    kept = (labels != IGNORE).float()
    norm = (kept * token_weight).sum() if token_weight is not None else kept.sum()
    return total / norm.clamp(min=1)


class T5Loss(torch.nn.Module):
    """A T5's training loss as a module (what accelerate prepares and torch.compile compiles):
    forward(input_ids, attention_mask, labels[, edit_mask]) -> the scalar loss, equal to
    ``model(..., labels=labels).loss`` (with ``edit_weight``, ``train.weighted_loss``'s weighting)."""

    def __init__(self, model: torch.nn.Module, edit_weight: float = 1.0, chunk: int = CHUNK_TOKENS):
        super().__init__()
        self.model, self.edit_weight, self.chunk = model, edit_weight, chunk
        # checkpoints hold the T5's own keys, as when the loop prepared the T5 itself: a run
        # resumes from either, and the wrapper's "model." never reaches a file
        self._register_state_dict_hook(_unwrapped_keys)
        self._register_load_state_dict_pre_hook(_wrapped_keys)  # as a DDP's child

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        return self.model.load_state_dict(state_dict, strict=strict, assign=assign)  # missing keys in its names

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor,
                edit_mask: torch.Tensor | None = None) -> torch.Tensor:
        t5 = self.model
        mask = device_mask(attention_mask)
        encoded = t5.encoder(input_ids=input_ids, attention_mask=mask).last_hidden_state  # [B, S, d]
        decoded = t5.decoder(input_ids=t5._shift_right(labels), encoder_hidden_states=encoded,
                             encoder_attention_mask=mask, use_cache=False).last_hidden_state  # [B, T, d]
        if t5.config.scale_decoder_outputs:
            decoded = decoded * (t5.model_dim ** -0.5)
        token_weight = None
        if edit_mask is not None and self.edit_weight != 1.0:
            token_weight = (1 + (self.edit_weight - 1) * edit_mask.float()).flatten()
        return chunked_cross_entropy(decoded.flatten(0, 1), t5.lm_head.weight, labels.flatten(),
                                     token_weight, self.chunk)


def _unwrapped_keys(module, state: dict, prefix: str, local_metadata) -> None:
    for key in [k for k in state if k.startswith(prefix + "model.")]:
        state[prefix + key[len(prefix) + len("model."):]] = state.pop(key)


def _wrapped_keys(state: dict, prefix: str, *args) -> None:
    for key in [k for k in state if k.startswith(prefix) and not k.startswith(prefix + "model.")]:
        state[prefix + "model." + key[len(prefix):]] = state.pop(key)


class _HostReads(TorchFunctionMode):
    READS = {torch.Tensor.__bool__, torch.Tensor.item, torch.Tensor.tolist, torch.Tensor.__int__,
             torch.Tensor.__float__, torch.Tensor.__index__, torch.Tensor.nonzero, torch.nonzero,
             torch.Tensor.numpy}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in self.READS:
            raise RuntimeError(f"a host read inside the step: {getattr(func, '__name__', func)}")
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def host_reads() -> Iterator[None]:
    """Raise on any read of a tensor's value by the host (the CPU stand-in of a device sync)."""
    with _HostReads():
        yield
