"""`editspec profile` (editspec/profiling.py): a smoke run of the harness on 5 sentences with tiny
random models (EdiT5, T5 and a small T5 drafter saved into a tmp bundle with the conftest
tokenizer). Benchmarks are commands, not tests: these check the report's structure, that every
exact mode reproduced T5's greedy output, the acceptance bookkeeping, the forced lengths of the
architecture runs, and that the plots are written."""

import json

import pytest
import torch

from editspec import cli
from editspec import profiling
from editspec.tokenization.edits import convert
from editspec.modeling.modeling_edit5 import EdiT5Config, EdiT5Model
from editspec.tokenization.tokens import encode, marker_ids
from tests.helpers import sentences
from tests.helpers import random_t5

EXACT = ("speculative", "speculative-copy", "speculative-small", "speculative-perfect", "hf-greedy")
STAT_KEYS = {"median", "p90", "mean"}
TINY_ARCHITECTURES = {
    "t5-base": ("t5", dict(d_model=32, d_kv=8, d_ff=64, num_heads=4, num_layers=2, num_decoder_layers=2)),
    "edit5-base": ("edit5", dict(d_model=32, d_kv=8, d_ff=64, num_heads=4, num_layers=2, num_decoder_layers=1)),
}


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)  # tiny models: a second thread only adds synchronisation


def _save(model, tok, path):
    model.save_pretrained(path)
    tok.save_pretrained(path)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory, tokenizer):
    """float64 models (as in test_speculative): a window pass cannot flip a near-tie. A larger
    EOS row of the lm heads ends outputs early (2-40 T5 tokens, 1-2 EdiT5 insertion tokens),
    which keeps the test fast."""
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
        edit5.lm_head.weight[eos] *= 4
    _save(edit5, tokenizer, root / "edit5")
    return root


def _m2(path, n: int = 5):
    """M2 blocks of toy sentences, each with one replacement (annotator 0) and one noop."""
    blocks = []
    for k, s in enumerate(sentences(n, seed=7)):
        tokens = s.replace(".", " .").replace("!", " !").replace(",", " ,").split()
        if k % 2:
            blocks.append(f"S {' '.join(tokens)}\nA 1 2|||R:VERB|||wanted|||REQUIRED|||-NONE-|||0\n")
        else:
            blocks.append(f"S {' '.join(tokens)}\nA -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0\n")
    path.write_text("\n".join(blocks) + "\n", encoding="utf-8")
    return path


def test_profile_report(bundle, tmp_path):
    data, out = _m2(tmp_path / "dev.m2"), tmp_path / "report"
    rc = cli.main(["profile", "--data", str(data), "--model", str(bundle), "--out", str(out), "--limit", "5",
                   "--warmup", "1", "--threads", "1", "--device", "cpu"])
    assert rc == 0
    report = json.loads((out / "report.json").read_text())
    for key in ("device", "threads", "sentences", "batch_size", "torch", "transformers", "modes", "architectures"):
        assert key in report
    assert report["threads"] == 1 and report["batch_size"] == 1 and report["sentences"] == 5
    assert list(report["modes"]) == list(profiling.MODES)
    for mode, e in report["modes"].items():
        assert e["status"] == "ok", (mode, e)
        assert e["source"] == "trained"
        for key in ("latency_ms", "encoder_ms", "decoder_step_ms", "decoder_steps"):
            assert STAT_KEYS <= set(e[key]), (mode, key)
            assert e[key]["n"] >= 5
        assert e["latency_ms"]["median"] > 0 and e["speedup_vs_t5"] > 0
        # the parts of a sample cannot exceed the whole
        assert e["encoder_ms"]["mean"] + e["decoder_ms"]["mean"] <= e["latency_ms"]["mean"] * 1.001
    modes = report["modes"]
    assert modes["t5"]["speedup_vs_t5"] == pytest.approx(1.0)
    for mode in EXACT:
        assert modes[mode]["identical_to_t5"] == 1.0, mode
    # one T5 step per output token plus EOS, unless cut by max_new_tokens (then no EOS)
    assert modes["t5"]["tokens_per_pass"] == modes["hf-greedy"]["tokens_per_pass"] == pytest.approx(1.0)
    for mode in ("speculative", "speculative-copy", "speculative-small", "speculative-perfect"):
        e = modes[mode]
        assert 0.0 <= e["acceptance_rate"] <= 1.0 and STAT_KEYS <= set(e["draft_ms"])
        hist = {int(k): v for k, v in e["accepted_per_pass"].items()}
        assert sum(k * v for k, v in hist.items()) == e["counts"]["accepted"]  # per-pass bookkeeping
        assert sum(hist.values()) == e["counts"]["row_passes"]
        assert e["decoder_steps"]["mean"] == pytest.approx(e["counts"]["row_passes"] / 5)  # hooks saw every pass
        assert e["leviathan"]["expected_speedup"] > 0
    perfect = modes["speculative-perfect"]
    assert perfect["acceptance_rate"] == 1.0 and perfect["leviathan"]["alpha"] == 1.0
    assert perfect["tokens_per_pass"] > 2  # T5's own output as the draft: whole windows accepted
    assert modes["hf-assisted"]["draft_ms"]["mean"] > 0
    md = (out / "report.md").read_text()
    assert "| `speculative-perfect` |" in md and "Leviathan" in md
    for name in ("latency_breakdown.png", "latency_vs_length.png", "accepted_per_pass.png"):
        assert (out / name).stat().st_size > 0, name


def test_batches_and_refusals(bundle, tmp_path, monkeypatch):
    """Batch size 2: transformers' assisted modes are recorded as unsupported; ours stay exact.
    And the --architectures path of the command (tiny sizes)."""
    monkeypatch.setattr(profiling, "ARCHITECTURES", TINY_ARCHITECTURES)
    data, out = _m2(tmp_path / "dev.m2"), tmp_path / "report"
    rc = cli.main(["profile", "--data", str(data), "--model", str(bundle), "--out", str(out), "--limit", "5",
                   "--warmup", "0", "--batch-size", "2", "--device", "cpu", "--architectures", "--trace",
                   "--modes", "speculative", "hf-assisted", "hf-prompt-lookup", "hf-greedy"])
    assert rc == 0
    report = json.loads((out / "report.json").read_text())
    modes = report["modes"]
    assert list(modes) == ["t5", "speculative", "hf-greedy", "hf-assisted", "hf-prompt-lookup"]
    assert modes["hf-assisted"]["status"] == modes["hf-prompt-lookup"]["status"] == "unsupported"
    assert "batch" in modes["hf-assisted"]["reason"]
    assert modes["speculative"]["identical_to_t5"] == modes["hf-greedy"]["identical_to_t5"] == 1.0
    assert modes["t5"]["decoder_steps"]["n"] == 3  # batches of 2, 2, 1
    assert set(report["architectures"]) == set(TINY_ARCHITECTURES)
    assert (out / "architectures.png").stat().st_size > 0
    trace = json.loads((out / "trace-t5.json").read_text())
    names = {event.get("name") for event in trace["traceEvents"]}
    assert {"editspec.t5.encode", "editspec.t5.decode_step"} <= names
    assert (out / "trace-speculative.json").is_file() and not (out / "trace-hf-assisted.json").exists()


def test_architectures_force_gold_lengths(tokenizer):
    """Random weights, but exactly the gold number of decoder steps: T5 len(target) + 1,
    EdiT5 len(insertions) (gold tags and order forced; checked inside against the gold edits)."""
    sources = ["She go to school yesterday.", "I like the music.", "They played football with friends!"]
    targets = ["She went to school yesterday.", "I like music very much.", "They played football with friends!"]
    report = profiling.profile_architectures(sources, targets, tokenizer, "cpu", torch.float32, warmup=0,
                                             sizes=TINY_ARCHITECTURES)
    markers, eos = marker_ids(tokenizer), tokenizer.eos_token_id
    src, tgt = encode(tokenizer, sources), encode(tokenizer, targets)
    t5_steps = sorted(len(t.ids) + 1 for t in tgt)
    edit5_steps = sorted(len(convert(s.ids, t.ids, markers, eos).insertions) for s, t in zip(src, tgt))
    assert edit5_steps != t5_steps and min(edit5_steps) == 1  # an unchanged sentence: only EOS
    for name, steps in (("t5-base", t5_steps), ("edit5-base", edit5_steps)):
        e = report[name]
        assert e["source"] == "forced-length"
        assert e["decoder_steps"]["median"] == steps[1] and e["decoder_steps"]["mean"] == pytest.approx(sum(steps) / 3)
        assert e["decoder_step_ms"]["n"] == sum(steps)
    assert report["t5-base"]["speedup_vs_t5_base"] == pytest.approx(1.0)


def test_read_data(tmp_path):
    m2 = tmp_path / "a.m2"
    m2.write_text("S I do n't like it .\nA 4 5|||R:PRON|||this|||REQUIRED|||-NONE-|||0\n"
                  "A 4 5|||R:PRON|||that|||REQUIRED|||-NONE-|||1\n\nS Fine .\nA -1 -1|||noop|||-NONE-|||x|||-NONE-|||0\n")
    assert profiling.read_data(m2) == (["I don't like it.", "Fine."], ["I don't like this.", "Fine."])
    tsv = tmp_path / "a.tsv"
    tsv.write_text("a b\tA b.\n\nc\tC.\n")
    assert profiling.read_data(tsv, limit=1) == (["a b"], ["A b."])
    lines = [f"Sentence {k}." for k in range(50)]
    plain = tmp_path / "many.txt"
    plain.write_text("\n".join(lines) + "\n")
    sample, _ = profiling.read_data(plain, limit=10, seed=1)
    assert len(sample) == 10 and sample != lines[:10] and sample == sorted(sample, key=lines.index)
    assert profiling.read_data(plain, limit=10, seed=1)[0] == sample
    plain = tmp_path / "a.txt"
    plain.write_text("One line.\n\nTwo\tcolumns here.\n")
    assert profiling.read_data(plain) == (["One line.", "Two\tcolumns here."], None)


def test_missing_drafter_is_skipped_with_a_note(bundle, tmp_path):
    data, out = _m2(tmp_path / "dev.m2"), tmp_path / "report"
    rc = cli.main(["profile", "--data", str(data), "--t5", str(bundle / "t5"), "--out", str(out),
                   "--limit", "2", "--warmup", "0", "--device", "cpu", "--modes", "speculative-small", "edit5"])
    assert rc == 0
    modes = json.loads((out / "report.json").read_text())["modes"]
    assert modes["t5"]["status"] == "ok" and modes["t5"]["decoder_steps"]["n"] == 2
    assert modes["speculative-small"] == {"status": "skipped", "reason": modes["speculative-small"]["reason"]}
    assert "t5-draft" in modes["speculative-small"]["reason"] and "edit5" in modes["edit5"]["reason"]
    assert "skipped" in (out / "report.md").read_text()


def test_spelling_is_timed_apart_from_the_modes():
    timed = profiling.time_spelling(["I recieve your leter.", "Fine."] * 3, warmup=1)
    assert timed["n"] == 6 and 0 < timed["median"] <= timed["p90"] < 1000 and timed["load_seconds"] >= 0


def test_rescoring_is_timed_apart_on_each_models_outputs(bundle):
    from editspec.corrector import Corrector

    corrector = Corrector.from_pretrained(bundle, device="cpu", rescore=True)
    timed = profiling.time_rescoring(corrector, ["He go to school.", "I like it very much."] * 3, warmup=1)
    assert set(timed) == {"edit5", "t5"}
    for t in timed.values():
        assert t["n"] == 6 and 0 < t["median"] <= t["p90"] < 10_000 and 0 <= t["changed"] <= 6
    assert timed["t5"]["changed"] > 0  # a random T5 rewrites: there was something to score
    assert all("real_words" not in t for t in timed.values())  # no spelling step, no dictionary check
    corrector.spelling = True
    timed = profiling.time_rescoring(corrector, ["He go to school.", "I like it very much."] * 3, warmup=1)
    assert all(t["real_words"]["n"] == 6 and 0 < t["real_words"]["median"] < 1000 for t in timed.values())
