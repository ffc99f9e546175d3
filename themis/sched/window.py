"""Achieved shares over a sliding window of the last N dispatched chunks."""

from __future__ import annotations

from collections import deque


class ShareWindow:
    """Bytes per job among the last ``size`` dispatches (size 0 disables tracking)."""

    __slots__ = ("size", "_ring", "bytes", "total")

    def __init__(self, size: int) -> None:
        self.size = size
        self._ring: deque[tuple[str, int]] = deque()
        self.bytes: dict[str, int] = {}
        self.total = 0

    def add(self, job_id: str, nbytes: int) -> None:
        if not self.size:
            return
        ring, by = self._ring, self.bytes
        ring.append((job_id, nbytes))
        by[job_id] = by.get(job_id, 0) + nbytes
        self.total += nbytes
        if len(ring) > self.size:
            old, n = ring.popleft()
            left = by.get(old, 0) - n  # 0-byte entries may outlive their job's key
            if left:
                by[old] = left
            else:
                by.pop(old, None)
            self.total -= n

    def shares(self) -> dict[str, float]:
        """Achieved byte share per job in the window (ops count as 1 byte when all are 0)."""
        if self.total:
            return {j: b / self.total for j, b in self.bytes.items()}
        return {}
