"""Fixtures of the profiling tests: a bundle of tiny random models and a small M2 file."""

import pytest
import torch

from editspec.modeling.modeling_edit5 import EdiT5Config, EdiT5Model
from tests.helpers import random_t5, sentences


def _save(model, tok, path):
    model.save_pretrained(path)
    tok.save_pretrained(path)


@pytest.fixture(scope="session")
def bundle(tmp_path_factory, tokenizer):
    """EdiT5, T5 and a small T5 drafter (t5-draft/) saved with the conftest tokenizer. float64
    models (as in test_speculative): a window pass cannot flip a near-tie. A larger EOS row of
    the lm heads ends outputs early (2-40 T5 tokens, 1-2 EdiT5 insertion tokens), which keeps the
    tests fast."""
    root = tmp_path_factory.mktemp("profile") / "bundle"
    vocab, eos = len(tokenizer), tokenizer.eos_token_id
    t5 = random_t5(1, vocab=vocab, d_model=32, layers=2)
    with torch.no_grad():
        t5.lm_head.weight[eos] *= 3
    _save(t5, tokenizer, root / "t5")
    _save(random_t5(2, vocab=vocab, d_model=16, layers=1, heads=2), tokenizer, root / "t5-draft")
    torch.manual_seed(3)
    edit5 = EdiT5Model(EdiT5Config(
        vocab_size=vocab, d_model=16, d_kv=8, d_ff=32, num_heads=2, num_layers=1, num_decoder_layers=1,
        dropout_rate=0.0, max_order_positions=64, tag_embedding_dim=8, pad_token_id=tokenizer.pad_token_id,
        eos_token_id=eos, decoder_start_token_id=tokenizer.pad_token_id, tie_word_embeddings=False)).double()
    with torch.no_grad():
        edit5.insertion.lm_head.weight[eos] *= 4
    _save(edit5, tokenizer, root / "edit5")
    return root


@pytest.fixture
def dev_m2(tmp_path):
    """An M2 file of 5 toy sentences, each with one replacement (annotator 0) or a noop."""
    blocks = []
    for k, s in enumerate(sentences(5, seed=7)):
        tokens = s.replace(".", " .").replace("!", " !").replace(",", " ,").split()
        if k % 2:
            blocks.append(f"S {' '.join(tokens)}\nA 1 2|||R:VERB|||wanted|||REQUIRED|||-NONE-|||0\n")
        else:
            blocks.append(f"S {' '.join(tokens)}\nA -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0\n")
    path = tmp_path / "dev.m2"
    path.write_text("\n".join(blocks) + "\n", encoding="utf-8")
    return path
