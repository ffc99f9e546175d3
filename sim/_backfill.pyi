"""Type stubs for the compiled core (sim/_backfill.c)."""

from typing import Any

import numpy as np

from sim.mapparams import MapParams

def register(cls: type, /) -> None: ...
def plan(order: list[Any], n_test: int, params: MapParams, /) -> list[int]: ...
def estimate(order: list[Any], target: int, params: MapParams, /) -> float | None: ...
def refresh(
    order: list[Any],
    tick: float,
    w_age: float,
    max_age: float,
    w_fs: float,
    fs: np.ndarray
    | tuple[np.ndarray, float, float]
    | tuple[np.ndarray, float, float, bool]
    | tuple[np.ndarray, float, float, bool, int]
    | None,
    whole_age: bool = ...,
    /,
) -> bool: ...
def insort(order: list[Any], job: Any, /) -> None: ...
def fairshare_tick(
    usage: np.ndarray,
    run_units: np.ndarray,
    accrued: np.ndarray,
    stamp: np.ndarray,
    now: float,
    decay: float,
    n_users: int,
    out: np.ndarray | None,
    /,
) -> float: ...
def advance_ticks(
    order: list[Any],
    first: float,
    period: float,
    limit: float,
    w_age: float,
    max_age: float,
    w_fs: float,
    share: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float, int, float, float]
    | tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float, int, float, float, bool]
    | tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float, int, float, float, bool, int]
    | None,
    whole_age: bool = ...,
    /,
) -> tuple[float, bool, float, float]: ...
def limit_filter(
    order: list[Any],
    stop: int,
    user_use: dict[int, list[int]],
    limits: tuple[int, int, int, bool, bool, int, int, dict[int, tuple[int, int, int]]],
    /,
) -> tuple[list[int], list[Any]] | None: ...
def limited_picks(
    order: list[Any],
    depth: int,
    free: int,
    user_use: dict[int, list[int]],
    extra: dict[int, list[int]],
    limits: tuple[int, int, int, bool, bool, int, int, dict[int, tuple[int, int, int]]],
    /,
) -> list[int]: ...
def plan_limited(
    order: list[Any],
    n_test: int,
    params: MapParams,
    user_use: dict[int, list[int]],
    limits: tuple[int, int, int, bool, bool, int, int, dict[int, tuple[int, int, int]]],
    /,
) -> list[int]: ...
def walk_pools(
    order: list[Any],
    stop: int,
    start_now: bool,
    seg_free: list[int],
    seg_size: list[int],
    running: dict[int, Any],
    params: tuple[float, float, float, float, float, float, float, int],
    user_use: dict[int, list[int]],
    limits: tuple[int, int, int, bool, bool, int, int, dict[int, tuple[int, int, int]]] | None,
    n_test: int,
    /,
) -> list[tuple[int, list[tuple[int, int]]]] | float | None: ...
def queue_arrays(
    pending: dict[int, Any],
    running: dict[int, Any],
    pend_id: np.ndarray,
    pend_units: np.ndarray,
    pend_limit: np.ndarray,
    pend_submit: np.ndarray,
    pend_eligible: np.ndarray,
    run_id: np.ndarray,
    run_units: np.ndarray,
    run_limit: np.ndarray,
    run_start: np.ndarray,
    /,
) -> None: ...

# the compiled life cycle (sim/_lifecycle.c); ctx: JobManager._life_ctx's tuple
def register_life(job_cls: type, record_cls: type, state_cls: type, end_kind: int, /) -> None: ...
def start_jobs(ctx: tuple[Any, ...], state: Any, idx: list[int], backfill: bool, /) -> None: ...
def end_jobs(ctx: tuple[Any, ...], state: Any, t: float, /) -> int: ...
def run_loop(ctx: tuple[Any, ...], state: Any, until: float, ev: tuple[Any, ...], /) -> None: ...
