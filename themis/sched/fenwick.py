"""A growable Fenwick (binary indexed) tree of weights for O(log n) weighted draws."""

from __future__ import annotations


class Fenwick:
    """Weights at integer slots; ``find(r)`` returns the slot where the prefix sum passes r."""

    __slots__ = ("_t", "_w", "_size", "total")

    def __init__(self, size: int = 8) -> None:
        n = 1
        while n < size:
            n *= 2
        self._size = n
        self._t = [0.0] * (n + 1)
        self._w = [0.0] * n
        self.total = 0.0

    def __len__(self) -> int:
        return self._size

    def get(self, i: int) -> float:
        return self._w[i]

    def set(self, i: int, w: float) -> None:
        if i >= self._size:
            self._grow(i + 1)
        delta = w - self._w[i]
        if delta == 0.0:
            return
        self._w[i] = w
        self.total += delta
        t, n = self._t, self._size
        i += 1
        while i <= n:
            t[i] += delta
            i += i & -i

    def rebuild(self, weights: list[float]) -> None:
        """Replace every weight at once in O(n)."""
        n = 1
        while n < max(len(weights), 1):
            n *= 2
        w = list(weights) + [0.0] * (n - len(weights))
        t = [0.0] + w
        for i in range(1, n + 1):
            j = i + (i & -i)
            if j <= n:
                t[j] += t[i]
        self._size, self._t, self._w, self.total = n, t, w, sum(w)

    def find(self, r: float) -> int:
        """The slot i with prefix(i) <= r < prefix(i+1); callers draw r in [0, total)."""
        t = self._t
        pos = 0
        step = self._size
        while step:
            nxt = pos + step
            if nxt <= self._size and t[nxt] <= r:
                pos = nxt
                r -= t[nxt]
            step >>= 1
        if pos >= self._size or self._w[pos] <= 0.0:  # float drift at the edges
            for i in range(min(pos, self._size - 1), -1, -1):
                if self._w[i] > 0.0:
                    return i
            for i in range(self._size):
                if self._w[i] > 0.0:
                    return i
        return pos

    def _grow(self, need: int) -> None:
        n = self._size
        while n < need:
            n *= 2
        self.rebuild(self._w + [0.0] * (n - self._size))
