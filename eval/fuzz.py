"""Fuzz the corrector: generated inputs of every kind, through every mode, five failures counted.

    python eval/fuzz.py --n 10000                       # the shipped bundle, all three modes
    python eval/fuzz.py --n 300 --model DIR --modes t5 --json out.json

Inputs (``generate``; one seed gives the same inputs): learner sentences with noise (typos, odd
whitespace: tab, NBSP, thin space, CR), code points of all Unicode planes, control characters,
bidi marks, zero-width characters, CR/LF mixes, long tokens, URLs, code, emoji sequences (ZWJ
families, flags, skin tones, keycaps), each mixed into a learner sentence now and then. Example::

    "She go\\u00a0to school every days 🇫🇷.\\rThen\\u200b we eat"

Every mode corrects all inputs three ways: as one list (``Corrector.correct_detailed``, as
``editspec correct`` does a block), in another order at another batch size, and a sample one by
one and once more as the first time. Counted (all must be 0):

    crashes           an exception (the inputs of a failing call are retried one by one)
    lines changed     the output holds more or fewer of a line break (str.splitlines's) than the input
    lost characters   a character the model cannot read (``tokens.unreadable``: <unk>, tab, NBSP,
                      U+FEFF, ...) is missing from the output, or the edits do not rebuild it
    batch dependence  an output differs in another order / batch size, or alone
    nondeterminism    an output differs when the same call is made again
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Callable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from editspec.corrector import Corrector  # noqa: E402
from editspec.post.diff import apply  # noqa: E402
from editspec.tokenization.tokens import encode, unreadable  # noqa: E402

SUBJECTS = ["I", "She", "He", "We", "They", "My friend", "The teacher", "Everyone", "People"]
VERBS = ["go", "goes", "went", "has", "have", "like", "likes", "want", "is", "are", "was", "were"]
OBJECTS = ["to school", "a book", "the city", "many peoples", "my homework", "an apple", "to the park",
           "informations", "a advice", "the the house", "football yesterday", "in london"]
TAILS = [".", " every days.", " yesterday", "!", "?", " because it is fun.", ", but it rained .", " ."]
ODD_SPACES = ["\t", "\u00a0", "\u2009", "\u202f", "\u3000", "  ", "\r", "\u200b", "\ufeff", "\u2060", " \t "]
CONTROLS = [chr(c) for c in [*range(0, 9), 11, 12, *range(14, 32), 127, *range(0x80, 0xa0)]]
BIDI = ["\u200e", "\u200f", "\u061c", *map(chr, range(0x202a, 0x202f)), *map(chr, range(0x2066, 0x206a))]
ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e"]
LINE_BREAKS = ["\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029"]
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷", "🇯🇵", "🏳️‍🌈", "1️⃣", "#️⃣", "🧑🏿‍🚀", "❤️", "🙂" * 5, "🏴󠁧󠁢󠁳󠁣󠁴󠁿"]
SCRIPTS = ["こんにちは世界", "Ελληνικά", "Русский язык", "العربية", "עברית", "हिन्दी", "中文字符", "한국어",
           "ไทย", "Tiếng Việt", "ﬁne ﬂow", "Ǆemal", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "ℌ𝔢𝔩𝔩𝔬", "x²³ ½ ⅓", "Straße"]
CODE = ["def f(x): return x**2", "if (a && b) { c++; }", "SELECT * FROM t WHERE id = 1;",
        "<div class=\"x\">Hi</div>", "$ ls -la | grep foo > out.txt", "x = [1, 2, 3][::-1]", "</s> <pad> <unk>",
        "<extra_id_0> <extra_id_99>", "{{ template }} ${var} %s %d \\n \\t"]
URLS = ["https://example.com/a/b?c=1&d=2#e", "www.test.org", "mailto:someone@example.com",
        "http://[::1]:8080/path", "ftp://files.example.net/x.tar.gz", "user@mail.example.com"]


def _sentence(rng: random.Random) -> str:
    words = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}{rng.choice(TAILS)}".split(" ")
    for _ in range(rng.randrange(3)):  # typos
        k = rng.randrange(len(words))
        w = words[k]
        if len(w) > 2:
            i = rng.randrange(len(w) - 1)
            words[k] = rng.choice([w[:i] + w[i + 1:], w[:i] + w[i + 1] + w[i] + w[i + 2:], w + w[-1], w.upper()])
    seps = [rng.choice(ODD_SPACES) if rng.random() < 0.15 else " " for _ in words[1:]]
    return words[0] + "".join(s + w for s, w in zip(seps, words[1:]))


def _code_point(rng: random.Random) -> str:
    plane = rng.choice([0, 0, 0, 1, 1, 2, 3, 14, 15, 16])
    while True:
        c = rng.randrange(plane << 16, (plane + 1) << 16)
        if not 0xD800 <= c < 0xE000:  # surrogates are not text
            return chr(c)


KINDS: dict[str, Callable[[random.Random], str]] = {
    "learner": lambda r: " ".join(_sentence(r) for _ in range(r.randrange(1, 4))),
    "planes": lambda r: "".join(_code_point(r) if r.random() < 0.5 else r.choice(" abc.") for _ in range(r.randrange(1, 40))),
    "controls": lambda r: r.choice(CONTROLS).join(_sentence(r).split(" ", 2)),
    "bidi": lambda r: r.choice(BIDI) + _sentence(r) + r.choice(BIDI) + r.choice(SCRIPTS) + r.choice(BIDI),
    "zero-width": lambda r: "".join(w + (r.choice(ZERO_WIDTH) if r.random() < 0.3 else " ") for w in _sentence(r).split(" ")),
    "line breaks": lambda r: r.choice(LINE_BREAKS).join(_sentence(r) for _ in range(r.randrange(2, 4))),
    "long tokens": lambda r: _sentence(r) + " " + r.choice("ab-_.0🙂") * r.randrange(50, 600) + " " + _sentence(r),
    "urls": lambda r: f"{_sentence(r)[:-1]} {r.choice(URLS)} {_sentence(r)}",
    "code": lambda r: f"{_sentence(r)} {r.choice(CODE)}",
    "emoji": lambda r: " ".join(r.choice(EMOJI) if r.random() < 0.3 else w for w in _sentence(r).split(" ")),
    "scripts": lambda r: f"{r.choice(SCRIPTS)} {_sentence(r)} {r.choice(SCRIPTS)}",
    "odd spacing": lambda r: r.choice(ODD_SPACES) + _sentence(r).replace(" ", r.choice(ODD_SPACES)) + r.choice(ODD_SPACES),
    "empty": lambda r: r.choice(["", " ", "\t", "\u00a0", ".", "\ufeff", "  \r  "]),
}


def generate(n: int, seed: int = 0) -> list[str]:
    """``n`` inputs, the kinds in turn (see the module docstring)."""
    rng = random.Random(seed)
    kinds = list(KINDS.values())
    return [kinds[k % len(kinds)](rng) for k in range(n)]


def breaks(text: str) -> list[int]:
    """How many of each line break (for str.splitlines) ``text`` holds."""
    return [text.count(c) for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"]


def lost(corrector: Corrector, text: str, output: str) -> bool:
    """Whether a character the model cannot read is missing from ``output``."""
    enc = encode(corrector.tokenizer, [text])[0]
    need = Counter(text[k] for k in unreadable(corrector.tokenizer, enc))
    have = Counter(output)
    return any(have[c] < k for c, k in need.items())


def correct_all(corrector: Corrector, texts: Sequence[str], block: int, crashed: set[int],
                offset: Sequence[int]) -> list[str | None]:
    """Outputs of ``texts`` corrected ``block`` at a time; a failing block is retried text by
    text, and the failing texts' indices (``offset``) go to ``crashed`` (their output None)."""
    out: list[str | None] = []
    for start in range(0, len(texts), block):
        part = texts[start:start + block]
        try:
            results = corrector.correct_detailed(part)
            for t, c in zip(part, results):
                if apply(t, c.edits) != c.output or c.input != t:
                    raise AssertionError("edits do not rebuild the output")
            out.extend(c.output for c in results)
        except Exception:  # noqa: BLE001 (the fuzz counts every failure)
            for k, t in enumerate(part):
                try:
                    c = corrector.correct_detailed([t])[0]
                    assert apply(t, c.edits) == c.output
                    out.append(c.output)
                except Exception:  # noqa: BLE001
                    crashed.add(offset[start + k])
                    out.append(None)
    return out


def fuzz(corrector: Corrector, texts: Sequence[str], seed: int = 0, alone: int = 200, block: int = 64,
         examples: int = 3) -> dict:
    """The five counts for one corrector (see the module docstring), with a few examples of each."""
    n = len(texts)
    crashed: set[int] = set()
    first = correct_all(corrector, texts, block, crashed, range(n))
    order = list(range(n))
    random.Random(seed).shuffle(order)
    batch_size = corrector.batch_size
    corrector.batch_size = max(1, batch_size // 2 + 1)  # other batches, other padding
    try:
        shuffled = correct_all(corrector, [texts[i] for i in order], 2 * block + 1, crashed, order)
    finally:
        corrector.batch_size = batch_size
    second = [None] * n
    for i, out in zip(order, shuffled):
        second[i] = out
    sample = list(range(min(alone, n)))
    one = correct_all(corrector, [texts[i] for i in sample], 1, crashed, sample)
    again = correct_all(corrector, [texts[i] for i in sample], block, crashed, sample)
    found: dict[str, list[int]] = {"crashes": sorted(crashed), "lines changed": [], "lost characters": [],
                                   "batch dependence": [], "nondeterminism": []}
    for i, (text, out) in enumerate(zip(texts, first)):
        if out is None:
            continue
        if breaks(out) != breaks(text):
            found["lines changed"].append(i)
        if lost(corrector, text, out):
            found["lost characters"].append(i)
        if second[i] is not None and second[i] != out:
            found["batch dependence"].append(i)
    for i, a, b in zip(sample, one, again):
        if a is not None and first[i] is not None and a != first[i] and i not in found["batch dependence"]:
            found["batch dependence"].append(i)
        if b is not None and first[i] is not None and b != first[i]:
            found["nondeterminism"].append(i)
    return {"inputs": n, "alone": len(sample),
            "counts": {k: len(v) for k, v in found.items()},
            "examples": {k: [{"input": texts[i], "output": first[i], "other": second[i]} for i in v[:examples]]
                         for k, v in found.items() if v}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10000, help="generated inputs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model", default=None, help="bundle directory (default: the shipped models)")
    p.add_argument("--modes", nargs="+", default=["edit5", "t5", "speculative"])
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--alone", type=int, default=200, help="inputs also corrected one by one and again")
    p.add_argument("--device", default="cpu")
    p.add_argument("--json", default=None, help="write the report here")
    args = p.parse_args(argv)
    texts = generate(args.n, args.seed)
    report = {"n": args.n, "seed": args.seed, "model": args.model or "shipped", "modes": {}}
    for mode in args.modes:
        started = time.time()
        corrector = Corrector.from_pretrained(args.model, mode=mode, device=args.device, batch_size=args.batch_size)
        result = fuzz(corrector, texts, args.seed, args.alone)
        result["seconds"] = round(time.time() - started, 1)
        report["modes"][mode] = result
        print(f"{mode}: {json.dumps(result['counts'])} ({args.n} inputs, {result['alone']} also alone; "
              f"{result['seconds']} s)", flush=True)
        for kind, cases in result["examples"].items():
            for case in cases:
                print(f"  {kind}: {case['input']!r} -> {case['output']!r} (other: {case['other']!r})")
    if args.json:
        Path(args.json).write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return int(any(sum(r["counts"].values()) for r in report["modes"].values()))


if __name__ == "__main__":
    sys.exit(main())
