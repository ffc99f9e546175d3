"""Device-rate emulation: make the backing store behave like a device of a given bandwidth.

On this kind of machine the backing store is tmpfs and the CPU is the bottleneck, so sharing
would not show. With a bandwidth set, every dispatched chunk occupies one emulated device for
``nbytes / bandwidth`` seconds, served in dispatch order (the scheduler's order), after the real
syscall has run. The aggregate rate of the proxy is then at most ``bandwidth``; the scheduler
decides who gets it. Off (bandwidth 0) in production.
"""

from __future__ import annotations

import trio


class EmulatedDevice:
    """A single-queue device of ``bandwidth`` bytes/s; ``occupy`` waits out a transfer."""

    def __init__(self, bandwidth: float) -> None:
        self.bandwidth = float(bandwidth)
        self._free_at = 0.0

    @property
    def enabled(self) -> bool:
        return self.bandwidth > 0

    async def occupy(self, nbytes: int) -> None:
        if self.bandwidth <= 0:
            return
        now = trio.current_time()
        self._free_at = max(now, self._free_at) + nbytes / self.bandwidth
        await trio.sleep_until(self._free_at)
