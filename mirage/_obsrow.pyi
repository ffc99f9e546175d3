"""Type stubs for the observation builder's compiled core (mirage/_obsrow.c)."""

import numpy as np

QUEUE_COLUMNS: tuple[str, ...]

def queue_row(
    row: np.ndarray,
    time: float,
    max_limit: float,
    total_units: float,
    count_norm: float,
    wait_norm: float,
    pend_units: np.ndarray,
    pend_limit: np.ndarray,
    pend_submit: np.ndarray,
    pend_eligible: np.ndarray,
    run_units: np.ndarray,
    run_limit: np.ndarray,
    run_start: np.ndarray,
    start_wait: np.ndarray,
    end_limit: np.ndarray,
    end_used: np.ndarray,
    end_units: np.ndarray,
    /,
) -> None: ...
def fit_features(
    start_units: np.ndarray,
    start_wait: np.ndarray,
    start_time: np.ndarray,
    units: float,
    cutoff: float,
    count_norm: float,
    wait_norm: float,
    /,
) -> tuple[float, float, float, float, float, float]: ...
def track(
    prev_time: float,
    time: float,
    cutoff: float,
    prev_ids: np.ndarray,
    prev_submit: np.ndarray,
    prev_run_ids: np.ndarray,
    prev_run_start: np.ndarray,
    prev_run_limit: np.ndarray,
    prev_run_units: np.ndarray,
    run_ids: np.ndarray,
    run_start: np.ndarray,
    run_units: np.ndarray,
    start_time: np.ndarray,
    start_wait: np.ndarray,
    start_units: np.ndarray,
    end_time: np.ndarray,
    end_used: np.ndarray,
    end_units: np.ndarray,
    end_limit: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    /,
) -> tuple[int, int]: ...
