"""A growable Fenwick (binary indexed) tree of weights for O(log n) weighted draws."""

from __future__ import annotations

# per tree size n (a power of 2): the descent's steps below the root (n/2 ... 1), and for each
# slot the tree cells an update touches; shared by every tree of that size
_SHAPES: dict[int, tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]] = {}


def _shape(n: int) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
    shape = _SHAPES.get(n)
    if shape is None:
        steps = tuple(1 << k for k in range(n.bit_length() - 2, -1, -1))
        paths = []
        for i in range(1, n + 1):
            path = []
            while i <= n:
                path.append(i)
                i += i & -i
            paths.append(tuple(path))
        shape = _SHAPES[n] = (steps, tuple(paths))
    return shape


class Fenwick:
    """Weights at integer slots; ``find(r)`` returns the slot where the prefix sum passes r."""

    __slots__ = ("_t", "_w", "_size", "_steps", "_paths", "total")

    def __init__(self, size: int = 8) -> None:
        n = 1
        while n < size:
            n *= 2
        self._size = n
        self._steps, self._paths = _shape(n)
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
        weights = self._w
        delta = w - weights[i]
        if delta == 0.0:
            return
        weights[i] = w
        self.total += delta
        t = self._t
        for j in self._paths[i]:
            t[j] += delta

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
        self._steps, self._paths = _shape(n)

    def find(self, r: float) -> int:
        """The slot i with prefix(i) <= r < prefix(i+1); callers draw r in [0, total)."""
        t, n = self._t, self._size
        if t[n] <= r:  # r >= total: float drift
            pos = n
        else:  # below the root, pos + step < n always: no bound check
            pos = 0
            for step in self._steps:
                nxt = pos + step
                v = t[nxt]
                if v <= r:
                    pos = nxt
                    r -= v
        if pos >= n or self._w[pos] <= 0.0:  # float drift at the edges
            w = self._w
            for i in range(min(pos, n - 1), -1, -1):
                if w[i] > 0.0:
                    return i
            for i in range(n):
                if w[i] > 0.0:
                    return i
        return pos

    def _grow(self, need: int) -> None:
        n = self._size
        while n < need:
            n *= 2
        self.rebuild(self._w + [0.0] * (n - self._size))
