"""A trio adapter: ``async with gate.slot(tag, nbytes):`` waits for the request's fair turn.

The gate owns its :class:`Scheduler` (submit work to the scheduler only through the gate).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from themis.sched.items import DISPATCHED, Chunk, Request
from themis.sched.scheduler import Scheduler
from themis.sched.tags import JobTag

POLL_S = 0.001  # while C threads share the scheduler: how often a waiter looks for its turn


class Gate:
    """Admits I/O operations in the order the scheduler dispatches them, at most
    ``scheduler.max_inflight`` at a time.  Single trio event loop only.  When C threads share the
    compiled scheduler (``core_api.h``), a chunk of ours they dispatch waits in the core until our
    next ``take()``, so waiters then look every ``POLL_S`` seconds."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self._events: dict[Chunk, trio.Event] = {}

    @asynccontextmanager
    async def slot(self, tag: JobTag, nbytes: int, payload: Any = None) -> AsyncIterator[Request]:
        """Wait for the turn of every chunk of an ``nbytes`` request, then run the body.

        A request larger than ``chunk_bytes`` waits for each chunk's turn in sequence, giving
        each slot straight back except the last one, which it holds while the body runs: it is
        charged and delayed like the chunks it is, and never holds a slot while waiting.  Issue
        chunk-sized operations yourself for true interleaving.  Cancellation withdraws queued
        chunks and releases held slots."""
        sched = self.scheduler
        req = sched.submit(tag, nbytes, payload)
        chunks = req.chunks
        for c in chunks:
            self._events[c] = trio.Event()
        try:
            for c in chunks[:-1]:
                await self._wait(c)
                self._release(c)
            await self._wait(chunks[-1])
            yield req
        finally:
            sched.cancel(req)
            for c in chunks:
                self._events.pop(c, None)
                if c.state == DISPATCHED:
                    sched.done(c)
            self._pump()

    async def _wait(self, chunk: Chunk) -> None:
        event = self._events[chunk]
        self._pump()
        sched = self.scheduler
        while not event.is_set():
            wake = sched.wakeup_time()
            if wake is None and sched.shared:
                wake = sched.clock() + POLL_S
            if wake is None:
                await event.wait()
            else:
                with trio.move_on_after(max(0.0, wake - sched.clock())):
                    await event.wait()
                self._pump()

    def _release(self, chunk: Chunk) -> None:
        self.scheduler.done(chunk)
        self._pump()

    def _pump(self) -> None:
        sched = self.scheduler
        for chunk in sched.take():
            event = self._events.get(chunk)
            if event is None:  # submitted around the gate: nobody waits for it
                sched.done(chunk)
            else:
                event.set()
