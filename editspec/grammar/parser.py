"""The grammar step's parse: spaCy's dependency parse of each text and the rules' candidates on it
(``rules.candidates``), returned as data: per text, the sentences that hold a candidate and each
candidate with its sentence's index and its sentence with the candidate made (``Found``), what
the language model reads (``GrammarStep.judged``).

    parser = start()                           # the process's parser: a process of its own
    parser.found(["She have two book."])     # -> [(["She have two book."],
                                               #      [(Candidate(4, 8, "has", "sva", ...), 0,
                                               #        "She has two book."), ...])]

Two parsers give the same data: ``Child``, spaCy in a process of its own (the corrector's), and
``InProcess`` (tuning reads the docs themselves; the tests compare the two).

Why a process of its own: spaCy costs a process that has imported torch 2.1 s to import and
load (issue 77, AMD EPYC, 2 cores): its import alone 1.4 s (thinc, confection, ``spacy.cli``), the
pipeline's load the rest, all before the first line's grammar step. A child started before the
parent imports torch (``editspec correct`` starts it first, ``start``) loads on the core the
parent's one-threaded start-up leaves idle: 2.6 s there, with torch kept out of it (thinc imports
torch where it can; en_core_web_sm runs on numpy). Hand-written: ``multiprocessing``'s spawn
imports the caller's main module again in the child (a user's script without a ``__main__``
guard would run itself again); a plain ``python -m`` child reading pickled requests from a
pipe has no such trap.
"""

from __future__ import annotations

import atexit
import os
import pickle
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Sequence

from editspec.errors import EditspecError
from editspec.grammar import Candidate

# a text's sentences that hold a candidate, and each candidate with its sentence's index there and
# that sentence with the candidate made
Found = tuple[list[str], list[tuple[Candidate, int, str]]]


def found(doc, patterns: set[str] | None = None) -> Found:
    """What the language model reads of a parsed text (``Found``)."""
    from editspec.grammar.rules import candidates

    bases: list[str] = []
    where: dict[int, int] = {}  # a sentence's first token -> its index in bases
    out = []
    text = doc.text
    for c in candidates(doc, patterns):
        sent = doc.char_span(c.start, c.end, alignment_mode="expand") if c.end > c.start else \
            doc.char_span(c.start, c.start + 1, alignment_mode="expand")
        s = sent.sent if sent is not None else doc[:]
        if s.start not in where:
            where[s.start] = len(bases)
            bases.append(s.text)
        out.append((c, where[s.start], text[s.start_char:c.start] + c.replacement + text[c.end:s.end_char]))
    return bases, out


class InProcess:
    """spaCy in this process (``nlp``; default ERRANT's pipeline without its entity recognizer)."""

    def __init__(self, nlp=None):
        from editspec.data.tokenized import spacy_nlp
        from editspec.grammar.rules import lazy_lemmas

        self.nlp = nlp if nlp is not None else spacy_nlp()
        lazy_lemmas(self.nlp)

    def parse(self, texts: Sequence[str]):
        """The texts' docs, lazily. No lemmatizer: the rules lemmatize the few tokens they read
        (``rules.lazy_lemmas``)."""
        return self.nlp.pipe(texts, disable=["lemmatizer"], batch_size=64)

    def found(self, texts: Sequence[str], patterns: set[str] | None = None) -> list[Found]:
        return [found(doc, patterns) for doc in self.parse(texts)]


class Child:
    """spaCy in a process of its own (``main``), asked one request at a time (threads take turns).

    A child that died (killed, out of memory) fails the request it was asked with a one-line
    ``EditspecError`` and is started again for the next: a server stays up. After a fork, the
    forked process starts its own (the pipes are its parent's)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._owner = 0
        self._spawn()
        atexit.register(self.close)

    def _spawn(self) -> None:
        env = dict(os.environ)  # the child imports this editspec, wherever the parent found it
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self._proc = subprocess.Popen([sys.executable, "-m", "editspec.grammar.parser"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, env=env)
        self._owner = os.getpid()

    def found(self, texts: Sequence[str], patterns: set[str] | None = None) -> list[Found]:
        with self._lock:
            if self._proc is None or self._owner != os.getpid():
                self._spawn()
            proc = self._proc
            try:
                try:
                    pickle.dump((list(texts), patterns), proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
                    proc.stdin.flush()
                except BrokenPipeError:  # it has exited: what it said before, if anything, is read below
                    pass
                status, value = pickle.load(proc.stdout)
            except (EOFError, OSError, pickle.UnpicklingError):
                self._proc = None
                code = proc.wait()
                raise EditspecError(f"the grammar step's parser process exited (code {code}) before it answered; "
                                    "it starts again at the next call (or run with --no-grammar)") from None
        if status != "ok":
            raise EditspecError(f"the grammar step's parser: {value}")
        return value

    def close(self) -> None:
        """Ends the child (at exit, still loading perhaps: it is not waited for)."""
        proc, self._proc = self._proc, None
        if proc is not None and self._owner == os.getpid():
            for stream in (proc.stdin, proc.stdout):
                stream.close()
            if proc.poll() is None:
                proc.terminate()
            proc.wait()


_started: Child | None = None


def start() -> Child:
    """The process's parser, started at the first call (a corrector's, or ``editspec correct``'s
    before torch loads): its correctors share it."""
    global _started
    if _started is None:
        _started = Child()
    return _started


def release() -> None:
    """Ends the process's parser where one was started on a guess that the grammar step would run
    (``editspec correct`` before its corrector's settings were read)."""
    global _started
    if _started is not None:
        _started.close()
        _started = None


def main() -> None:
    """The child: loads spaCy, then answers each request, ``(texts, patterns)``, with ``("ok",
    [Found, ...])`` or ``("error", message)``, until its input ends (the parent closed it or left)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: its exit ends this
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a library's print cannot break the answers
    sys.modules["torch"] = None  # thinc imports torch where it can: 2.1 s more here, and nothing uses it
    requests = sys.stdin.buffer
    try:
        parser: InProcess | None = InProcess()
        failed = ""
    except Exception as e:  # noqa: BLE001 (said at each request: the parent raises it as one line)
        parser, failed = None, f"spaCy did not load: {type(e).__name__}: {e}"
    while True:
        try:
            texts, patterns = pickle.load(requests)
        except (EOFError, OSError):
            return
        try:
            if parser is None:
                raise EditspecError(failed)
            answer = ("ok", parser.found(texts, patterns))
        except Exception as e:  # noqa: BLE001
            answer = ("error", str(e) if isinstance(e, EditspecError) else f"{type(e).__name__}: {e}")
        pickle.dump(answer, answers, protocol=pickle.HIGHEST_PROTOCOL)
        answers.flush()


if __name__ == "__main__":
    main()
