"""Shared fixtures: a tiny SentencePiece/T5 tokenizer trained on generated sentences (~1 s)."""

import random

import pytest
import torch

SUBJECTS = ["I", "You", "He", "She", "We", "They", "The cat", "My friend", "The teacher", "Our class"]
VERBS = ["like", "likes", "liked", "go", "goes", "went", "see", "saw", "play", "played", "want", "wanted"]
OBJECTS = ["the park", "a book", "an apple", "school", "music", "the dogs", "football", "the city",
           "my homework", "some water", "the old house", "a new car"]
TAILS = [".", " yesterday.", " every day.", " on Monday.", " with friends.", "!", " in the morning.",
         ", but it rained.", " because it is fun."]


def sentences(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}{rng.choice(TAILS)}"
            for _ in range(n)]


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
