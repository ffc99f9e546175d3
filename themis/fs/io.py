"""Reads and writes of open files, admitted in the order the fair-share scheduler dispatches them.

Each FUSE read or write is cut into ``chunk_bytes`` pieces; each piece waits for its fair turn in
the scheduler core's trio gate (which also bounds how many run at once), then runs its
``pread``/``pwrite`` and, when device-rate emulation is on, holds its slot for the emulated
transfer time. The syscall runs on the event loop by default (on tmpfs, threads were slower for
short calls); with ``io_threads`` > 0 it runs in up to that many worker threads, which a backing
store that really blocks (a disk, a parallel file system) needs to keep several requests going.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from typing import Any, TypeVar

import trio

from themis.fs.device import EmulatedDevice
from themis.metrics import ThemisMetrics
from themis.sched.aio import Gate
from themis.sched.tags import JobTag

T = TypeVar("T")


class ScheduledIO:
    """The ``RequestIO`` of :class:`~themis.fs.operations.PassthroughFS`, through a Gate."""

    def __init__(
        self,
        gate: Gate,
        device: EmulatedDevice | None = None,
        metrics: ThemisMetrics | None = None,
        io_threads: int = 0,
    ) -> None:
        self.gate = gate
        self.device = device or EmulatedDevice(0)
        self.metrics = metrics
        self.limiter = trio.CapacityLimiter(io_threads) if io_threads > 0 else None

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        if self.limiter is None:
            return fn(*args)
        return await trio.to_thread.run_sync(fn, *args, limiter=self.limiter)

    @property
    def chunk_bytes(self) -> int:
        return self.gate.scheduler.chunk_bytes

    async def read(self, tag: JobTag, fd: int, offset: int, size: int) -> bytes:
        parts: list[bytes] = []
        step = self.chunk_bytes
        for start in range(0, max(size, 1), step):
            n = min(step, size - start)
            async with self.gate.slot(tag, n):
                data = await self._call(os.pread, fd, n, offset + start)
                await self.device.occupy(len(data))
            parts.append(data)
            if len(data) < n:  # end of file
                break
        out = b"".join(parts)
        if self.metrics is not None:
            self.metrics.record(tag, "read", len(out))
        return out

    async def write(self, tag: JobTag, fd: int, offset: int, data: bytes) -> int:
        view = memoryview(data)
        step = self.chunk_bytes
        for start in range(0, max(len(view), 1), step):
            piece = view[start : start + step]
            async with self.gate.slot(tag, len(piece)):
                done = 0
                while done < len(piece):
                    n = await self._call(os.pwrite, fd, piece[done:], offset + start + done)
                    if n <= 0:
                        raise OSError(errno.EIO, "the backing store accepted no bytes")
                    done += n
                await self.device.occupy(len(piece))
        if self.metrics is not None:
            self.metrics.record(tag, "write", len(view))
        return len(view)
