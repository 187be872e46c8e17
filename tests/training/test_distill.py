"""training/distill.py: the teacher's outputs as targets, from M2 sources or synthetic pairs."""

import json
import lzma

from editspec.corrector import Corrector
from training import distill
from training.distill import right_edits
from training.synthetic.pairs import WI_TRAIN_M2, WIKI_DIR, synthetic_pairs


def test_distill_writes_the_teachers_outputs_and_resumes(models, tmp_path):
    """training/distill.py: source.txt holds the M2 files' sources and target.txt the teacher
    Corrector's outputs for them, line for line; a rerun reuses the parts already stored."""
    (tmp_path / "data").mkdir()
    for name, text in (("a.m2", ["She go home .", "He go to school every days ."]), ("b.m2", ["Yes . No ."])):
        with open(tmp_path / "data" / name, "w", encoding="utf-8") as f:
            f.writelines(f"S {s}\nA -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0\n\n" for s in text)
    out = tmp_path / "out"
    argv = [str(models / "bundle"), "--m2", "a.m2", "b.m2", "--out", str(out), "--data-dir",
            str(tmp_path / "data"), "--mode", "t5", "--batch-size", "4"]
    distill.main(argv)
    source = (out / "source.txt").read_text(encoding="utf-8").splitlines()
    target = (out / "target.txt").read_text(encoding="utf-8").splitlines()
    assert source == ["She go home.", "He go to school every days.", "Yes. No."]
    teacher = Corrector.from_pretrained(models / "bundle", mode="t5", device="cpu", batch_size=4)
    assert target == teacher.correct(source) and target != source  # a random T5 rewrites
    part = out / "parts" / "00000000.json"
    stored = json.loads(part.read_text())
    part.write_text(json.dumps({**stored, "target": ["kept"] * 3}))
    distill.main(argv)
    assert (out / "target.txt").read_text(encoding="utf-8").splitlines() == ["kept"] * 3


def test_distill_writes_respelled_sources_when_the_teacher_respells(models, tmp_path, monkeypatch):
    """With the spelling step on in the teacher, source.txt holds the respelled sentences the
    teacher read (and the student will read at run time); target.txt the teacher's outputs."""
    load = Corrector.from_pretrained
    monkeypatch.setattr(distill.Corrector, "from_pretrained", lambda *a, **k: load(*a, spelling=True, **k))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.m2").write_text("S I recieve your leter .\nA -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0\n\n")
    out = tmp_path / "out"
    distill.main([str(models / "bundle"), "--m2", "a.m2", "--out", str(out), "--data-dir", str(tmp_path / "data"),
                  "--mode", "t5", "--batch-size", "4"])
    assert (out / "source.txt").read_text(encoding="utf-8").splitlines() == ["I receive your letter."]
    teacher = load(models / "bundle", mode="t5", device="cpu", spelling=True)
    assert (out / "target.txt").read_text(encoding="utf-8").splitlines() == teacher.correct(["I recieve your leter."])


def test_distill_right_edits_leave_a_wrong_respelling_in_source_and_target(models, tmp_path, monkeypatch):
    """--right-edits with the spelling step: a respelling is part of the source, not a teacher edit
    to undo, so a wrong one ("complane" -> "compline") stays in both; undone in the target alone, the
    student would learn to write the misspelling back."""
    load = Corrector.from_pretrained

    def teacher(*a, **k):  # respells, and its model changes nothing
        c = load(*a, spelling=True, **k)
        c.decode = lambda encoded, *_: [(e.text, ()) for e in encoded]  # (output, hypotheses)
        return c

    monkeypatch.setattr(distill.Corrector, "from_pretrained", teacher)
    monkeypatch.setattr(distill, "synthetic_pairs", lambda *a: iter(
        [{"source": "I will complane about it.", "target": "I will complain about it."}]))
    out = tmp_path / "out"
    distill.main([str(models / "bundle"), "--synthetic", "1", "--right-edits", "--out", str(out),
                  "--data-dir", str(tmp_path), "--mode", "t5"])
    assert (out / "source.txt").read_text(encoding="utf-8") == "I will compline about it.\n"
    assert (out / "target.txt").read_text(encoding="utf-8") == "I will compline about it.\n"


def test_distill_synthetic_sources_are_the_corrupted_wikipedia_lines(models, tmp_path):
    """training/distill.py --synthetic N --skip K: the sources are pairs K..K+N of the chosen shard's
    synthetic stream (``training.synthetic``, W&I train's rates), the targets the teacher's outputs."""
    data = tmp_path / "data"
    (data / WIKI_DIR).mkdir(parents=True)
    for k in range(2):
        with lzma.open(data / WIKI_DIR / f"enwiki_sentences.{k:02d}.txt.xz", "wt", encoding="utf-8") as f:
            f.writelines(f"The {w} of shard {k} was built in {1900 + i} by the town.\n"
                         for i, w in enumerate(["bridge", "school", "church", "station", "mill", "hall"]))
    (data / WI_TRAIN_M2).parent.mkdir(parents=True)
    (data / WI_TRAIN_M2).write_text("S She go home .\nA 1 2|||R:VERB:SVA|||goes|||REQUIRED|||-NONE-|||0\n\n")
    out = tmp_path / "out"
    distill.main([str(models / "bundle"), "--synthetic", "3", "--skip", "2", "--shards", "1", "--seed", "5",
                  "--out", str(out), "--data-dir", str(data), "--mode", "t5", "--batch-size", "4"])
    gold = list(synthetic_pairs(data / WIKI_DIR, 5, [1], data / WI_TRAIN_M2))[2:5]
    expected = [pair["source"] for pair in gold]
    source = (out / "source.txt").read_text(encoding="utf-8").splitlines()
    assert source == expected and len(source) == 3 and not any("shard 0" in s for s in source)
    teacher = Corrector.from_pretrained(models / "bundle", mode="t5", device="cpu", batch_size=4)
    raw = teacher.correct(source)
    assert (out / "target.txt").read_text(encoding="utf-8").splitlines() == raw
    distill.main([str(models / "bundle"), "--synthetic", "3", "--skip", "2", "--shards", "1", "--seed", "5",
                  "--out", str(out), "--data-dir", str(data), "--mode", "t5", "--right-edits"])
    right = [distill.right_edits(s, t, pair["target"]) for s, t, pair in zip(source, raw, gold)]
    assert (out / "target.txt").read_text(encoding="utf-8").splitlines() == right


def test_right_edits_keeps_only_the_teachers_edits_the_clean_sentence_has():
    """distill.right_edits on its docstring's example, and at the edges."""
    source = "Its was now mostly used in chidren's programming in commercials"
    clean = "It was then mostly used in children's programming in commercials"
    teacher = "It was now mostly used in chidlren's programming in commercials"
    assert right_edits(source, teacher, clean) == "It was now mostly used in chidren's programming in commercials"
    assert right_edits(source, clean, clean) == clean  # a perfect teacher keeps everything
    assert right_edits(source, source, clean) == source  # a teacher that changes nothing
    assert right_edits(source, teacher, source) == source  # a clean source: every edit is wrong
