"""Sentences as spaCy's blank English pipeline and its rule-based ``sentencizer`` find them, without
importing spaCy.

``editspec.pre.segment`` splits a line into sentences with ``spacy.blank("en")`` and the
``sentencizer``. Importing spaCy and building that pipeline cost ~0.7 s of every process, more
than half of what correcting one line may take, so this module runs the same two steps itself:

    tokens     spaCy's tokenizer (spacy/tokenizer.pyx), step for step: whitespace runs (one plain
               space after a token is its trailing space), whole-span special cases, prefixes and
               suffixes (``_split_affixes``), special cases, URLs and infixes of what is left
               (``_attach_tokens``), then the special-case matcher (``_apply_special_cases``)
    sentences  the sentencizer's rule: a sentence starts at the first token after one that is a
               sentence-final mark (``punct_chars``) which is neither punctuation nor such a mark

over spaCy's own English rules (its prefix, suffix, infix and URL patterns and its 1,347 special
cases), exported once per machine from the installed spaCy into ``editspec.cache``
(``sentencizer/en-<spaCy version>.json``; that first process imports spaCy). A span's pieces are
kept, as spaCy's tokenizer keeps them (the same steps give them again). ``tests/pre/test_sentencizer.py``
and ``python -m eval.check_sentences --m2 FILE`` compare the sentences with spaCy's (random text,
and every line of W&I, FCE, JFLEG and CoNLL: the same spans).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import unicodedata
from importlib.metadata import version
from pathlib import Path

from editspec.cache import cache_dir

Token = tuple[int, str]  # (character offset, text)
CACHE = 100_000  # spans whose pieces are kept (spaCy keeps 10,000)
RUNS = re.compile(r"\s+|\S+")  # \s is str.isspace (both Py_UNICODE_ISSPACE), as the tokenizer splits


def export() -> dict:
    """spaCy's English tokenizer rules and sentencizer marks, from the installed spaCy."""
    import spacy  # deliberately lazy: once per machine, to export its rules
    from spacy.attrs import ORTH
    from spacy.pipeline import Sentencizer as SpacySentencizer

    tokenizer = spacy.blank("en").tokenizer

    def pattern(search) -> list | None:
        return None if search is None else [search.__self__.pattern, search.__self__.flags]

    rules = {key: [token[ORTH] for token in tokens] for key, tokens in tokenizer.rules.items()}
    data = {"spacy": spacy.__version__, "prefix": pattern(tokenizer.prefix_search),
            "suffix": pattern(tokenizer.suffix_search), "infix": pattern(tokenizer.infix_finditer),
            "token_match": pattern(tokenizer.token_match), "url_match": pattern(tokenizer.url_match),
            "faster_heuristics": tokenizer.faster_heuristics, "rules": rules,
            "punct_chars": list(SpacySentencizer.default_punct_chars)}
    # the matcher's patterns: each rule the affixes would split, as the tokenizer splits it without
    # special cases (``add_special_case``)
    plain = Sentencizer(data, matcher=False)
    data["matcher"] = {key: [t for _, t in plain.tokens(key, specials=False)] for key in sorted(rules)
                       if not data["faster_heuristics"] or plain.splits(key)}
    return data


class Sentencizer:
    """spaCy's English tokenizer and sentencizer over exported rules (see the module docstring)."""

    def __init__(self, data: dict, matcher: bool = True):
        def compiled(kind: str):
            return None if data[kind] is None else re.compile(data[kind][0], data[kind][1])

        self.prefix, self.suffix, self.infix = compiled("prefix"), compiled("suffix"), compiled("infix")
        self.token_match, self.url_match = compiled("token_match"), compiled("url_match")
        self.specials: dict[str, list[str]] = data["rules"]
        self.punct_chars = set(data["punct_chars"])
        self.cache: dict[str, list[str]] = {}  # a whitespace-free span -> its pieces, as spaCy keeps them
        self.patterns: dict[str, list[tuple[str, ...]]] = {}  # first token -> the matcher's patterns
        for key, pattern in (data.get("matcher") or {}).items() if matcher else ():
            self.patterns.setdefault(pattern[0], []).append(tuple(pattern))

    # -- the tokenizer --

    def splits(self, string: str) -> bool:
        """Whether the affix rules split ``string`` (or it holds a space): a special case then
        goes to the matcher (``faster_heuristics``)."""
        return bool(self._prefix_len(string) or self.infix.search(string) or self._suffix_len(string) or " " in string)

    def _prefix_len(self, string: str) -> int:
        match = self.prefix.search(string) if self.prefix else None
        return match.end() - match.start() if match else 0

    def _suffix_len(self, string: str) -> int:
        match = self.suffix.search(string) if self.suffix else None
        return match.end() - match.start() if match else 0

    def tokens(self, string: str, specials: bool = True) -> list[Token]:
        """The tokens of ``string``, whitespace tokens included (``Tokenizer.__call__``)."""
        out: list[Token] = []
        for run in RUNS.finditer(string):  # whitespace runs and the spans between them
            a, b = run.span()
            if a and string[a] == " ":  # one space after a token is its own
                a += 1
            if a < b:
                self._span(string, a, b, out, specials)
        return self._special_cases(string, out) if specials and self.patterns else out

    def _span(self, string: str, a: int, b: int, out: list[Token], specials: bool) -> None:
        span = string[a:b]
        if specials and span in self.specials:
            pieces = self.specials[span]
        elif specials and span in self.cache:
            pieces = self.cache[span]
        else:
            prefixes, core, suffixes = self._split_affixes(span, specials)
            pieces = prefixes + self._attach(core, specials) + suffixes[::-1]
            if specials and len(self.cache) < CACHE:
                self.cache[span] = pieces
        for piece in pieces:
            out.append((a, piece))
            a += len(piece)

    def _split_affixes(self, string: str, specials: bool) -> tuple[list[str], str, list[str]]:
        prefixes: list[str] = []
        suffixes: list[str] = []
        last_size = 0
        while string and len(string) != last_size:
            if self.token_match and self.token_match.match(string):
                break
            if specials and string in self.specials:
                break
            last_size = len(string)
            pre_len = self._prefix_len(string)
            if pre_len:
                prefix, minus_pre = string[:pre_len], string[pre_len:]
                if minus_pre and specials and minus_pre in self.specials:
                    prefixes.append(prefix)
                    string = minus_pre
                    break
            suf_len = self._suffix_len(string[pre_len:])
            if suf_len:
                suffix, minus_suf = string[-suf_len:], string[:-suf_len]
                if minus_suf and specials and minus_suf in self.specials:
                    suffixes.append(suffix)
                    string = minus_suf
                    break
            if pre_len and suf_len and pre_len + suf_len <= len(string):
                string = string[pre_len:-suf_len]
                prefixes.append(prefix)
                suffixes.append(suffix)
            elif pre_len:
                string = minus_pre
                prefixes.append(prefix)
            elif suf_len:
                string = minus_suf
                suffixes.append(suffix)
        return prefixes, string, suffixes

    def _attach(self, string: str, specials: bool) -> list[str]:
        if not string:
            return []
        if specials and string in self.specials:
            return list(self.specials[string])
        if (self.token_match and self.token_match.match(string)) or (self.url_match and self.url_match.match(string)):
            return [string]
        matches = list(self.infix.finditer(string)) if self.infix else []
        if not matches:
            return [string]
        pieces, start = [], 0
        for match in matches:
            a, b = match.start(), match.end()
            if a == 0:  # an infix at the very start is no infix
                continue
            if a != start:
                pieces.append(string[start:a])
            if a != b:
                pieces.append(string[a:b])
            start = b
        if string[start:]:
            pieces.append(string[start:])
        return pieces

    def _special_cases(self, string: str, tokens: list[Token]) -> list[Token]:
        """The special-case matcher: token runs that spell a special case the affixes split
        become its tokens (the longest first, none overlapping at an end)."""
        texts = [t for _, t in tokens]
        found = [(i, i + len(p)) for i, text in enumerate(texts) for p in self.patterns.get(text, ())
                 if tuple(texts[i:i + len(p)]) == p]
        if not found:
            return tokens
        seen: set[int] = set()
        kept = []
        for a, b in sorted(found, key=lambda s: (-(s[1] - s[0]), s[0])):
            if a not in seen and b - 1 not in seen:
                kept.append((a, b))
            seen.update(range(a, b))
        out, i = [], 0
        for a, b in sorted(kept):
            out += tokens[i:a]
            start = tokens[a][0]
            text = string[start:tokens[b - 1][0] + len(tokens[b - 1][1])]
            if text in self.specials:
                for piece in self.specials[text]:
                    out.append((start, piece))
                    start += len(piece)
            else:
                out += tokens[a:b]
            i = b
        return out + tokens[i:]

    # -- the sentencizer --

    def sentences(self, text: str) -> list[tuple[int, int]]:
        """(start, end) character spans of the sentences of ``text``, as ``doc.sents`` gives them."""
        tokens = self.tokens(text)
        if not tokens:
            return []
        starts, start, seen_period = [], 0, False
        for i, (_, token) in enumerate(tokens):
            mark = token in self.punct_chars
            if seen_period and not mark and not _is_punct(token):
                starts.append(start)
                start, seen_period = i, False
            elif mark:
                seen_period = True
        starts.append(start)
        ends = starts[1:] + [len(tokens)]
        return [(tokens[a][0], tokens[b - 1][0] + len(tokens[b - 1][1])) for a, b in zip(starts, ends)]


def _is_punct(text: str) -> bool:
    """spaCy's ``is_punct``: every character a Unicode punctuation mark (an empty text too)."""
    return all(unicodedata.category(c).startswith("P") for c in text)


def load() -> Sentencizer:
    """The sentencizer of the installed spaCy's rules: from the cache, else exported there first
    (an unwritable cache only costs the export)."""
    path = cache_dir("sentencizer", f"en-{version('spacy')}.json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("spacy") == version("spacy") and "matcher" in data:
            return Sentencizer(data)
    except (OSError, ValueError, KeyError, TypeError, re.error):
        pass
    data = export()
    part = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".part", delete=False, encoding="utf-8") as f:
            part = Path(f.name)
            json.dump(data, f)
        os.replace(part, path)
    except OSError:
        if part is not None:
            with contextlib.suppress(OSError):
                part.unlink()
    return Sentencizer(data)
