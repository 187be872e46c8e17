"""T5 seq2seq: loading a checkpoint, and our own decoding loop (greedy and sampling).

Why our own loop instead of ``model.generate``: speculative decoding (``editspec.speculative``)
needs the same two building blocks that plain decoding uses, and a profiler needs to time them
separately:

  encode       run the encoder once per batch;
  decode_step  feed one or more decoder tokens per row through the decoder, reusing and growing
               the key/value cache (``CACHE_ARG``), and return their logits.

Greedy decoding is then a short loop: start with ``decoder_start_token_id`` (T5: the pad id),
feed the last token, take the argmax, stop a row at EOS. It matches
``model.generate(do_sample=False, num_beams=1)`` token for token (tested). ``sample`` draws from
``token_probs`` (temperature, then top-p, with transformers' own logits warpers), the same
distribution the speculative sampler reproduces.

Profiling: both steps run inside ``torch.profiler.record_function`` labels
(``editspec.t5.encode`` / ``editspec.t5.decode_step``); the loops call them through this module,
so a timer can also wrap ``editspec.t5.encode`` and ``editspec.t5.decode_step`` directly.
"""

from __future__ import annotations

import inspect
import os
from typing import Callable

import torch
from torch.profiler import record_function
from transformers import (
    DynamicCache,
    EncoderDecoderCache,
    PreTrainedTokenizerBase,
    T5ForConditionalGeneration,
)
from transformers.generation.logits_process import TemperatureLogitsWarper, TopPLogitsWarper
from transformers.models.t5.modeling_t5 import T5Block

from editspec.errors import EditspecError
from editspec.data.features import label_log_probs

DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
          "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}
# the keyword of the key/value cache in T5's forward methods: transformers 5.24 renamed it from
# past_key_values (which now warns on every call, and goes in 5.40) to cache
CACHE_ARG = "cache" if "cache" in inspect.signature(T5Block.forward).parameters else "past_key_values"


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def load_t5(
    path: str | os.PathLike, device: str | torch.device | None = None,
    dtype: str | torch.dtype | None = None,
) -> tuple[T5ForConditionalGeneration, PreTrainedTokenizerBase]:
    """A T5 checkpoint (directory with its own tokenizer, or hub id) in eval mode, and its tokenizer."""
    from editspec.tokenization.tokens import load_tokenizer

    if isinstance(dtype, str):
        if dtype not in DTYPES:
            raise EditspecError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
        dtype = DTYPES[dtype]
    if os.path.exists(path) and not os.path.isfile(os.path.join(path, "config.json")):
        raise EditspecError(f"{path} is not a model directory (no config.json)")
    try:
        # fp32 unless asked: shipped weights are bf16 to stay small, and CPUs without bf16
        # units compute fp32 faster
        model = T5ForConditionalGeneration.from_pretrained(str(path), dtype=dtype or torch.float32)
    except Exception as e:  # missing/corrupt weights, wrong architecture, hub unreachable
        raise EditspecError(f"cannot load a T5 model from {path}: {str(e).splitlines()[0]}") from e
    tok = load_tokenizer(path)
    if len(tok) > model.config.vocab_size:
        raise EditspecError(f"tokenizer at {path} has {len(tok)} tokens but the model only "
                            f"{model.config.vocab_size}: they do not belong together")
    return model.to(device or default_device()).eval(), tok


def new_cache(model: T5ForConditionalGeneration) -> EncoderDecoderCache:
    """Empty decoder cache: self-attention keys/values grow per step, cross-attention ones are
    computed at the first step and reused."""
    return EncoderDecoderCache(DynamicCache(config=model.config), DynamicCache(config=model.config))


def encode(model: T5ForConditionalGeneration, input_ids: torch.Tensor,
           attention_mask: torch.Tensor) -> torch.Tensor:
    """Encoder hidden states [batch, source length, d_model]."""
    with record_function("editspec.t5.encode"):
        return model.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def decode_step(model: T5ForConditionalGeneration, decoder_input_ids: torch.Tensor,
                encoder_hidden: torch.Tensor, attention_mask: torch.Tensor,
                cache: EncoderDecoderCache) -> torch.Tensor:
    """Logits [batch, k, vocab] for k new decoder tokens per row; appends them to ``cache``.

    The new tokens sit at positions ``cache.get_seq_length() ...`` of every row (T5's relative
    position bias is computed from that one offset), and each attends causally to the cache and
    to the earlier new tokens.
    """
    with record_function("editspec.t5.decode_step"):
        return model(encoder_outputs=(encoder_hidden,), attention_mask=attention_mask,
                     decoder_input_ids=decoder_input_ids, use_cache=True,
                     **{CACHE_ARG: cache}).logits


@torch.inference_mode()
def log_likelihood(model: T5ForConditionalGeneration, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                   labels: torch.Tensor, rows: torch.Tensor | None = None) -> torch.Tensor:
    """log P(labels | input) per row [batch]: one teacher-forced pass, the log-probabilities of
    the label tokens summed (labels end with EOS, padded with -100). With ``rows``, label row i
    reads input row ``rows[i]``: the encoder runs once per input, however many targets it has."""
    hidden = encode(model, input_ids, attention_mask)
    if rows is not None:
        hidden, attention_mask = hidden[rows], attention_mask[rows]
    logits = model(encoder_outputs=(hidden,), attention_mask=attention_mask, labels=labels).logits
    return label_log_probs(logits, labels)


def token_probs(logits: torch.Tensor, temperature: float = 1.0, top_p: float = 1.0) -> torch.Tensor:
    """Sampling distribution over the vocabulary for logits [..., vocab]: temperature, then
    top-p (nucleus), as ``generate(do_sample=True)`` applies them; softmax in >= float32."""
    shape = logits.shape
    scores = logits.reshape(-1, shape[-1]).to(torch.promote_types(logits.dtype, torch.float32))
    if temperature != 1.0:
        scores = TemperatureLogitsWarper(float(temperature))(None, scores)
    if top_p < 1.0:
        scores = TopPLogitsWarper(top_p)(None, scores)
    return scores.softmax(-1).reshape(shape)


@torch.inference_mode()
def greedy(model: T5ForConditionalGeneration, input_ids: torch.Tensor, attention_mask: torch.Tensor,
           max_new_tokens: int = 128) -> list[list[int]]:
    """Greedy output ids per row (no start token, no EOS, no padding)."""
    return _decode(model, input_ids, attention_mask, max_new_tokens, lambda logits: logits.argmax(-1))


@torch.inference_mode()
def sample(model: T5ForConditionalGeneration, input_ids: torch.Tensor, attention_mask: torch.Tensor,
           max_new_tokens: int = 128, temperature: float = 1.0, top_p: float = 1.0,
           generator: torch.Generator | None = None) -> list[list[int]]:
    """Sampled output ids per row, from ``token_probs`` at every step."""
    def pick(logits: torch.Tensor) -> torch.Tensor:
        probs = token_probs(logits, temperature, top_p)
        return torch.multinomial(probs, 1, generator=generator).squeeze(1)

    return _decode(model, input_ids, attention_mask, max_new_tokens, pick)


def _decode(model: T5ForConditionalGeneration, input_ids: torch.Tensor, attention_mask: torch.Tensor,
            max_new_tokens: int, pick: Callable[[torch.Tensor], torch.Tensor]) -> list[list[int]]:
    cfg = model.config
    encoder_hidden = encode(model, input_ids, attention_mask)
    cache = new_cache(model)
    batch = input_ids.shape[0]
    step_ids = torch.full((batch, 1), cfg.decoder_start_token_id, device=input_ids.device)
    done = torch.zeros(batch, dtype=torch.bool, device=input_ids.device)
    out: list[list[int]] = [[] for _ in range(batch)]
    for _ in range(max_new_tokens):
        logits = decode_step(model, step_ids, encoder_hidden, attention_mask, cache)[:, -1]
        next_ids = pick(logits).masked_fill(done, cfg.pad_token_id)  # finished rows feed padding
        for row, tok in zip(out, next_ids.masked_fill(done, cfg.eos_token_id).tolist()):
            if tok != cfg.eos_token_id:
                row.append(tok)
        done |= next_ids == cfg.eos_token_id
        if done.all():
            break
        step_ids = next_ids[:, None]
    return out
