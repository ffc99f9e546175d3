"""The compiled data path: reads, writes, flush, fsync and fallocate of open files in C.

:meth:`CompiledDataPath.install` gives ``themis/fs/_datapath.c`` the session's ``/dev/fuse``
descriptor and pyfuse3 a socket pair in its place. C reader threads read every request; they
serve the data operations themselves, without the GIL: each chunk (at most ``chunk_bytes``)
waits for its fair turn from the scheduler core's C API, runs ``pread``/``pwrite`` on the
descriptor that open made as the caller, holds the turn for the emulated device time (device
emulation on), and the thread replies. Every other request goes on, unchanged, to pyfuse3's
trio loop (the Python operations and all their security rules), whose replies a C thread
passes back to the kernel. Python registers each open
file (fh -> descriptor, job handle) at open/create and drops it at release, after which it
closes the descriptor. The C side counts per-job bytes, operations and queue wait, read by the
metrics collector at scrape time. One mount per process (the C state is global).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from themis.fs import _datapath
from themis.fs.device import EmulatedDevice
from themis.fs.lowlevel import OpTable
from themis.fs.shared_device import SharedEmulatedDevice
from themis.metrics import IOTotals
from themis.sched import core_api
from themis.sched.tags import JobTag

log = logging.getLogger("themis.fs")


class CoreScheduler(Protocol):
    """What the data path needs of the compiled scheduler (themis.sched.Scheduler); the C side
    reaches its core through the capsule of themis/sched/core_api.h."""

    chunk_bytes: int

    def job_handle(self, tag: JobTag) -> int: ...


@dataclass(frozen=True)
class KernelOptions:
    """Set at FUSE INIT: request size, readahead, background requests, writeback cache."""

    max_write: int = 1 << 20
    max_readahead: int = 1 << 20
    max_background: int = 64
    writeback_cache: bool = False
    splice_reads: bool = True  # reply to reads with the file's pages, not a copy (not an INIT flag)
    splice_writes: bool = True  # take write data from /dev/fuse by splice: one copy fewer


class CompiledDataPath:
    """See the module docstring. Methods run on the event loop thread (GIL held)."""

    def __init__(
        self,
        scheduler: CoreScheduler,
        device: EmulatedDevice | None = None,
        threads: int = 64,
        kernel: KernelOptions | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.threads = threads
        device = device or EmulatedDevice(0)
        shared = device.fd if isinstance(device, SharedEmulatedDevice) else -1
        _datapath.configure(core_api(), scheduler, scheduler.chunk_bytes, device.bandwidth, shared)
        k = kernel or KernelOptions()
        _datapath.set_kernel_options(
            k.max_write,
            k.max_readahead,
            k.max_background,
            k.writeback_cache,
            k.splice_reads,
            k.splice_writes,
        )
        self._handles: dict[str, int] = {}  # job id -> the core's job handle
        self._jobs: dict[int, str] = {}  # and back
        self._started = False

    def job_handle(self, tag: JobTag) -> int:
        """The core's handle of the job (asked at every open: the scheduler keeps the tag)."""
        handle = self.scheduler.job_handle(tag)
        self._handles[tag.job_id] = handle
        self._jobs[handle] = tag.job_id
        return handle

    def install(self, table: OpTable) -> None:
        """Take /dev/fuse over and start the threads (right after ``pyfuse3.init``, before the
        session loop runs)."""
        _datapath.install(table.address, table.session)
        _datapath.start(self.threads)
        self._started = True

    def opened(self, fh: int, fd: int, tag: JobTag) -> None:
        _datapath.register(fh, fd, self.job_handle(tag))

    def closed(self, fh: int) -> None:
        """Returns once no request uses ``fh``'s descriptor any more."""
        _datapath.unregister(fh)

    def totals(self) -> dict[str, IOTotals]:
        """Per-job I/O counted by the C workers (any thread)."""
        jobs = dict(self._jobs)
        return {
            jobs[h]: IOTotals(rb, wb, r, w, wait)
            for h, (rb, wb, r, w, wait) in _datapath.job_stats().items()
            if h in jobs
        }

    def forget(self, job_id: str) -> None:
        """A finished job: drop its counters (the scheduler forgets its own state)."""
        handle = self._handles.get(job_id)
        if handle is not None and _datapath.forget_job(handle):
            del self._handles[job_id]
            del self._jobs[handle]

    def stop(self) -> None:
        """Finish queued requests and join the workers (after the session loop ended)."""
        if self._started:
            _datapath.stop()
            self._started = False


__all__ = ["CompiledDataPath", "CoreScheduler", "KernelOptions"]
