"""Request batching: the texts of concurrent requests corrected together, on one worker thread.

    t = 0.0 ms   request A ["She go home."] arrives: the worker wakes, waits up to ``max_wait``
    t = 0.4 ms   request B ["I has a cat.", "Hi."] arrives: 3 texts queued
    t = 2.0 ms   the wait is over (or ``max_texts`` texts are queued, whichever is first):
                 correct(["She go home.", "I has a cat.", "Hi."]) runs on the worker thread
    then         A gets result 0, B gets results 1 and 2; what queued meanwhile is the next batch

Under load the requests that arrive while a batch runs form the next batch, so the wait matters
only when the server is idle. A batch holds at most ``max_texts`` texts, except that one request
is never split. The model (``Corrector``) is not thread-safe and sees one batch at a time. The
result of a text does not depend on its batch: ``Corrector`` corrects each sentence on its own.

Nothing in one request fails another: a batch that raises is run again request by request, and
only the request whose texts raise gets the error. A request whose future is cancelled (its
client left, or the server is shutting down) before its batch starts is skipped.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence


@dataclass
class _Request:
    texts: list[str]
    future: asyncio.Future = field(repr=False)


class Batcher:
    """Runs ``correct(texts) -> results`` (one result per text) on batches of queued requests."""

    def __init__(self, correct: Callable[[list[str]], Sequence[Any]], max_texts: int = 32,
                 max_wait: float = 0.002):
        if max_texts < 1:
            raise ValueError("max_texts must be at least 1")
        self.correct, self.max_texts, self.max_wait = correct, max_texts, max_wait
        self._queue: list[_Request] = []
        self._jobs: queue.Queue = queue.Queue()
        self._worker = threading.Thread(target=self._work, name="editspec-model", daemon=True)
        self._task: asyncio.Task | None = None
        self._closing = False
        self.batches = 0  # batches run, and the texts in them (for /health and the tests)
        self.texts = 0
        self.dropped = 0  # requests skipped because their future was cancelled before their batch

    async def start(self) -> None:
        self._ready, self._full = asyncio.Event(), asyncio.Event()
        self._worker.start()
        self._task = asyncio.create_task(self._run())

    async def stop(self, abandon: bool = False) -> None:
        """Finish what is queued, then stop; ``abandon``: stop at once, leaving a batch that runs
        to the worker thread (a daemon: it does not hold the process's exit), for when every
        request has been answered already (a shutdown's 503s)."""
        self._closing = True
        self._ready.set()
        self._full.set()  # cut a batching wait short
        if self._task is not None:
            if abandon:
                self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        self._jobs.put(None)

    def _work(self) -> None:
        """The model thread: runs each job in turn and hands its result back to the loop."""
        while (job := self._jobs.get()) is not None:
            loop, future, texts = job
            try:
                result, error = self.correct(texts), None
            except Exception as e:
                result, error = None, e
            loop.call_soon_threadsafe(_settle, future, result, error)

    async def submit(self, texts: list[str]) -> list:
        """The results of ``texts``, once the batch they join has run."""
        if self._task is None or self._closing:
            raise RuntimeError("the batcher is not running")
        if not texts:
            return []
        request = _Request(list(texts), asyncio.get_running_loop().create_future())
        self._queue.append(request)
        self._ready.set()
        if self._queued() >= self.max_texts:
            self._full.set()
        return await request.future

    def _queued(self) -> int:
        return sum(len(r.texts) for r in self._queue)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._ready.wait()
            if not self._queue:
                if self._closing:
                    return
                self._ready.clear()
                continue
            if self.max_wait > 0 and not self._closing and self._queued() < self.max_texts:
                try:
                    await asyncio.wait_for(self._full.wait(), self.max_wait)
                except asyncio.TimeoutError:
                    pass
            batch, count = [], 0
            while self._queue and (not batch or count + len(self._queue[0].texts) <= self.max_texts):
                request = self._queue.pop(0)
                batch.append(request)
                count += len(request.texts)
            if self._queued() < self.max_texts:
                self._full.clear()
            live = [r for r in batch if not r.future.done()]  # a client that left: skip its texts
            self.dropped += len(batch) - len(live)
            batch = live
            if not batch:
                continue
            await self._run_batch(loop, batch)

    async def _run_batch(self, loop: asyncio.AbstractEventLoop, batch: list[_Request]) -> None:
        """Run ``batch``; if it fails, run each request alone, so that a text that fails the model
        fails only its own request (each request gets its own results or its own error)."""
        texts = [t for r in batch for t in r.texts]
        try:
            future = loop.create_future()
            self._jobs.put((loop, future, texts))
            results = await future
        except Exception as e:
            if len(batch) == 1:
                if not batch[0].future.done():
                    batch[0].future.set_exception(e)
                return
            for r in batch:
                if not r.future.done():
                    await self._run_batch(loop, [r])
            return
        self.batches += 1
        self.texts += len(texts)
        at = 0
        for r in batch:
            if not r.future.done():
                r.future.set_result(list(results[at:at + len(r.texts)]))
            at += len(r.texts)


def _settle(future: asyncio.Future, result: Any, error: Exception | None) -> None:
    if future.done():  # the batcher was cancelled meanwhile
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
