"""Type stubs for the compiled core (sim/_backfill.c)."""

from typing import Any

import numpy as np

def register(cls: type, /) -> None: ...
def plan(
    order: list[Any], n_test: int, now: float, free: int, ends: list[tuple[float, int, int]],
    horizon: float, min_step: float, per_node: int, total: int, window: float, linear: float,
    epoch: float, resolution: float, /,
) -> list[int]: ...
def estimate(
    order: list[Any], target: int, now: float, free: int, ends: list[tuple[float, int, int]],
    horizon: float, min_step: float, per_node: int, total: int, window: float, linear: float,
    epoch: float, resolution: float, /,
) -> float | None: ...
def refresh(
    order: list[Any], tick: float, w_age: float, max_age: float, w_fs: float,
    fs: np.ndarray | None, /,
) -> bool: ...
def fairshare_tick(
    usage: np.ndarray, run_units: np.ndarray, accrued: np.ndarray, stamp: np.ndarray,
    now: float, decay: float, n_users: int, out: np.ndarray, /,
) -> None: ...
