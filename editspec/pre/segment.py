"""Lines -> the units a model corrects (sentences, chunked to the model's length), and back.

A user's line may hold a paragraph; the models were trained on sentences of at most a fixed
number of tokens. ``segment`` returns character spans of the units to correct; everything
between and around them (the spacing between sentences, leading and trailing whitespace) is
never given to a model and is copied back verbatim by ``rejoin``. Worked example::

    line    '  He go home.  She say "Hi!" to me.Then   we eat 3.5 apple. '
    spans   (2, 13)  'He go home.'
            (15, 35) 'She say "Hi!" to me.'
            (35, 59) 'Then   we eat 3.5 apple.'
    gaps    '  ' | '  ' | '' | ' '          (before, between and after the spans)

    rejoin(line, spans, ['He goes home.', 'She says "Hi!" to me.', 'Then we eat 3.5 apples.'])
        == '  He goes home.  She says "Hi!" to me.Then we eat 3.5 apples. '

Sentences: spaCy's rule-based ``sentencizer`` on a blank English pipeline. Its tokenizer keeps
abbreviations (``Mr.``, ``e.g.``, ``U.S.``) and decimals (``3.5``) whole, so they end no
sentence, and closing quotes and brackets stay with the sentence they close. One rule is added:
a "sentence" that starts with a lowercase letter, a digit or ``, ; : ) ] } %`` continues the
previous one (``"Stop!" and left``, ``No. 1``, ``etc.) and``); a lowercase ``i`` pronoun still
starts a sentence, as learners write it. Joining too much is harmless (the model sees a longer
input, as in training data lines with two sentences); splitting too much hands it fragments.

Why spaCy (measured on 1,000 five-sentence Wikipedia paragraphs and 877 five-line W&I dev
paragraphs, paragraph split exactly right, one CPU thread; /tmp scratch benchmark):

    splitter                     Wikipedia   W&I dev   speed
    spaCy sentencizer              0.957      0.749    0.5-0.8 M chars/s
      + continuation rule (here)   0.981      0.734
    pysbd 0.3.4                    0.977      0.739    0.09 M chars/s
    sentencex 1.0.32               0.981      0.746    40 M chars/s

(W&I lines are the annotators' units and often hold several sentences, so its gold is loose.)
All are far faster than any model (a CPU model corrects a few thousand chars/s), so speed does
not decide. spaCy is already a dependency (ERRANT needs it) and maintained; pysbd is 5-10x
slower and unreleased since 2021; sentencex would be a new dependency for the same accuracy.
The pipeline runs without importing spaCy (``editspec.pre.sentencizer``: its tokenizer's steps
over its rules, the same sentences): spaCy's import cost ~0.7 s of every process.

Chunks: a sentence longer than ``max_tokens`` (model ids, EOS excluded) is cut at the last
clause punctuation followed by whitespace in the second half of the window, else at the last
whitespace, else (a long run without spaces) between two tokens. Nothing is truncated; each
chunk is re-encoded and cut again if its own tokenization is still too long. (One character
can still exceed a tiny limit on its own; see ``chunks``.)
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, NamedTuple, Sequence

from editspec.pre import sentencizer
from editspec.tokenization.tokens import encode

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

Span = tuple[int, int]

# A sentence starting like this continues the previous one (see the module docstring).
_CONTINUES = re.compile(r"(?!i[\s'’])[a-z0-9,;:)\]}%]")
_CLAUSE_END = (",", ";", ":", ")", "]", "}", ".", "!", "?", '"', "”", "’")
# the tokenizer's cost grows with the text: very long lines are windowed first.
_WINDOW = 100_000


@functools.lru_cache(maxsize=1)
def _sentencizer() -> sentencizer.Sentencizer:
    return sentencizer.load()


def _strip(text: str, a: int, b: int) -> Span | None:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return (a, b) if a < b else None


def _windows(line: str) -> list[Span]:
    """Cut a huge line at whitespace into pieces the sentencizer takes in one go."""
    out, a = [], 0
    while len(line) - a > _WINDOW:
        b = a + _WINDOW
        cut = max(line.rfind(" ", a + _WINDOW // 2, b), line.rfind("\t", a + _WINDOW // 2, b))
        b = cut if cut > a else b
        out.append((a, b))
        a = b
    out.append((a, len(line)))
    return out


def sentences(line: str) -> list[Span]:
    """Character spans of the sentences of ``line``, surrounding whitespace excluded.
    A newline inside ``line`` always ends a sentence."""
    if not line.strip():
        return []
    nlp = _sentencizer()
    spans: list[Span] = []
    for part in re.finditer(r"[^\n]+", line):
        base = part.start()
        for w0, w1 in _windows(part.group()):
            w0, w1 = base + w0, base + w1
            for a, b in nlp.sentences(line[w0:w1]):
                span = _strip(line, w0 + a, w0 + b)
                if span is None:
                    continue
                if spans and spans[-1][1] > w0 and _CONTINUES.match(line, span[0]):
                    spans[-1] = (spans[-1][0], span[1])
                else:
                    spans.append(span)
    return spans


def _cut(enc, max_tokens: int) -> list[Span]:
    """Greedy cuts of an over-long encoding into spans of at most ``max_tokens`` tokens.

    A cut before token j falls where token j-1's characters end: what lies between two tokens
    (whitespace, or characters the normaliser dropped) starts the next span, so no character is
    left out of every span; ``_strip`` then moves the whitespace into the gap.
    """
    ends, cursor = [], 0
    for space, chars in zip(enc.spaces, enc.chars):
        cursor += len(space) + len(chars)
        ends.append(cursor)
    n, i, cuts = len(ends), 0, [0]
    while n - i > max_tokens:
        window = range(i + 1, i + max_tokens + 1)  # cut before token j
        # never cut right after a bare "▁" (it has no characters of its own), nor before a token
        # without characters or space (the rest of a character NFKC expanded: ¼ -> 1 ⁄ 4)
        ok = [j for j in window if enc.chars[j - 1] and (enc.chars[j] or enc.spaces[j])]
        spaced = [j for j in ok if any(ch.isspace() for ch in enc.spaces[j])]
        clause = [j for j in spaced if j - i > max_tokens // 2 and enc.chars[j - 1].endswith(_CLAUSE_END)]
        # else before any token that begins a character: between two expanded ligatures (ﬀﬀ)
        starts = [j for j in window if enc.chars[j]]
        i = (clause or spaced or ok or starts or [i + max_tokens])[-1]
        cuts.append(ends[i - 1])
    cuts.append(len(enc.text))
    spans = (_strip(enc.text, a, b) for a, b in zip(cuts, cuts[1:]))
    return [span for span in spans if span is not None]


def chunks(tok: PreTrainedTokenizerBase, text: str, max_tokens: int, memo: dict | None = None) -> list[Span]:
    """Spans of ``text`` (stripped) that each encode to at most ``max_tokens`` ids, except a
    single character that alone encodes to more (NFKC expands ``ﷺ`` to 4 words); the
    ``Corrector`` leaves such a span as it is."""
    if max_tokens < 2:
        raise ValueError("max_tokens must be at least 2 (a lone character can take '▁' + itself)")
    whole = _strip(text, 0, len(text))
    if whole is None:
        return []
    enc = encode(tok, [text[whole[0]:whole[1]]], memo)[0]
    if len(enc.ids) <= max_tokens:
        return [whole]
    pieces = _cut(enc, max_tokens)
    if pieces == [(0, len(enc.text))]:  # one character that normalises to many tokens (ﷺ)
        return [whole]
    out: list[Span] = []
    for a, b in pieces:
        # a piece may tokenize differently alone (a word's first piece gains "▁"): check it
        out.extend((whole[0] + a + x, whole[0] + a + y) for x, y in chunks(tok, enc.text[a:b], max_tokens, memo))
    return out


def segment(line: str, limits: Sequence[tuple[PreTrainedTokenizerBase, int]] = ()) -> list[Span]:
    """Spans of ``line`` to correct: its sentences, chunked so that each fits every
    (tokenizer, max_tokens) limit (two models with different vocabularies: both)."""
    return segment_lines([line], limits)[0]


def segment_lines(lines: Sequence[str], limits: Sequence[tuple[PreTrainedTokenizerBase, int]] = (),
                  memo: dict | None = None) -> list[list[Span]]:
    """``segment`` for many lines, with one batched tokenizer call per limit and round (``memo``:
    encodings kept for the caller, as ``tokens.encode`` keeps them; a text is encoded once)."""
    spans = [sentences(line) for line in lines]
    for _ in range(3):  # a chunk cut for one tokenizer is rechecked for the others
        changed = False
        for tok, max_tokens in limits:
            flat = [(k, a, b) for k, line_spans in enumerate(spans) for a, b in line_spans]
            encs = encode(tok, [lines[k][a:b] for k, a, b in flat], memo)
            out: list[list[Span]] = [[] for _ in lines]
            for (k, a, b), enc in zip(flat, encs):
                if len(enc.ids) <= max_tokens:
                    out[k].append((a, b))
                else:
                    pieces = chunks(tok, lines[k][a:b], max_tokens, memo)
                    out[k].extend((a + x, a + y) for x, y in pieces)
                    changed |= pieces != [(0, b - a)]
            spans = out
        if not changed or len(limits) < 2:
            break
    return spans


def unit_texts(lines: Sequence[str], spans: Sequence[Sequence[Span]]) -> list[str]:
    """The text of every span of every line (``segment_lines``' spans), in order."""
    return [line[a:b] for line, line_spans in zip(lines, spans) for a, b in line_spans]


class Place(NamedTuple):
    """Where a unit sits in its line: only a unit that begins a line can start a sentence in lower
    case (a later "sentence" in lower case joins the one before, and a later unit in lower case is
    the rest of a chunked sentence), and only one that ends a line can end it without a stop
    (``editspec.pre.spelling`` capitalises the one and ends the other)."""

    starts_line: bool  # its line's first unit, or the first after a line break
    ends_line: bool  # its line's last unit, or the last before a line break


def places(lines: Sequence[str], spans: Sequence[Sequence[Span]]) -> list[Place]:
    """The ``Place`` of each unit, in ``unit_texts`` order."""
    return [Place(k == 0 or "\n" in line[line_spans[k - 1][1]:a],
                  k == len(line_spans) - 1 or "\n" in line[b:line_spans[k + 1][0]])
            for line, line_spans in zip(lines, spans) for k, (a, b) in enumerate(line_spans)]


def rejoin_lines(lines: Sequence[str], spans: Sequence[Sequence[Span]], outputs: Sequence[str]) -> list[str]:
    """``rejoin`` for many lines: ``outputs`` holds one text per span, in ``unit_texts`` order."""
    it = iter(outputs)
    return [rejoin(line, line_spans, [next(it) for _ in line_spans]) for line, line_spans in zip(lines, spans)]


def rejoin(line: str, spans: Sequence[Span], outputs: Sequence[str]) -> str:
    """``line`` with each span replaced by its output; the text between spans is kept."""
    parts, cursor = [], 0
    for (a, b), out in zip(spans, outputs, strict=True):
        parts.append(line[cursor:a])
        parts.append(out)
        cursor = b
    parts.append(line[cursor:])
    return "".join(parts)
