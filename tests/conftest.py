"""Shared fixtures: a tiny SentencePiece/T5 tokenizer trained on generated sentences (~1 s)."""

import pytest
import torch

from tests.helpers import TINY_M2, sentences


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
