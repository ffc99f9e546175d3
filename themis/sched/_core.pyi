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
        config: tuple[Any, ...],
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
        path: tuple[str, ...],
        /,
    ) -> int: ...
    def set_job(
        self,
        job: int,
        keys: tuple[int, ...],
        bases: tuple[float, ...],
        boosts: tuple[float, ...],
        rate: float,
        path: tuple[str, ...],
        /,
    ) -> None: ...
    def submit(self, job: int, nbytes: int, chunk: Any, now: float, /) -> bool: ...
    def take(self, limit: int, now: float, /) -> list[Any]: ...
    def done(self, job: int, nbytes: int, /) -> None: ...
    def cancel(self, job: int, chunks: list[Any], now: float, /) -> int: ...
    def wakeup(self, now: float, /) -> float | None: ...
    def forget(self, job: int, /) -> None: ...
    def reap(self) -> list[int]: ...
    def set_boosts(self, vectors: dict[tuple[str, ...], tuple[float, ...]], /) -> list[int]: ...
    def configure(self, config: tuple[Any, ...], /) -> None: ...
    def reload(self, now: float, /) -> None: ...
    def set_rates(self, rates: list[tuple[int, float]], now: float, /) -> None: ...
    def take_held(self) -> list[int]: ...
    def stats(
        self,
    ) -> tuple[int, int, int, int, int, list[tuple[int, int, int, int, int, int, float, int]]]: ...

def stress(
    sched: object, spec: list[tuple[int, int]], seconds: float, hold_s: float, /
) -> list[tuple[int, int]]: ...
def mt_draws(seed: int, n: int, /) -> list[float]: ...

class SimLoop:
    seq: int
    pending: int
    chunks: int
    def __init__(
        self,
        schedulers: list[Any],
        channels: int,
        overhead: float,
        inv_bw: float,
        inv_win: float,
        nwin: int,
        timed: bool,
        jobs: list[tuple[Any, ...]],
        /,
    ) -> None: ...
    def run(self, next_report: float, /) -> tuple[int, float]: ...
    def push(self, t: float, kind: int, a: int = 0, seq: int = -1, /) -> None: ...
    def usage(self) -> list[tuple[int, int]]: ...
    def results(
        self,
    ) -> list[
        tuple[int, int, float, list[int], list[tuple[float, float]], list[tuple[float, float]]]
    ]: ...
