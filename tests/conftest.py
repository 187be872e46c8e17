"""Shared fixtures: a tiny SentencePiece/T5 tokenizer trained on generated sentences (~1 s)."""

import os

import pytest
import torch

from tests.helpers import TINY_M2, pairs, sentences


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory):
    from editspec.tokenization.tokens import train_tokenizer

    out = tmp_path_factory.mktemp("tokenizer")
    text = sentences(2000) + ["Hello world, don't stop: (1, 2, 3) + - * / ? ' \" & % $ # @ ;"]
    train_tokenizer(text, out, vocab_size=300, extra_ids=64)
    return out


@pytest.fixture(scope="session")
def tokenizer(tokenizer_dir):
    from editspec.tokenization.tokens import load_tokenizer

    return load_tokenizer(tokenizer_dir)


@pytest.fixture(scope="session", autouse=True)
def _editspec_cache(tmp_path_factory):
    """editspec's cache (spelling dictionaries, CTranslate2 conversions) in the session's temporary
    folder, never in ~/.cache; subprocesses inherit it."""
    old = os.environ.get("EDITSPEC_CACHE")
    os.environ["EDITSPEC_CACHE"] = str(tmp_path_factory.mktemp("editspec-cache"))
    yield
    if old is None:
        os.environ.pop("EDITSPEC_CACHE", None)
    else:
        os.environ["EDITSPEC_CACHE"] = old


# the tests' thread count, for torch here and the commands they start: Corrector.from_pretrained keeps
# OMP_NUM_THREADS when set, as the CLI does (tests/test_threads.py unsets it where it tests the choice)
os.environ.setdefault("OMP_NUM_THREADS", "1")
# fp32 on every host, as the tests' expected outputs are: no bf16 measurement at a first load, here
# or in the commands they start (tests/modeling/test_precision.py tests the measurement itself)
os.environ.setdefault("EDITSPEC_BF16_UNITS", "0")


@pytest.fixture(autouse=True)
def _seed_and_threads():
    torch.manual_seed(0)
    torch.set_num_threads(1)  # tiny models: more threads only add synchronisation


@pytest.fixture
def datasets_cache(tmp_path, monkeypatch):
    """datasets' cache in the test's own folder: no run sees another's cached corpus."""
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")


@pytest.fixture
def m2_file(tmp_path):
    path = tmp_path / "tiny.m2"
    path.write_text(TINY_M2, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def overfitted_t5(tokenizer):
    """A tiny T5 trained until its greedy output is the target of each of 20 pairs (deletions,
    insertions, a swap, replacements, unchanged): (model, sources, targets)."""
    from transformers import T5Config, T5ForConditionalGeneration

    from editspec.modeling.features import collate_t5, t5_features_batch
    from editspec.decoding import core

    torch.manual_seed(0)
    sources, targets = zip(*pairs(20))
    model = T5ForConditionalGeneration(T5Config(
        vocab_size=len(tokenizer), d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
        dropout_rate=0.0, decoder_start_token_id=tokenizer.pad_token_id, pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id))
    features = t5_features_batch(tokenizer, sources, targets, 64)
    batch, wanted = collate_t5(features, tokenizer.pad_token_id), [f["labels"][:-1] for f in features]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(600):
        model.train()
        loss = model(**batch).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 20 == 19:
            model.eval()
            if core.greedy(model, batch["input_ids"], batch["attention_mask"], 40) == wanted:
                break
    model.eval()
    assert core.greedy(model, batch["input_ids"], batch["attention_mask"], 40) == wanted, step
    return model, sources, targets
