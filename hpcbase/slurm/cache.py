"""A throttled cache for Slurm queries, so no caller can hammer slurmctld."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


class QueryCache:
    """Per-key cache with a floor between real queries.

    ``get(key, fetch, max_age)`` returns the cached value when it is at most ``max_age``
    seconds old (default ``min_interval``). Otherwise it runs ``fetch()``, but never sooner
    than ``min_interval`` after the previous real query for that key: a caller asking for
    fresher data waits out the rest of the interval. Failed queries count too. Beyond
    ``max_entries`` keys the least recently queried quarter is forgotten.
    """

    max_entries = 4096

    def __init__(
        self,
        min_interval: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if min_interval < 0:
            raise ValueError(f"min_interval must be >= 0, got {min_interval}")
        self.min_interval = float(min_interval)
        self._clock = clock
        self._sleep = sleep
        self._values: dict[Hashable, tuple[float, Any]] = {}
        self._last: dict[Hashable, float] = {}
        self._lock = threading.RLock()

    def get(self, key: Hashable, fetch: Callable[[], T], max_age: float | None = None) -> T:
        limit = self.min_interval if max_age is None else max_age
        with self._lock:
            hit = self._values.get(key)
            if hit is not None and self._clock() - hit[0] <= limit:
                return hit[1]
            last = self._last.get(key)
            if last is not None:
                wait = self.min_interval - (self._clock() - last)
                if wait > 0:
                    self._sleep(wait)
            try:
                value = fetch()
            finally:
                self._last[key] = self._clock()
            self._values[key] = (self._last[key], value)
            if len(self._last) > self.max_entries:  # e.g. many job ids in a long-lived daemon
                for old in sorted(self._last, key=self._last.__getitem__)[: len(self._last) // 4]:
                    self._last.pop(old, None)
                    self._values.pop(old, None)
            return value

    def invalidate(self, match: Callable[[Hashable], bool] | None = None) -> None:
        """Forget cached values (all, or those whose key ``match`` accepts); the floor
        between real queries still holds."""
        with self._lock:
            for key in [k for k in self._values if match is None or match(k)]:
                del self._values[key]
