"""Issue 45, "nothing lost, nothing blown up": characters beside edits, threads, batches, one-line
errors, leftovers, JSON lines, and a fast slice of eval/fuzz.py on tiny models."""

import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from editspec import cli, files
from editspec.files import json_line
from editspec.corrector import Corrector
from editspec.errors import EditspecError
from editspec.modeling.loading import trained_length
from editspec.tokenization.tokens import encode, render_ids
from eval.fuzz import fuzz, generate
from tests.helpers import tiny_bundle

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory, tokenizer):
    return tiny_bundle(tmp_path_factory.mktemp("reliability"), tokenizer) / "bundle"


def ids(tok, text):
    return encode(tok, [text])[0].ids


@pytest.mark.parametrize("space", ["\t", "\u00a0", "\u2009", " \ufeff", " \u200b", "\r"])
def test_characters_next_to_an_edit_are_kept(tokenizer, space):
    """"I want to\\twent home." -> "I want to go home." lost the tab (issue 45): the whitespace
    before a replaced or deleted word is the text's, not the word's."""
    source = encode(tokenizer, [f"I want to{space}went home."])[0]
    assert render_ids(tokenizer, source, ids(tokenizer, "I want to go home.")) == f"I want to{space}go home."
    assert render_ids(tokenizer, source, ids(tokenizer, "I want to home.")) == f"I want to{space}home."


def test_a_run_of_inserted_word_boundaries_is_one_space(tokenizer):
    source = encode(tokenizer, ["She go home."])[0]
    space = tokenizer.convert_tokens_to_ids("\u2581")
    out = ids(tokenizer, "She go") + [space] * 20 + ids(tokenizer, " home.")
    assert render_ids(tokenizer, source, out) == "She go home."
    assert render_ids(tokenizer, source, ids(tokenizer, "She go to home.")) == "She go to home."


def test_encode_is_thread_safe(tokenizer):
    """``encode`` flipped encode_special_tokens on the shared tokenizer: another thread's call
    read "</s>" as EOS meanwhile (issue 45). 8 threads, the single-threaded results."""
    texts = [f"a </s> b <pad> {k} <extra_id_3>" for k in range(50)]
    want = [e.ids for e in encode(tokenizer, texts)]
    eos = tokenizer("x </s>", add_special_tokens=False)["input_ids"]
    bad = []

    def work(k):
        for _ in range(40):
            if k % 2:
                bad.extend(t for t, e in zip(texts, encode(tokenizer, texts)) if e.ids != want[texts.index(t)])
            elif tokenizer("x </s>", add_special_tokens=False)["input_ids"] != eos:
                bad.append("plain call")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == [] and tokenizer.eos_token_id in eos


def test_one_corrector_shared_by_threads(bundle):
    """The server's threads share one Corrector (issue 45): 8 threads, each correcting its own
    inputs (the spelling step, rescoring and the guard on, speculative mode) three times over, give
    the single-threaded outputs. float64: no near-tie of the random models flips."""
    c = Corrector.from_pretrained(bundle, mode="speculative", device="cpu", batch_size=4, spelling=True,
                                  rescore=True, max_edit_words=3)
    for model in (c.bundle.t5, c.bundle.edit5):
        model.double()
    texts = generate(24, seed=5)
    parts = [texts[k::8] for k in range(8)]
    want = [c.correct(p) for p in parts]
    got: dict[int, list] = {}
    errors = []

    def work(k):
        try:
            got[k] = [c.correct(parts[k]) for _ in range(3)]
        except Exception as e:  # noqa: BLE001 (reported below, not lost in a thread)
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert all(got[k] == [want[k]] * 3 for k in range(8))


@pytest.mark.parametrize("mode", ["edit5", "t5", "speculative"])
def test_each_sentence_alone_is_as_in_a_random_batch(bundle, mode):
    """A unit's output must not depend on the other units of its batch, nor the batch size
    (issue 45: the T5's runs of spaces grew with the batch's longest input). float64: no
    near-tie of the random models flips with padding."""
    c = Corrector.from_pretrained(bundle, mode=mode, device="cpu", batch_size=8)
    for model in (c.bundle.t5, c.bundle.edit5):
        if model is not None:
            model.double()
    rng = random.Random(0)
    texts = generate(80, seed=3)
    alone = [c.correct([t])[0] for t in texts[:40]]
    for batch_size in (3, 8, 40):
        c.batch_size = batch_size
        order = rng.sample(range(len(texts)), len(texts))
        together = dict(zip(order, c.correct([texts[i] for i in order])))
        assert [together[i] for i in range(40)] == alone, batch_size


def test_fuzz_slice_on_tiny_models(bundle):
    """A fast slice of eval/fuzz.py: every kind of input through every mode, all counts 0."""
    texts = generate(65, seed=1)
    for mode in ("edit5", "t5", "speculative"):
        c = Corrector.from_pretrained(bundle, mode=mode, device="cpu", batch_size=8)
        for model in (c.bundle.t5, c.bundle.edit5):
            if model is not None:
                model.double()
        result = fuzz(c, texts, alone=10, block=32)
        assert result["counts"] == dict.fromkeys(result["counts"], 0), (mode, result["examples"])


def run(*args, **kw):
    kw.setdefault("stdout", subprocess.PIPE)
    return subprocess.run([sys.executable, "-m", "editspec", *map(str, args)], stderr=subprocess.PIPE, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_DISABLE_PROGRESS_BARS": "1"},
                          cwd=ROOT, timeout=300, **kw)


def one_line(p, message):
    assert p.returncode == 2 and "Traceback" not in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert message in p.stderr, p.stderr


def test_bad_settings_files_are_one_line_errors(bundle, tmp_path):
    broken = tmp_path / "t5"
    broken.mkdir()
    for f in (bundle / "t5").iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    (broken / "training.json").write_text('{"max_length": "long"}')
    with pytest.raises(EditspecError, match="max_length must be an integer"):
        trained_length(str(broken))
    (broken / "training.json").write_text('{"max_length": 64}')
    assert trained_length(str(broken)) == 64
    (broken / "config.json").write_text("[1, 2]")
    with pytest.raises(EditspecError, match="not a JSON object"):
        Corrector.from_pretrained(broken)


def test_command_line_errors_are_one_line(bundle, tmp_path, capsys):
    text = tmp_path / "in.txt"
    text.write_text("She go home.\n")
    for args, message in [(["--threads", "-1"], "--threads: must be an integer of 1 or more"),
                          (["--threads", "0"], "--threads: must be"),
                          (["--mode", "bogus"], "invalid choice: 'bogus'")]:
        try:
            rc = cli.main(["correct", str(text), "--model", str(bundle), *args])
        except SystemExit as e:
            rc = e.code
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and message in err, err
    started = time.time()
    p = run("correct", text, "--t5", "some-org/no-such-model-here", "--mode", "t5")
    one_line(p, "some-org/no-such-model-here")
    assert time.time() - started < 120  # no minute of retries (most of this is importing torch)
    one_line(run("correct", text, "--model", bundle, "--mode", "edit5", stdout=subprocess.DEVNULL,
                  preexec_fn=lambda: os.close(1)), "standard output is closed")


def test_stale_temporary_files_of_ours_are_removed(tmp_path):
    """A SIGKILL during -o leaves ".out.txt.XXXXXXXX.tmp"; the next run into the folder removes
    it when it is over a minute old and unlocked; fresh, locked or other files stay."""
    import fcntl

    old = time.time() - 3600
    names = {"stale": ".out.txt.ab12cd_x.tmp", "fresh": ".out.txt.zz12cd_x.tmp", "locked": ".out.txt.lo12cd_x.tmp",
             "other": ".other.txt.ab12cd_x.tmp", "mine": "out.txt.ab12cd_x.tmp"}
    for key, name in names.items():
        (tmp_path / name).write_text("partial")
        if key != "fresh":
            os.utime(tmp_path / name, (old, old))
    holder = os.open(tmp_path / names["locked"], os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        with files.atomic_output(str(tmp_path / "out.txt")) as f:
            f.write(b"done\n")
    finally:
        os.close(holder)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(["out.txt", *(n for k, n in names.items() if k != "stale")])
    assert (tmp_path / "out.txt").read_text() == "done\n"


def test_jsonl_escapes_line_separators(bundle, tmp_path, capsysbinary):
    row = json_line({"input": "a\u2028b\x85c\u2029d"})
    assert row.count("\n") == 1 and len(row.splitlines()) == 1 and json.loads(row)["input"] == "a\u2028b\x85c\u2029d"
    text = tmp_path / "in.txt"
    text.write_text("She\u2028go home.\x85 Yes.\n", encoding="utf-8")
    assert cli.main(["correct", str(text), "--model", str(bundle), "--mode", "edit5", "--format", "jsonl"]) == 0
    out = capsysbinary.readouterr().out.decode()
    assert len(out.splitlines()) == 1 and json.loads(out)["input"] == "She\u2028go home.\x85 Yes."
