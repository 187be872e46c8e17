"""T5 seq2seq: loading a checkpoint, its encoder, teacher-forced scoring, sampling probabilities.

Decoding (greedy, sampling, speculative) runs on ``editspec.decoding.core``, which calls T5's
own modules with a per-row cache; this module holds what the core and the scorers share:

  load_t5         a checkpoint in eval mode with its tokenizer (fp32 unless asked: the shipped
                  weights are bf16 on disk): ``modeling_t5.InferenceT5`` and ``tokenization.fast``
                  where they read it (no transformers import), else transformers' classes
  encode          the encoder once per batch (``record_function`` label ``editspec.t5.encode``)
  log_softmax     rows of logits as log P in >= float32 (what ``token_log_probs`` reads)
  token_log_probs log P of chosen tokens under rows of logits (``core.generate(scores=True)`` and
                  ``core.score``, which rescoring reads)
  token_probs     the sampling distribution: temperature, then top-p, as ``generate`` applies them;
                  e.g. logits log(0.5, 0.3, 0.15, 0.05) with top_p 0.7 -> (0.625, 0.375, 0, 0)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Sequence

import torch
from torch.profiler import record_function

from editspec.errors import EditspecError
from editspec.modeling.loading import default_device, quiet_transformers
from editspec.modeling.precision import resolve_dtype

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase, T5ForConditionalGeneration


def load_t5(
    path: str | os.PathLike, device: str | torch.device | None = None,
    dtype: str | torch.dtype | None = None, transformers: bool = False,
) -> tuple["T5ForConditionalGeneration", "PreTrainedTokenizerBase"]:
    """A T5 checkpoint (directory with its own tokenizer, or hub id) in eval mode, and its tokenizer:
    ``InferenceT5`` and ``FastTokenizer`` where they read it, unless ``transformers`` (for
    ``generate``), else transformers' ``T5ForConditionalGeneration`` and tokenizer."""
    from editspec.modeling.modeling_t5 import InferenceT5, supported
    from editspec.tokenization import fast
    from editspec.tokenization.tokens import load_tokenizer

    dtype = torch.float32 if dtype is None else resolve_dtype(dtype)
    if os.path.exists(path) and not os.path.isfile(os.path.join(path, "config.json")):
        raise EditspecError(f"{path} is not a model directory (no config.json)")
    ours = not transformers and supported(path) is None and fast.readable(path)
    try:
        # fp32 unless asked (``Corrector`` asks for ``precision.default_dtype``, fp32 too): shipped
        # weights are bf16 to stay small; a whole process computes faster in fp32 (issue 71)
        if ours:
            model = InferenceT5.from_pretrained(path, dtype)
        else:
            from transformers import T5ForConditionalGeneration

            with quiet_transformers():
                model = T5ForConditionalGeneration.from_pretrained(str(path), dtype=dtype)
    except Exception as e:  # missing/corrupt weights, wrong architecture, hub unreachable
        raise EditspecError(f"cannot load a T5 model from {path}: {str(e).splitlines()[0]}") from e
    tok = fast.load(path) if ours else load_tokenizer(path)
    if len(tok) > model.config.vocab_size:
        raise EditspecError(f"tokenizer at {path} has {len(tok)} tokens but the model only "
                            f"{model.config.vocab_size}: they do not belong together")
    return model.to(device or default_device()).eval(), tok


def encode(model: "T5ForConditionalGeneration", input_ids: torch.Tensor,
           attention_mask: torch.Tensor) -> torch.Tensor:
    """Encoder hidden states [batch, source length, d_model]."""
    with record_function("editspec.t5.encode"):
        return model.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def log_softmax(logits: torch.Tensor) -> torch.Tensor:
    """log P over the vocabulary for each row of ``logits`` [T, vocab], in >= float32 (rows are
    independent: the same row gives the same numbers in any batch)."""
    return logits.to(torch.promote_types(logits.dtype, torch.float32)).log_softmax(-1)


def token_log_probs(logits: torch.Tensor, tokens: Sequence[int]) -> list[float]:
    """log P(token) under each row of ``logits`` [T, vocab] (``log_softmax``)."""
    index = torch.tensor(tokens, device=logits.device)[:, None]
    return log_softmax(logits).gather(-1, index)[:, 0].tolist()


def token_probs(logits: torch.Tensor, temperature: float = 1.0, top_p: float = 1.0) -> torch.Tensor:
    """Sampling distribution over the vocabulary for logits [..., vocab]: temperature, then
    top-p (nucleus), as transformers' ``generate(do_sample=True)`` applies them; softmax in >= float32."""
    shape = logits.shape
    from transformers.generation.logits_process import TemperatureLogitsWarper, TopPLogitsWarper  # sampling only

    scores = logits.reshape(-1, shape[-1]).to(torch.promote_types(logits.dtype, torch.float32))
    if temperature != 1.0:
        scores = TemperatureLogitsWarper(float(temperature))(None, scores)
    if top_p < 1.0:
        scores = TopPLogitsWarper(top_p)(None, scores)
    return scores.softmax(-1).reshape(shape)
