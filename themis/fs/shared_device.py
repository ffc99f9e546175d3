"""One emulated device shared by several daemons on one machine (cluster benchmarks).

Like :class:`themis.fs.device.EmulatedDevice`, but the time at which the device is next free
lives in a small state file that every daemon updates under ``flock``: daemons standing for
different compute nodes then queue, in arrival order, for one device of ``bandwidth`` bytes/s,
as the nodes of a cluster queue for one burst buffer.  Times are ``CLOCK_MONOTONIC``, which all
processes of a machine share.  Off (bandwidth 0) in production.
"""

from __future__ import annotations

import fcntl
import os
import struct
import time

import trio

from themis.fs.device import EmulatedDevice

_STATE = struct.Struct("<d")


class SharedEmulatedDevice(EmulatedDevice):
    """A single-queue device of ``bandwidth`` bytes/s whose queue is the file at ``path``."""

    def __init__(self, bandwidth: float, path: str) -> None:
        super().__init__(bandwidth)
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def _book(self, nbytes: int) -> float:
        """Reserve the device for ``nbytes``; returns when the transfer ends (monotonic)."""
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        try:
            raw = os.pread(self.fd, _STATE.size, 0)
            free_at = _STATE.unpack(raw)[0] if len(raw) == _STATE.size else 0.0
            end = max(time.monotonic(), free_at) + nbytes / self.bandwidth
            os.pwrite(self.fd, _STATE.pack(end), 0)
        finally:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        return end

    async def occupy(self, nbytes: int) -> None:
        if self.bandwidth <= 0:
            return
        end = self._book(nbytes)
        await trio.sleep(max(0.0, end - time.monotonic()))

    def close(self) -> None:
        os.close(self.fd)
