"""Concurrent requests decoded together: a queue gathers the requests that arrive within a short window
(`batch_window_ms` after the first) and one worker thread runs them as one batch.

Models with the tool-loop engine (HFModel: base, + adapter, merged) go through `ToolLoopEngine.events`:
all rows decode in one batch and each request receives its own events (text pieces, server-side calls
and results, done) as they happen, which is what streaming sends on. A turn that calls a client's tool
ends the row with the calls unexecuted (`engine.hand_back`); a turn that calls only the server's own
tools is executed by the engine and decoding goes on. Rule models (symbolic, router) answer the whole
batch with one `predict`.

The engine runs in one thread (torch is not re-entrant per model); requests arriving while a batch
runs wait for the next batch.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from dataclasses import dataclass, replace
from typing import Any

from toolcore.suites import Case

from .protocol import Request


@dataclass
class Job:
    request: Request
    max_tokens: int
    events: asyncio.Queue
    loop: asyncio.AbstractEventLoop

    def put(self, item: tuple[str, Any]) -> None:
        """Hand an item to the request's coroutine (from the worker thread)."""
        self.loop.call_soon_threadsafe(self.events.put_nowait, item)

    def sampling(self) -> tuple:
        r = self.request
        return (self.max_tokens, r.temperature or 0.0, r.top_p or 1.0, r.seed or 0)


class Batcher:
    def __init__(self, model: Any, *, window_ms: float = 10.0, max_batch: int = 32):
        self.model = model
        self.engine = getattr(model, "engine", None)
        self.base_cfg = self.engine.cfg if self.engine is not None else None
        if self.engine is not None:
            # a turn whose calls are not all the server's own tools goes back to the client unexecuted
            self.engine.hand_back = lambda conv, calls: not all(c.name in conv.meta.get("server_tools", ())
                                                                 for c in calls)
        self.window_s, self.max_batch = window_ms / 1000, max_batch
        self.queue: queue.Queue[Job | None] = queue.Queue()
        self.batches: list[int] = []          # sizes of the batches run (the load test reports them)
        self.last_batch_s = 1.0               # how long the last batch took (a busy server's Retry-After)
        self.thread = threading.Thread(target=self._loop, name="batcher", daemon=True)
        self.thread.start()

    def submit(self, job: Job) -> None:
        self.queue.put(job)

    def waiting(self) -> int:
        """Requests not yet taken into a batch."""
        return self.queue.qsize()

    def close(self) -> None:
        self.queue.put(None)

    def _loop(self) -> None:
        while True:
            first = self.queue.get()
            if first is None:
                return
            batch = [first]
            deadline = time.monotonic() + self.window_s
            while len(batch) < self.max_batch:
                try:
                    job = self.queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if job is None:
                    self.queue.put(None)
                    break
                batch.append(job)
            self.batches.append(len(batch))
            started = time.monotonic()
            groups: dict[tuple, list[Job]] = {}
            for job in batch:              # one engine run per sampling setting
                groups.setdefault(job.sampling(), []).append(job)
            for key, jobs in groups.items():
                try:
                    self._run(key, jobs)
                except Exception as e:      # a model failure ends these requests with a 500, not the server
                    for job in jobs:
                        job.put(("error", f"{type(e).__name__}: {e}"))
            self.last_batch_s = time.monotonic() - started

    def _run(self, key: tuple, jobs: list[Job]) -> None:
        if self.engine is None:
            cases = [Case(id=str(i), difficulty="", conversation=j.request.conv, expected_calls=[], raw={})
                     for i, j in enumerate(jobs)]
            for job, pred in zip(jobs, self.model.predict(cases)):
                job.put(("prediction", pred))
            return
        max_tokens, temperature, top_p, seed = key
        self.engine.cfg = replace(self.base_cfg, max_new_tokens=max_tokens, do_sample=temperature > 0,
                                  temperature=temperature or self.base_cfg.temperature, top_p=top_p, seed=seed)
        for job in jobs:
            job.request.conv.meta["server_tools"] = job.request.server_tools
        for ev in self.engine.events([j.request.conv for j in jobs]):
            jobs[ev.index].put(("event", ev))
