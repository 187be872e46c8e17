"""EdiT5 features and model (editspec/features.py, editspec/modeling_edit5.py), with tiny models."""

from collections import Counter

import pytest
import torch
from hypothesis import given, settings, strategies as st
from transformers import AutoModel

from editspec.tokenization.edits import KEEP, Edits, realize
from editspec.modeling.features import (
    collate_edit5, collate_t5, edit5_features, edit5_features_batch, edit5_features_from_ids, t5_features,
)
from editspec.modeling.edit5_heads import decode_order, to_checkpoint
from editspec.modeling.modeling_edit5 import EdiT5Config, EdiT5Model
from editspec.modeling.tensors import IGNORE
from editspec.tokenization.tokens import encode, marker_ids
from editspec.bundle import Bundle
from editspec.decoding.runners import EDIT5, DecodeRequest
from tests.helpers import pairs

TINY = dict(d_model=32, d_kv=8, d_ff=64, num_heads=4, num_layers=2, num_decoder_layers=1,
            dropout_rate=0.0, max_order_positions=64, tag_embedding_dim=16)


def edits_from_features(f: dict) -> Edits:
    """Invert the features: walk the pointers from EOS (the last input position)."""
    end, order = len(f["input_ids"]) - 1, []
    i = f["pointers"][end]
    while i != end:
        assert 0 <= i < end and len(order) < end, "pointers leave the sequence or cycle"
        order.append(i)
        i = f["pointers"][i]
    return Edits(tags=f["tags"][:-1], order=order, insertions=f["insertion_labels"])


def tiny_model(tokenizer, **overrides) -> EdiT5Model:
    return EdiT5Model(EdiT5Config(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                                  eos_token_id=tokenizer.eos_token_id,
                                  decoder_start_token_id=tokenizer.pad_token_id, **{**TINY, **overrides}))


# -- features --

def test_features_round_trip(tokenizer):
    markers, eos = marker_ids(tokenizer), tokenizer.eos_token_id
    data = pairs(40, seed=3) + [("He go to school yesterday.", "Yesterday he went to the school."), ("a b", "")]
    feats = edit5_features_batch(tokenizer, [s for s, _ in data], [t for _, t in data], max_length=64)
    assert any(edits_from_features(f).reordered for f in feats)
    for (source, target), f in zip(data, feats):
        assert f == edit5_features(tokenizer, source, target, max_length=64)
        src, tgt = (e.ids for e in encode(tokenizer, [source, target]))
        assert f["input_ids"] == src + [eos] and f["tags"][-1] == KEEP
        edits = edits_from_features(f)
        assert realize(src, edits, markers, eos) == tgt
        # new-order positions: the p-th kept token has p, EOS n + 1, deleted tokens 0
        assert [f["order_positions"][i] for i in edits.order] == list(range(1, len(edits.order) + 1))
        assert f["order_positions"][-1] == len(edits.order) + 1
        deleted = [i for i, t in enumerate(f["tags"]) if t != KEEP]
        assert all(f["order_positions"][i] == 0 and f["pointers"][i] == IGNORE for i in deleted)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(10, 16), max_size=12), st.lists(st.integers(10, 16), max_size=12))
def test_pointer_features_describe_the_new_order(source, target):
    markers, eos = list(range(100, 164)), 1
    f = edit5_features_from_ids(source, target, markers, eos, max_length=64)
    edits = edits_from_features(f)
    assert realize(source, edits, markers, eos) == target
    kept = [i for i, t in enumerate(f["tags"]) if t == KEEP]  # EOS included
    successors = [f["pointers"][i] for i in kept]
    assert sorted(successors) == kept  # every kept token has exactly one predecessor


def test_features_skip_instead_of_truncating(tokenizer):
    stats = Counter()
    long = " ".join(["word"] * 40)
    assert edit5_features(tokenizer, long, "word", max_length=16, stats=stats) is None
    assert edit5_features(tokenizer, "word", long, max_length=16, stats=stats) is None
    assert t5_features(tokenizer, "word", long, max_length=16, stats=stats) is None
    assert stats == {"source_too_long": 1, "target_too_long": 2}
    # an insertion after the 64th kept token needs marker #64, but the tokenizer has 64 (0..63)
    markers = marker_ids(tokenizer)
    source = list(range(100, 170))
    assert edit5_features_from_ids(source, source + [5], markers, 1, 128, stats=stats) is None
    assert edit5_features_from_ids(source, [5] + source, markers, 1, 128, stats=stats) is not None
    assert stats["too_many_markers"] == 1
    unk = tokenizer.unk_token_id
    assert edit5_features_from_ids([7], [7, unk], markers, 1, 16, unk=unk, stats=stats) is None
    assert stats["unknown_insertion"] == 1
    f = t5_features(tokenizer, "He go.", "He goes.", max_length=16)
    assert f["labels"] == encode(tokenizer, ["He goes."])[0].ids + [tokenizer.eos_token_id]


def test_collate_pads_ids_and_ignores_labels(tokenizer):
    feats = [edit5_features(tokenizer, s, t, 64) for s, t in pairs(3)]
    batch = collate_edit5(feats, pad_token_id=0)
    width = max(len(f["input_ids"]) for f in feats)
    for k, f in enumerate(feats):
        n = len(f["input_ids"])
        assert batch["input_ids"][k, :n].tolist() == f["input_ids"] and (batch["input_ids"][k, n:] == 0).all()
        assert batch["attention_mask"][k].tolist() == [1] * n + [0] * (width - n)
        assert (batch["tags"][k, n:] == IGNORE).all() and (batch["pointers"][k, n:] == IGNORE).all()
        assert (batch["order_positions"][k, n:] == 0).all()
        m = len(f["insertion_labels"])
        assert batch["insertion_labels"][k, :m].tolist() == f["insertion_labels"]
        assert (batch["insertion_labels"][k, m:] == IGNORE).all()
    t5 = collate_t5([t5_features(tokenizer, s, t, 64) for s, t in pairs(3)])
    assert set(t5) == {"input_ids", "attention_mask", "labels"} and (t5["labels"] >= IGNORE).all()


# -- pointer decoding --

def reference_walk(logits, kept, start):
    """The greedy walk, one row at a time in plain Python."""
    order, current = [], start
    todo = {i for i, k in enumerate(kept) if k} - {start}
    while todo:
        current = max(sorted(todo), key=lambda j: logits[current][j])  # first index wins ties
        order.append(current)
        todo.discard(current)
    return order


@pytest.mark.parametrize("seed", range(40))
def test_decode_order_is_a_valid_greedy_permutation(seed):
    g = torch.Generator().manual_seed(seed)
    batch, length = 4, int(torch.randint(1, 12, (1,), generator=g))
    logits = torch.randn(batch, length, length, generator=g)
    if seed % 4 == 0:  # mostly monotone: exercise the fast path too
        logits += 10 * torch.diag(torch.ones(length - 1), 1)
        logits[:, -1, 0] += 10
    lengths = torch.randint(1, length + 1, (batch,), generator=g)
    start = lengths - 1
    kept = (torch.rand(batch, length, generator=g) < 0.7) & (torch.arange(length) < lengths[:, None])
    kept[torch.arange(batch), start] = True
    orders = decode_order(logits, kept, start)
    for b in range(batch):
        expected = sorted(i for i in range(length) if kept[b, i] and i != start[b])
        assert sorted(orders[b]) == expected  # a permutation of the kept tokens
        assert orders[b] == reference_walk(logits[b].tolist(), kept[b].tolist(), int(start[b]))


# -- the model --

@pytest.fixture(scope="module", params=["vocab", "pointed", "gap"],
                ids=["vocab-markers", "pointed-markers", "gap-markers"])
def trained(tokenizer, request):
    """A tiny EdiT5 overfitted to 20 corrupted sentences (deletions, insertions, a swap, replacements),
    with markers as vocabulary outputs (the paper's), pointed at kept tokens (``marker_ids``), or
    pointed at both sides of the gap (``marker_gap``)."""
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: a second thread costs more than it gives
    data = pairs(20)
    feats = edit5_features_batch(tokenizer, [s for s, _ in data], [t for _, t in data], max_length=48)
    assert all(feats) and any(edits_from_features(f).reordered for f in feats)
    batch = collate_edit5(feats, tokenizer.pad_token_id)
    model = tiny_model(tokenizer, marker_ids=marker_ids(tokenizer) if request.param != "vocab" else None,
                       marker_gap=request.param == "gap")
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    targets = [e.ids for e in encode(tokenizer, [t for _, t in data])]
    sources = [e.ids for e in encode(tokenizer, [s for s, _ in data])]
    markers, eos = marker_ids(tokenizer), tokenizer.eos_token_id
    for step in range(1, 401):  # ~80 steps suffice
        model.train()
        loss = model(**batch).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            model.eval()
            edits = model.generate_edits(batch["input_ids"], batch["attention_mask"], max_insertion_tokens=12)
            if all(realize(s, e, markers, eos) == t for s, e, t in zip(sources, edits, targets)):
                break
    model.eval()
    torch.set_num_threads(threads)
    return model, data, batch, step


def test_overfits_to_exact_targets(tokenizer, trained):
    model, data, batch, step = trained
    markers, eos = marker_ids(tokenizer), tokenizer.eos_token_id
    edits = model.generate_edits(batch["input_ids"], batch["attention_mask"], max_insertion_tokens=12)
    for (source, target), e in zip(data, edits):
        src, tgt = (x.ids for x in encode(tokenizer, [source, target]))
        assert realize(src, e, markers, eos) == tgt, (source, target, e, step)
    assert any(e.reordered for e in edits)  # the swap was undone by the pointer network
    # as the edit5 mode decodes (``Corrector``, training's dev scoring): 7 rows a batch, each its own budget
    models, encoded = Bundle(edit5=model, edit5_tokenizer=tokenizer), encode(tokenizer, [s for s, _ in data])
    assert EDIT5.render(models, encoded, EDIT5.run(models, DecodeRequest(encoded, 7)).outputs) == [t for _, t in data]


def test_batch_equals_single(tokenizer, trained):
    model, data, batch, _ = trained
    together = model.generate_edits(batch["input_ids"], batch["attention_mask"])
    for k in range(0, len(data), 2):
        n = int(batch["attention_mask"][k].sum())
        alone = model.generate_edits(batch["input_ids"][k : k + 1, :n])
        assert alone == together[k : k + 1]


def test_save_load_round_trip(tokenizer, trained, tmp_path):
    model, data, batch, _ = trained
    model.save_pretrained(tmp_path)
    loaded = EdiT5Model.from_pretrained(tmp_path).eval()
    config = lambda m: {k: v for k, v in m.config.to_dict().items() if k != "_name_or_path"}
    assert config(loaded) == config(model)
    assert loaded.insertion.lm_head.weight is loaded.shared.weight  # tied, as saved
    for (name, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items()):
        assert torch.equal(a, b), name
    with torch.no_grad():
        a, b = model(**batch), loaded(**batch)
    for key in ("loss", "tag_logits", "pointer_logits", "insertion_logits"):
        assert torch.equal(a[key], b[key]), key
    assert loaded.generate_edits(batch["input_ids"], batch["attention_mask"]) == \
        model.generate_edits(batch["input_ids"], batch["attention_mask"])
    assert type(AutoModel.from_pretrained(tmp_path)) is EdiT5Model  # registered with the Auto classes


def test_checkpoints_keep_their_names_and_either_names_load(tokenizer, trained, tmp_path):
    """The heads are modules (tagger.*, pointer.*, insertion.*); checkpoints keep the flat names they
    always had (tag_layer.*), written by save_pretrained and read by from_pretrained, InferenceEdiT5
    and torch's load_state_dict (accelerate's resume, an EMA); a file under the modules' names
    loads too."""
    from safetensors import safe_open
    from safetensors.torch import save_file
    from torch.optim.swa_utils import AveragedModel

    from editspec.modeling.edit5_inference import InferenceEdiT5

    model, data, batch, _ = trained
    assert {"tagger", "pointer", "insertion"} <= {n for n, _ in model.named_children()}
    model.save_pretrained(tmp_path / "saved")
    with safe_open(str(tmp_path / "saved" / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
    expected = set(to_checkpoint(model.state_dict())) - {"lm_head.weight"}  # tied: the embedding, once
    assert keys == expected and {"tag_layer.layer.0.SelfAttention.q.weight", "decoder.final_layer_norm.weight"} <= keys
    (tmp_path / "modules").mkdir()
    for f in ("config.json",):
        (tmp_path / "modules" / f).write_bytes((tmp_path / "saved" / f).read_bytes())
    save_file({k: v.contiguous() for k, v in model.state_dict().items() if k != "insertion.lm_head.weight"},
              str(tmp_path / "modules" / "model.safetensors"), metadata={"format": "pt"})
    want = model.generate_edits(batch["input_ids"], batch["attention_mask"])
    for where in ("saved", "modules"):
        for loaded in (EdiT5Model.from_pretrained(tmp_path / where).eval(),
                       InferenceEdiT5.from_pretrained(tmp_path / where)):
            assert loaded.generate_edits(batch["input_ids"], batch["attention_mask"]) == want, (where, type(loaded))
    fresh = tiny_model(tokenizer, marker_ids=model.config.marker_ids, marker_gap=model.config.marker_gap).eval()
    fresh.load_state_dict(to_checkpoint(model.state_dict()))
    assert fresh.generate_edits(batch["input_ids"], batch["attention_mask"]) == want
    ema = AveragedModel(tiny_model(tokenizer, marker_ids=model.config.marker_ids, marker_gap=model.config.marker_gap))
    saved = {f"module.{k}": v for k, v in to_checkpoint(model.state_dict()).items()}
    ema.load_state_dict({"n_averaged": torch.tensor(1), **saved})
    assert ema.module.eval().generate_edits(batch["input_ids"], batch["attention_mask"]) == want


def test_greedy_inference_matches_teacher_forced_pass(tokenizer, trained):
    """generate_edits (cached decoder steps, pointer walk) agrees with forward() fed its output."""
    model, data, _, _ = trained
    eos = tokenizer.eos_token_id
    for source, _ in data[:10]:  # every kind of corruption, twice
        ids = torch.tensor([encode(tokenizer, [source])[0].ids + [eos]])
        (edits,) = model.generate_edits(ids, max_insertion_tokens=8)
        n = len(edits.tags)
        tags = torch.tensor([edits.tags + [KEEP]])
        order_positions = torch.zeros_like(ids)
        order_positions[0, edits.order] = torch.arange(1, len(edits.order) + 1)
        order_positions[0, n] = len(edits.order) + 1
        decoder_input_ids = torch.tensor([[tokenizer.pad_token_id] + edits.insertions[:-1]])
        with torch.no_grad():
            out = model(ids, torch.ones_like(ids), tags, order_positions, decoder_input_ids=decoder_input_ids)
        assert out.tag_logits[0, :n].argmax(-1).tolist() == edits.tags
        assert out.insertion_logits[0].argmax(-1).tolist() == edits.insertions
        walk = decode_order(out.pointer_logits, tags == KEEP, torch.tensor([n]))[0]
        assert walk == edits.order


def test_log_likelihood_sums_what_the_losses_average(tokenizer):
    """log P(tags, order, insertions) of a pair is minus the sum of its three parts' losses; with
    ``rows`` the variants of one source share its encoder pass."""
    model = tiny_model(tokenizer, marker_ids=marker_ids(tokenizer)).double().eval()
    data = pairs(6, seed=4)
    feats = edit5_features_batch(tokenizer, [s for s, _ in data], [t for _, t in data], max_length=48)
    batch = collate_edit5(feats, tokenizer.pad_token_id)
    expected = []
    for f in feats:
        one = collate_edit5([f], tokenizer.pad_token_id)
        with torch.no_grad():
            out = model(**one)
        expected.append(-sum(float(loss) * int((one[key] != IGNORE).sum()) for loss, key in (
            (out.tag_loss, "tags"), (out.pointer_loss, "pointers"), (out.insertion_loss, "insertion_labels"))))
    assert model.log_likelihood(**batch).tolist() == pytest.approx(expected, rel=1e-6)  # losses are fp32
    rows = torch.tensor([3, 3, 0])
    labels = {k: v[rows] for k, v in batch.items() if k not in ("input_ids", "attention_mask")}
    assert model.log_likelihood(batch["input_ids"], batch["attention_mask"], rows=rows, **labels).tolist() == \
        pytest.approx([expected[3], expected[3], expected[0]], rel=1e-6)


def test_rescoring_keeps_the_learned_edits_and_undoes_a_wrong_one(tokenizer, trained):
    from editspec.post.diff import diff
    from editspec.decoding.rescoring import edit5_scorer
    from tests.helpers import rescored

    model, data, _, _ = trained
    score = edit5_scorer(model, tokenizer, batch_size=6)
    changed = [(s, t) for s, t in data if s != t]
    assert len(changed) >= 12
    assert rescored([s for s, _ in changed], [t for _, t in changed], score) == [t for _, t in changed]
    wrong = [t.replace(" ", " very ", 1) for _, t in changed]  # a word no pair inserts
    apart = [k for k, (s, t) in enumerate(changed) if len(diff(s, wrong[k])) == len(diff(s, t)) + 1]
    assert len(apart) >= 4
    outputs = rescored([changed[k][0] for k in apart], [wrong[k] for k in apart], score)
    assert not any("very" in r for r in outputs)
    # each edit is judged beside the others: after an unseen "very" the model may doubt a right one
    assert sum(r == changed[k][1] for r, k in zip(outputs, apart)) >= len(apart) / 2


def test_marker_gap_starts_as_the_pointed_checkpoint_and_learns(tokenizer, tmp_path):
    """Adding gap keys to a pointed checkpoint changes no output until they are trained (they
    start at zero), and the loss reaches them (a zero key that got no gradient would stay dead)."""
    torch.manual_seed(0)
    data = pairs(6)
    batch = collate_edit5(edit5_features_batch(tokenizer, [s for s, _ in data], [t for _, t in data],
                                               max_length=48), tokenizer.pad_token_id)
    tiny_model(tokenizer, marker_ids=marker_ids(tokenizer)).save_pretrained(tmp_path)
    pointed = EdiT5Model.from_pretrained(tmp_path).eval()
    gap = EdiT5Model.from_pretrained(tmp_path, marker_gap=True).eval()
    with torch.no_grad():
        assert torch.equal(pointed(**batch).insertion_logits, gap(**batch).insertion_logits)
    gap(**batch).loss.backward()
    assert gap.insertion.marker_gap_key.weight.grad.abs().sum() > 0


def test_loss_weighting(tokenizer):
    feats = [edit5_features(tokenizer, s, t, 64) for s, t in pairs(6)]
    batch = collate_edit5(feats, tokenizer.pad_token_id)
    model = tiny_model(tokenizer, tag_loss_weight=2.0).eval()
    out = model(**batch)
    n = [int((batch[k] != IGNORE).sum()) for k in ("tags", "pointers", "insertion_labels")]
    parts = [2.0 * out.tag_loss, out.pointer_loss, out.insertion_loss]
    assert torch.allclose(out.loss, sum(c * p for c, p in zip(n, parts)) / sum(n))
    model.config.loss_weighting = "mean"
    assert torch.allclose(model(**batch).loss, sum(parts))
    # the pointer loss is masked to kept tokens: deleted tokens are never a successor
    kept = batch["tags"] == KEEP
    assert (out.pointer_logits.masked_select(~kept[:, None, :]) <= -1e30).all()


def test_generate_edits_checks_its_input(tokenizer):
    model = tiny_model(tokenizer).eval()
    with pytest.raises(ValueError, match="EOS"):
        model.generate_edits(torch.tensor([[5, 6, 7]]))
    with pytest.raises(ValueError, match="at most"):
        model.generate_edits(torch.tensor([[5] * 70 + [tokenizer.eos_token_id]]))
    empty = model.generate_edits(torch.tensor([[tokenizer.eos_token_id]]), max_insertion_tokens=3)[0]
    assert empty.tags == [] and empty.order == [] and len(empty.insertions) <= 3


@pytest.mark.parametrize("tied", [True, False])
def test_from_t5_copies_encoder_and_decoder(tokenizer, tmp_path, tied):
    from transformers import T5Config, T5ForConditionalGeneration

    t5 = T5ForConditionalGeneration(T5Config(
        vocab_size=len(tokenizer), d_model=32, d_kv=8, d_ff=64, num_heads=4, num_layers=3,
        num_decoder_layers=2, feed_forward_proj="relu" if tied else "gated-gelu",
        tie_word_embeddings=tied, dropout_rate=0.0,
    )).eval()
    t5.save_pretrained(tmp_path)
    model = EdiT5Model.from_t5(tmp_path, num_layers=2, max_order_positions=64).eval()
    assert model.config.tie_word_embeddings == tied and model.config.d_model == 32
    assert torch.equal(model.shared.weight, t5.shared.weight)
    t5_state, state = t5.state_dict(), to_checkpoint(model.state_dict())  # the insertion decoder's: decoder.*
    copied = [name for name in state if name.startswith(("encoder.", "decoder."))]
    assert any(n.startswith("decoder.block.0.") for n in copied) and "decoder.final_layer_norm.weight" in copied
    for name in copied:
        assert torch.equal(state[name], t5_state[name]), name
    assert not any(k.startswith("encoder.block.2") for k in state)  # num_layers=2 took the first two
    if not tied:
        assert torch.equal(model.insertion.lm_head.weight, t5.lm_head.weight)
        assert model.insertion.lm_head.weight.data_ptr() != model.shared.weight.data_ptr()
    # the first two encoder layers compute what T5's do (final norm included)
    ids = torch.tensor([encode(tokenizer, ["He go to school."])[0].ids + [tokenizer.eos_token_id]])
    t5.encoder.block = t5.encoder.block[:2]
    with torch.no_grad():
        expected = t5.encoder(input_ids=ids).last_hidden_state
        got, _ = model._encode(ids, torch.ones_like(ids))
    assert torch.allclose(got, expected, atol=1e-6)


def test_confidence_biases_force_identity_edits(tokenizer):
    """A large keep/order bias turns any model into keep-everything-in-order, a large stop bias
    ends or never ends the insertions: the knobs work."""
    import torch as _torch

    from editspec.modeling.edit5_heads import decode_order, to_checkpoint

    logits = _torch.randn(3, 7, 7)
    kept = _torch.ones(3, 7, dtype=_torch.bool)
    start = _torch.full((3,), 6)
    assert decode_order(logits, kept, start, order_bias=1e4) == [list(range(6))] * 3
    model = tiny_model(tokenizer).eval()
    ids = _torch.tensor([[5, 9, 7, 11, tokenizer.eos_token_id]])
    edits = model.generate_edits(ids, keep_bias=1e4, order_bias=1e4, max_insertion_tokens=4)[0]
    assert edits.tags == [1, 1, 1, 1] and edits.order == [0, 1, 2, 3]
    edits = model.generate_edits(ids, keep_bias=-1e4, max_insertion_tokens=4)[0]
    assert edits.tags == [0, 0, 0, 0] and edits.order == []
    # the stop bias: EOS first (no insertions) at +1e4, never EOS at -1e4 (runs to the limit)
    eos = tokenizer.eos_token_id
    assert model.generate_edits(ids, stop_bias=1e4, max_insertion_tokens=4)[0].insertions == [eos]
    endless = model.generate_edits(ids, stop_bias=-1e4, max_insertion_tokens=4)[0].insertions
    assert len(endless) == 4 and eos not in endless
    model.config.stop_bias = 1e4  # the config's value is the default
    assert model.generate_edits(ids, max_insertion_tokens=4)[0].insertions == [eos]


def test_pointer_offset_bias_scores_relative_offsets(tokenizer):
    """The offset bias adds one scalar per relative-position bucket: raising the +1 bucket makes
    every kept token point to its right neighbour, and the flag removes it."""
    from transformers.models.t5.modeling_t5 import T5Attention

    model = tiny_model(tokenizer).eval()
    ids = torch.tensor([[5, 9, 7, 11, tokenizer.eos_token_id]])
    h, mask = model._encode(ids, torch.ones_like(ids))
    kept = torch.ones_like(ids, dtype=torch.bool)
    s, is_eos = model.tagger.tagged(h, kept.long()), ids == tokenizer.eos_token_id
    base = model.pointer(s, mask, kept, is_eos)
    plus_one = T5Attention._relative_position_bucket(
        torch.tensor(1), bidirectional=True, num_buckets=model.config.relative_attention_num_buckets,
        max_distance=model.config.relative_attention_max_distance,
    )
    with torch.no_grad():
        model.pointer.offset.weight[plus_one] += 100.0
    raised = model.pointer(s, mask, kept, is_eos)
    diff = (raised - base).detach()
    assert torch.allclose(diff[0, :4].diagonal(1), torch.full((4,), 1000.0))  # row i, column i + 1
    assert float(diff[0].abs().sum()) == pytest.approx(4000.0, rel=1e-4)
    assert tiny_model(tokenizer, pointer_offset_bias=False).pointer.offset is None


# -- the heads on a T5's encoder --

@pytest.mark.parametrize("tied", [True, False])
def test_heads_on_a_t5_encoder_share_it_and_store_it_once(tokenizer, tmp_path, tied):
    """In memory the EdiT5 reads the T5's own encoder and embeddings; on disk its checkpoint holds
    only the heads and names the T5; loading it (beside the T5, or given the loaded T5) gives the
    same edits, and a draft from the T5's encoder states equals one from the ids."""
    from transformers import T5Config, T5ForConditionalGeneration

    t5 = T5ForConditionalGeneration(T5Config(
        vocab_size=len(tokenizer), d_model=32, d_kv=8, d_ff=64, num_heads=4, num_layers=2, num_decoder_layers=2,
        tie_word_embeddings=tied, dropout_rate=0.0, pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.pad_token_id)).eval()
    edit5 = EdiT5Model.on_t5(t5, marker_ids=marker_ids(tokenizer), max_order_positions=64).eval()
    assert edit5.encoder is t5.encoder and edit5.shared is t5.get_input_embeddings()
    t5.save_pretrained(tmp_path / "t5")
    edit5.save_pretrained(tmp_path / "edit5")
    standalone = tiny_model(tokenizer, num_layers=2, tie_word_embeddings=tied)
    standalone.save_pretrained(tmp_path / "standalone")
    assert (tmp_path / "edit5" / "model.safetensors").stat().st_size < \
        0.8 * (tmp_path / "standalone" / "model.safetensors").stat().st_size

    ids = torch.tensor([e.ids + [tokenizer.eos_token_id] for e in encode(tokenizer, ["He go to school ."])])
    expected = edit5.generate_edits(ids)
    loaded = EdiT5Model.from_pretrained(tmp_path / "edit5").eval()
    assert loaded.config.t5_encoder == "../t5" and loaded.generate_edits(ids) == expected
    verifier = T5ForConditionalGeneration.from_pretrained(tmp_path / "t5").eval()
    on_verifier = EdiT5Model.from_pretrained(tmp_path / "edit5", t5=verifier).eval()
    assert on_verifier.encoder is verifier.encoder
    states = verifier.encoder(input_ids=ids).last_hidden_state
    assert on_verifier.generate_edits(ids, encoder_hidden_states=states) == expected
    assert EdiT5Model.from_pretrained(tmp_path / "standalone").config.t5_encoder is None  # still loads alone


def test_heads_on_a_t5_encoder_fail_clearly(tokenizer, tmp_path):
    from transformers import T5Config, T5ForConditionalGeneration

    def t5(d_model):
        return T5ForConditionalGeneration(T5Config(vocab_size=len(tokenizer), d_model=d_model, d_kv=8, d_ff=64,
                                                   num_heads=4, num_layers=2, num_decoder_layers=1))

    edit5 = EdiT5Model.on_t5(t5(32), marker_ids=marker_ids(tokenizer), max_order_positions=64)
    edit5.save_pretrained(tmp_path / "edit5")
    with pytest.raises(ValueError, match="no T5 is there"):
        EdiT5Model.from_pretrained(tmp_path / "edit5")
    with pytest.raises(ValueError, match="d_model 16 != 32"):
        EdiT5Model.from_pretrained(tmp_path / "edit5", t5=t5(16))
