"""Type stubs for the compiled scheduler core (themis/sched/_core.c)."""

from typing import Any

API_VERSION: int
_C_API: object

class Core:
    queued: int
    inflight: int
    max_inflight: int
    shared: bool
    def __init__(
        self,
        config: tuple[int, int, int, float, float, float, float, float],
        max_inflight: int,
        min_charge: int,
        chunk_bytes: int,
        window: int,
        track_wait: bool,
    ) -> None: ...
    def add_job(
        self,
        keys: tuple[int, ...],
        bases: tuple[float, ...],
        boosts: tuple[float, ...],
        rate: float,
        /,
    ) -> int: ...
    def set_job(
        self,
        job: int,
        keys: tuple[int, ...],
        bases: tuple[float, ...],
        boosts: tuple[float, ...],
        rate: float,
        /,
    ) -> None: ...
    def submit(self, job: int, nbytes: int, chunk: Any, now: float, /) -> bool: ...
    def take(self, limit: int, now: float, /) -> list[Any]: ...
    def done(self, job: int, nbytes: int, /) -> None: ...
    def cancel(self, job: int, chunks: list[Any], now: float, /) -> int: ...
    def wakeup(self, now: float, /) -> float | None: ...
    def forget(self, job: int, /) -> None: ...
    def reap(self) -> list[int]: ...
    def set_boosts(self, boosts: list[tuple[int, tuple[float, ...]]], /) -> None: ...
    def configure(
        self, config: tuple[int, int, int, float, float, float, float, float], /
    ) -> None: ...
    def reload(self, now: float, /) -> None: ...
    def stats(
        self,
    ) -> tuple[int, int, int, int, int, list[tuple[int, int, int, int, int, int, float, int]]]: ...

def stress(
    sched: object, spec: list[tuple[int, int]], seconds: float, hold_s: float, /
) -> list[tuple[int, int]]: ...
def mt_draws(seed: int, n: int, /) -> list[float]: ...
