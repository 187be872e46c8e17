"""--beam and --nbest as a user meets them: bad settings are one line and exit 2 before any model
loads (correct, eval, serve); the Corrector's num_beams gives transformers' beam output; jsonl's
n-best lists are transformers' num_return_sequences, with their scores."""

import json

import pytest
import torch

from editspec import cli
from editspec.corrector import Corrector
from editspec.errors import EditspecError
from editspec.modeling.t5 import load_t5
from editspec.decoding.budgets import output_budget
from tests.helpers import tiny_bundle


@pytest.fixture(scope="module")
def models(tmp_path_factory, tokenizer):
    return tiny_bundle(tmp_path_factory.mktemp("models"), tokenizer)


@pytest.mark.parametrize("argv, said", [
    (["correct", "--text", "x", "--beam", "0"], "--beam must be 1 or more, not 0"),
    (["correct", "--text", "x", "--beam", "2", "--nbest", "3", "--format", "jsonl"], "--nbest 3 is more than the 2 beams"),
    (["correct", "--text", "x", "--beam", "3", "--nbest", "2"], "--nbest is for --format jsonl"),
    (["correct", "--text", "x", "--nbest", "1", "--format", "jsonl"], "give --beam 2 or more"),
    (["correct", "--text", "x", "--beam", "2", "--mode", "edit5"], "--mode edit5 has none"),
    (["eval", "--m2", "gold.m2", "--beam", "-1"], "--beam must be 1 or more, not -1"),
    (["serve", "--beam", "0"], "--beam must be 1 or more, not 0"),
])
def test_bad_beam_settings_fail_before_models_load(argv, said, capsys, monkeypatch):
    monkeypatch.setattr(Corrector, "from_pretrained", lambda *a, **k: pytest.fail("a model loaded"))
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err, err


def hf_texts(t5_dir, lines, beams, n):
    """transformers' n best of each line alone, within the corrector's budget for it."""
    model, tok = load_t5(t5_dir, transformers=True)
    texts, scores = [], []
    for line in lines:
        ids = tok([line], return_tensors="pt")
        out = model.generate(**ids, num_beams=beams, num_return_sequences=n, do_sample=False,
                             max_new_tokens=output_budget(ids.input_ids.shape[1]), output_scores=True,
                             return_dict_in_generate=True)
        texts.append(tok.batch_decode(out.sequences, skip_special_tokens=True))
        scores.append(out.sequences_scores.tolist())
    return texts, scores


def test_corrector_beams_and_jsonl_nbest_are_transformers(overfitted_t5, tokenizer, tmp_path, capsysbinary,
                                                         monkeypatch):
    """A trained T5, one sentence a line: the corrector's output with num_beams=3 is transformers'
    best beam, and jsonl's n-best lists its 3 hypotheses with their scores, from that one search."""
    from editspec.decoding import beam

    searches = []
    generate = beam.generate
    monkeypatch.setattr(beam, "generate", lambda *a, **k: searches.append(1) or generate(*a, **k))
    model, sources, _ = overfitted_t5
    t5_dir = tmp_path / "t5"
    model.save_pretrained(t5_dir)
    tokenizer.save_pretrained(t5_dir)
    # lines the vocabulary holds whole (the corrector keeps characters it cannot read as written)
    lines = [s for s in sources if tokenizer.unk_token_id not in tokenizer(s).input_ids][:10]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n")
    ref, ref_scores = hf_texts(t5_dir, lines, 3, 3)
    assert any(len(set(r)) == 3 for r in ref)
    corrector = Corrector.from_pretrained(t5=t5_dir, mode="t5", dtype="float32", num_beams=3)
    assert corrector.correct(lines) == [r[0] for r in ref]
    argv = ["correct", str(tmp_path / "in.txt"), "--t5", str(t5_dir), "--mode", "t5", "--dtype", "float32",
            "--beam", "3", "--nbest", "3", "--format", "jsonl", "--no-progress"]
    searches.clear()
    assert cli.main(argv) == 0
    assert len(searches) == 1  # the output's search gives the n-best: no second one
    records = [json.loads(x) for x in capsysbinary.readouterr()[0].decode().splitlines()]
    assert [r["output"] for r in records] == [r[0] for r in ref]
    # the same hypotheses; spacing as the corrector renders it (from the source), not as tokenizer.decode
    assert [[" ".join(h["output"].split()) for h in r["nbest"]] for r in records] == \
        [[" ".join(t.split()) for t in r] for r in ref]
    assert [r["nbest"][0]["output"] for r in records] == [r[0] for r in ref]
    scores = [[h["score"] for h in r["nbest"]] for r in records]
    assert torch.allclose(torch.tensor(scores), torch.tensor(ref_scores), rtol=1e-5)


def test_edit5_has_no_beams(models):
    with pytest.raises(EditspecError, match="mode edit5 has none"):
        Corrector.from_pretrained(models / "bundle", mode="edit5", num_beams=2)


@pytest.mark.parametrize("argv", [["correct", "--text", "x"], ["eval", "--m2", "gold.m2"], ["serve"]])
def test_correct_eval_and_serve_pass_the_beams_to_the_corrector(argv):
    from editspec.cli.model_options import corrector_options

    parser = cli.build_parser()
    assert corrector_options(parser.parse_args([*argv, "--beam", "3"])).num_beams == 3
    assert corrector_options(parser.parse_args(argv)).num_beams == 1  # greedy unless asked


def test_nbest_of_a_line_of_two_sentences_and_of_an_empty_line(overfitted_t5, tokenizer, tmp_path):
    """A line's k-th hypothesis is its sentences' k-th, rejoined with the line's spacing, scored
    their sum; an empty line is every hypothesis, scored 0."""
    model, sources, _ = overfitted_t5
    model.save_pretrained(tmp_path / "t5")
    tokenizer.save_pretrained(tmp_path / "t5")
    corrector = Corrector.from_pretrained(t5=tmp_path / "t5", mode="t5", dtype="float32", num_beams=3)
    a, b = [s for s in sources if tokenizer.unk_token_id not in tokenizer(s).input_ids][:2]
    alone = [c.nbest for c in corrector.correct_detailed([a, b], nbest=3)]
    together, empty = [c.nbest for c in corrector.correct_detailed([f"{a}  {b}", ""], nbest=3)]
    assert [t for t, _ in together] == [f"{x}  {y}" for (x, _), (y, _) in zip(*alone)]
    assert [s for _, s in together] == pytest.approx([x + y for (_, x), (_, y) in zip(*alone)])
    assert empty == (("", 0.0),) * 3
    # the corrector's own search keeps the same lists (its output is the first hypothesis here)
    kept = corrector.correct_detailed([a, b, f"{a}  {b}", ""], nbest=3)
    want = [*alone, together, empty]
    assert [[t for t, _ in c.nbest] for c in kept] == [[t for t, _ in h] for h in want]
    assert [s for c in kept for _, s in c.nbest] == pytest.approx([s for h in want for _, s in h])
    assert [c.output for c in kept] == [h[0][0] for h in [*alone, together, empty]]


def test_nbest_needs_the_beams_it_lists(overfitted_t5, tokenizer, tmp_path):
    model, _, _ = overfitted_t5
    model.save_pretrained(tmp_path / "t5")
    tokenizer.save_pretrained(tmp_path / "t5")
    greedy = Corrector.from_pretrained(t5=tmp_path / "t5", mode="t5", dtype="float32")
    with pytest.raises(EditspecError, match="need num_beams >= 2, not 1"):
        greedy.correct_detailed(["x"], nbest=1)
    two = Corrector.from_pretrained(t5=tmp_path / "t5", mode="t5", dtype="float32", num_beams=2)
    with pytest.raises(EditspecError, match="need num_beams >= 3, not 2"):
        two.correct_detailed(["x"], nbest=3)


def test_nbest_and_alternatives_come_from_the_one_search(overfitted_t5, tokenizer, tmp_path, monkeypatch):
    """With both asked for, the output's beam search gives the n-best (K of them, kept on each
    line) and the alternatives (as their own 4-beam search gives them): one search, not two."""
    from editspec.decoding import beam

    model, sources, _ = overfitted_t5
    model.save_pretrained(tmp_path / "t5")
    tokenizer.save_pretrained(tmp_path / "t5")
    corrector = Corrector.from_pretrained(t5=tmp_path / "t5", mode="t5", dtype="float32", num_beams=4)
    lines = [s for s in sources if tokenizer.unk_token_id not in tokenizer(s).input_ids][:8]
    apart = corrector.correct_detailed(lines, alternatives=2)
    searches = []
    generate = beam.generate
    monkeypatch.setattr(beam, "generate", lambda *a, **k: searches.append(1) or generate(*a, **k))
    together = corrector.correct_detailed(lines, nbest=2, alternatives=2)
    assert len(searches) == 1
    assert any(c.edits for c in together) and all(len(c.nbest) == 2 for c in together)
    assert [c.nbest[0][0] for c in together] == [c.output for c in together]
    assert [[e.alternatives for e in c.edits] for c in together] == [[e.alternatives for e in c.edits] for c in apart]
    assert all("nbest" in c.as_dict() for c in together)
