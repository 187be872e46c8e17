"""Plain helpers shared by test modules (fixtures live in conftest.py): generated learner-like
sentences, a random T5 whose greedy outputs vary, random padded batches, corrupted pairs, a tiny
gold M2 set with a system's outputs, and ERRANT's own scoring command."""

from __future__ import annotations

import math
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

# torch, transformers and the EdiT5 load in the helpers that build models, not here: a process that
# imports a test module for a class of its own (the Ray actors of tests/cli/test_ray.py unpickle
# Sizes) imports this one, and these cost ~9 s a process
if TYPE_CHECKING:
    import torch
    from transformers import T5ForConditionalGeneration

    from editspec.modeling.modeling_edit5 import EdiT5Model

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


def random_t5(seed: int, vocab: int = 40, d_model: int = 32, layers: int = 2, heads: int = 4,
              dtype: torch.dtype | None = None) -> T5ForConditionalGeneration:
    """A random T5 whose greedy outputs vary (HF's init repeats one token forever): small
    embeddings, large projections and a sharp relative position bias. float64 by default (None), so
    that window passes and single steps cannot flip a near-tie."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    dtype = torch.float64 if dtype is None else dtype
    torch.manual_seed(seed)
    cfg = T5Config(vocab_size=vocab, d_model=d_model, d_kv=d_model // heads, d_ff=2 * d_model,
                   num_layers=layers, num_decoder_layers=layers, num_heads=heads, dropout_rate=0.0,
                   decoder_start_token_id=0, pad_token_id=0, eos_token_id=1, tie_word_embeddings=False)
    model = T5ForConditionalGeneration(cfg).to(dtype).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "relative_attention_bias" in name:
                p.normal_(0, 8.0)
            elif "shared" in name:
                p.normal_(0, 0.1)
            elif "layer_norm" not in name:
                p.normal_(0, 2.0 / math.sqrt(p.shape[1]))
    return model


def random_batch(gen: torch.Generator, batch: int, vocab: int, min_len: int = 2, max_len: int = 12):
    """Right-padded inputs ``ids + [EOS]`` of random lengths, and their attention mask."""
    import torch

    lengths = torch.randint(min_len, max_len + 1, (batch,), generator=gen).tolist()
    ids = torch.zeros(batch, max(lengths), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, n in enumerate(lengths):
        ids[i, : n - 1] = torch.randint(2, vocab, (n - 1,), generator=gen)
        ids[i, n - 1] = 1
        mask[i, :n] = 1
    return ids, mask


REPLACE = {"went": "go", "likes": "like", "saw": "see", "played": "play", "a": "an", "the": "a"}


def corrupt(text: str, rng: random.Random, kind: str) -> str:
    """A learner-like error in a clean sentence: the model must undo it."""
    w = text.split()
    i = rng.randrange(1, len(w) - 1)
    if kind == "delete":  # a missing word: the model inserts it
        del w[i]
    elif kind == "insert":  # an extra word: the model deletes it
        w.insert(i, rng.choice(["the", "very", "to"]))
    elif kind == "swap":  # two words swapped: the pointer network moves one back
        w[1], w[2] = w[2], w[1]  # not the first word: see the report on render() and moves
    elif kind == "replace":
        j = next((k for k, x in enumerate(w) if x in REPLACE), i)
        w[j] = REPLACE.get(w[j], "xyz")
    return " ".join(w)


def pairs(n: int = 20, seed: int = 1) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    kinds = ["delete", "insert", "swap", "replace", "same"]
    return [(corrupt(t, rng, kinds[k % 5]), t) for k, t in enumerate(sentences(n, seed))]


def tiny_edit5(tok, identity: bool = False, max_order_positions: int = 24) -> EdiT5Model:
    """A tiny random EdiT5; ``identity``: one that keeps every token and inserts nothing (its
    output is its input byte for byte, so what changes comes from the steps around the model)."""
    import torch

    from editspec.modeling.modeling_edit5 import EdiT5Config, EdiT5Model

    config = EdiT5Config(
        vocab_size=len(tok), d_model=16, d_kv=8, d_ff=32, num_heads=2, num_layers=1, num_decoder_layers=1,
        max_order_positions=max_order_positions, tag_embedding_dim=8, tie_word_embeddings=False,
        pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, decoder_start_token_id=tok.pad_token_id)
    model = EdiT5Model(config)
    if identity:
        with torch.no_grad():
            model.tagger.classifier.weight.zero_()
            model.tagger.classifier.bias.copy_(torch.tensor([-5.0, 5.0]))  # [DELETE, KEEP]
            model.pointer.query.weight.zero_()
            model.pointer.query.bias.zero_()
            for layer in model.insertion.decoder.block[0].layer:  # residual stream = start token embedding
                for name in ("SelfAttention", "EncDecAttention"):
                    if hasattr(layer, name):
                        getattr(layer, name).o.weight.zero_()
                if hasattr(layer, "DenseReluDense"):
                    layer.DenseReluDense.wo.weight.zero_()
            model.insertion.lm_head.weight.zero_()
            model.insertion.lm_head.weight[tok.eos_token_id] = model.shared.weight[config.decoder_start_token_id]
    return model


def tiny_t5(tok) -> T5ForConditionalGeneration:
    from transformers import T5Config, T5ForConditionalGeneration

    return T5ForConditionalGeneration(T5Config(
        vocab_size=len(tok), d_model=16, d_kv=8, d_ff=32, num_layers=1, num_decoder_layers=1, num_heads=2,
        decoder_start_token_id=tok.pad_token_id, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id))


def save(model, tok, path: Path) -> Path:
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def tiny_bundle(root, tok) -> Path:
    """Tiny random models saved under ``root``: ``bundle/`` (EdiT5 and T5, chunked at 16 tokens)
    and ``identity/`` (an identity EdiT5, see ``tiny_edit5``)."""
    import torch

    root = Path(root)
    torch.manual_seed(0)
    save(tiny_edit5(tok), tok, root / "bundle" / "edit5")
    save(tiny_t5(tok), tok, root / "bundle" / "t5")
    for kind in ("edit5", "t5"):  # as training/train.py records it: inputs are chunked to this
        (root / "bundle" / kind / "training.json").write_text('{"step": 1, "max_length": 16}')
    save(tiny_edit5(tok, identity=True), tok, root / "identity")
    return root


# A tiny gold set for ERRANT scoring, `editspec eval` and eval/significance.py: two annotators,
# noop annotations, an UNK edit (ignored in correction scoring) and a source token spaCy 3 would
# split ("hasn't"). ERRANT picks per sentence the annotator that maximises corpus F.
GOLD_M2 = """\
S He go to school every days .
A 1 2|||R:VERB:SVA|||goes|||REQUIRED|||-NONE-|||0
A 5 6|||R:NOUN:NUM|||day|||REQUIRED|||-NONE-|||0
A 1 2|||R:VERB:TENSE|||went|||REQUIRED|||-NONE-|||1
A 5 6|||R:NOUN:NUM|||day|||REQUIRED|||-NONE-|||1

S I have seen him yesterday .
A 1 3|||R:VERB:TENSE|||saw|||REQUIRED|||-NONE-|||0
A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||1

S She does n't like apples .
A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0
A 0 1|||UNK|||She|||REQUIRED|||-NONE-|||1

S The informations is usefull .
A 1 2|||R:NOUN:INFL|||information|||REQUIRED|||-NONE-|||0
A 3 4|||R:SPELL|||useful|||REQUIRED|||-NONE-|||0
A 1 2|||R:NOUN:INFL|||information|||REQUIRED|||-NONE-|||1
A 2 3|||R:VERB:SVA|||are|||REQUIRED|||-NONE-|||1
A 3 4|||R:SPELL|||useful|||REQUIRED|||-NONE-|||1

S He hasn't go there .
A 2 3|||R:VERB:FORM|||gone|||REQUIRED|||-NONE-|||0

S My friend live in the medium - sized town .
A 2 3|||R:VERB:SVA|||lives|||REQUIRED|||-NONE-|||0
"""
GOLD_OUTPUTS = {  # GOLD_M2's natural-text sources -> a system's outputs: right, wrong and missed edits
    "He go to school every days.": "He goes to school every day.",
    "I have seen him yesterday.": "I saw him yesterday.",
    "She doesn't like apples.": "She doesn't like the apples.",
    "The informations is usefull.": "The informations are useful.",
    "He hasn't go there.": "He hasn't gone there.",
    "My friend live in the medium-sized town.": "My friend live in a medium-sized town.",
}


def errant_compare(hyp, ref, *flags: str) -> str:
    """stdout of the installed ``errant_compare -hyp HYP -ref REF FLAGS`` (ERRANT's own command)."""
    exe = Path(sys.executable).with_name("errant_compare")
    exe = str(exe) if exe.exists() else shutil.which("errant_compare")
    assert exe, "errant_compare (errant's command) is not installed"
    return subprocess.run([exe, "-hyp", str(hyp), "-ref", str(ref), *flags], check=True,
                          capture_output=True, text=True).stdout


# an M2 file with two annotators, a noop, an UNK edit and a sentence without edits
TINY_M2 = """\
S He go to school yesterday .
A 1 2|||R:VERB:TENSE|||went|||REQUIRED|||-NONE-|||0
A 3 3|||M:DET|||the|||REQUIRED|||-NONE-|||0
A 4 5|||U:ADV||||||REQUIRED|||-NONE-|||0
A 1 2|||R:VERB:TENSE|||goes|||REQUIRED|||-NONE-|||1

S I do n't like the medium - size car .
A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0
A 7 8|||R:NOUN|||sized|||REQUIRED|||-NONE-|||1

S Pasteries are nice .
A 0 1|||UNK|||Pasteries|||REQUIRED|||-NONE-|||0
A 2 2|||M:ADV|||very|||REQUIRED|||-NONE-|||0
A 3 3|||M:PUNCT|||!|||REQUIRED|||-NONE-|||0
A 3 4|||U:PUNCT||||||REQUIRED|||-NONE-|||0

S It was " great " ( really ) .
"""


def errant_from_pairs(sources: list[str], targets: list[str], retokenize: str = "changed"):
    """``ErrantEvaluator.from_pairs``, imported here, not at the top: spaCy loads only for the tests
    that score."""
    from editspec.evaluation.errant import ErrantEvaluator

    return ErrantEvaluator.from_pairs(sources, targets, retokenize)


def rescored(sources, outputs, score, **options) -> list[str]:
    """``rescoring.rescore`` of text pairs, as texts."""
    from editspec.decoding.rescoring import rescore
    from editspec.post.diff import Correction

    return [c.output for c, _ in rescore([Correction.of(s, o) for s, o in zip(sources, outputs)], score, **options)]
