"""Turn the columns a reader parsed into a :class:`Trace`: shared by every reader.

Here live the rules all formats share: the fallback for unknown limits, unique job ids,
jobs larger than the machine, sorting by (submit, job_id), times relative to the earliest
submit, and integer codes for users and groups.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sim.traces.diagnostics import Diagnostics
from sim.traces.model import Trace, TraceError

#: Unknown limits become ``runtime * limit_factor`` rounded up to whole minutes (at least one).
DEFAULT_LIMIT_FACTOR = 1.0


def fallback_limit(runtime: np.ndarray, factor: float = DEFAULT_LIMIT_FACTOR) -> np.ndarray:
    """The limit given to jobs whose requested limit is unknown (-1, UNLIMITED, missing).

    ``ceil(runtime * factor / 60) * 60``, at least 60 s: with the default factor 1 the job
    never reaches its limit, and a scheduler sees a perfect (minute-rounded) estimate.
    """
    if not factor >= 1.0 or not np.isfinite(factor):
        raise ValueError(f"limit_factor must be a finite number >= 1, not {factor!r}")
    return np.maximum(np.ceil(np.asarray(runtime, dtype=np.float64) * factor / 60.0), 1.0) * 60.0


#: no site's log spans this long: a time further than this from the log's median submit,
#: or a wait, run or limit this long, is a corrupt field (it would also stretch the replay's
#: timelines, binned by the quarter hour, over centuries)
MAX_SPAN_S = 50 * 365.25 * 86400.0


def _skip_far_times(
    diag: Diagnostics,
    lines: np.ndarray,
    keep: np.ndarray,
    submit: np.ndarray,
    recorded_start: np.ndarray,
    runtime: np.ndarray,
    limit: np.ndarray,
) -> None:
    """Leave out (in ``keep``) the rows whose times lie beyond :data:`MAX_SPAN_S`, each
    named by its line."""
    sub = np.asarray(submit, dtype=np.float64)
    if not keep.any():
        return
    mid = float(np.quantile(sub[keep], 0.5, method="lower"))  # one of the log's own
    waits = np.asarray(recorded_start, dtype=np.float64) - sub
    checks = (
        ("submit time", np.abs(sub - mid), " from the log's median submit"),
        ("wait", np.where(np.isfinite(waits), np.abs(waits), 0.0), ""),
        ("run time", np.asarray(runtime, dtype=np.float64), ""),
        ("limit", np.nan_to_num(np.asarray(limit, dtype=np.float64), posinf=0.0), ""),
    )
    for what, value, where in checks:
        for i in np.flatnonzero(keep & (value > MAX_SPAN_S)):
            years = value[i] / (365.25 * 86400)
            diag.bad(int(lines[i]), f"{what} of {years:.3g} years{where} (over 50); row skipped")
            keep[i] = False


def assemble(
    diag: Diagnostics,
    *,
    fmt: str,
    unit: str,
    lines: np.ndarray,
    job_id: np.ndarray,
    submit: np.ndarray,
    runtime: np.ndarray,
    limit: np.ndarray,
    units: np.ndarray,
    users: Sequence[object] | np.ndarray,
    groups: Sequence[object] | np.ndarray,
    exit_code: np.ndarray,
    recorded_start: np.ndarray,
    names: Sequence[str],
    partitions: Sequence[str] = (),
    epoch_base: float = 0.0,
    total_units: int | None = None,
    limit_factor: float = DEFAULT_LIMIT_FACTOR,
    recorded_priority: np.ndarray | None = None,
) -> Trace:
    """Build the trace from per-job columns in file order.

    ``submit`` and ``recorded_start`` are seconds after ``epoch_base`` (a Unix time); the
    result counts from the earliest submit. ``limit`` is NaN or inf where unknown.
    ``total_units`` is the machine size (from the header, the caller or, when None, the
    largest job). ``lines`` holds each job's 1-based line number for diagnostics.
    ``recorded_priority`` is the priority the site recorded (NaN where unknown; None: none).
    """
    lines = np.asarray(lines, dtype=np.int64)
    job_id = np.asarray(job_id, dtype=np.int64)
    units = np.asarray(units, dtype=np.int64)
    keep = np.ones(job_id.shape[0], dtype=bool)

    # Duplicate job ids: keep the first row in file order.
    order = np.argsort(job_id, kind="stable")
    ids_sorted = job_id[order]
    dup = np.flatnonzero(ids_sorted[1:] == ids_sorted[:-1]) + 1
    if dup.size:
        first_of: dict[int, int] = {}
        for k in range(order.size):
            first_of.setdefault(int(ids_sorted[k]), int(lines[order[k]]))
        for pos in sorted(dup.tolist(), key=lambda q: int(lines[order[q]])):
            i = int(order[pos])
            keep[i] = False
            diag.bad(
                int(lines[i]),
                f"duplicate job id {int(job_id[i])} (first at line {first_of[int(job_id[i])]});"
                " row skipped",
            )

    _skip_far_times(diag, lines, keep, submit, recorded_start, runtime, limit)
    diag.raise_if_strict()
    size_stated = total_units is not None
    if total_units is None:
        total_units = int(units[keep].max()) if keep.any() else None
    elif total_units <= 0:
        raise TraceError(f"{diag.path}: total units must be positive, not {total_units}")
    else:
        # a job the log records starting did run: the recorded schedule, not the stated
        # size, bounds the machine (the replay raises the size to its peak)
        too_big = keep & (units > total_units) & ~np.isfinite(np.asarray(recorded_start, float))
        if too_big.any():
            first = int(lines[np.flatnonzero(too_big)[0]])
            diag.skip(
                f"larger than the machine ({total_units} {unit}), would never start",
                first,
                int(too_big.sum()),
            )
            keep &= ~too_big

    if not keep.any():
        detail = "; ".join(w.reason for w in diag.warnings()[-3:])
        raise TraceError(f"{diag.path}: no usable jobs" + (f" ({detail})" if detail else ""))

    idx = np.flatnonzero(keep)
    submit = np.asarray(submit, dtype=np.float64)[idx]
    job_id = job_id[idx]
    order = np.lexsort((job_id, submit))
    idx = idx[order]
    submit = submit[order]
    job_id = job_id[order]
    t0 = float(submit[0])

    runtime = np.asarray(runtime, dtype=np.float64)[idx]
    limit = np.asarray(limit, dtype=np.float64)[idx]
    unknown = ~(np.isfinite(limit) & (limit > 0))
    if unknown.any():
        limit[unknown] = fallback_limit(runtime[unknown], limit_factor)

    user_codes, user_names = _codes(users, idx)
    group_codes, group_names = _codes(groups, idx)
    return Trace(
        job_id=job_id,
        submit=submit - t0,
        runtime=runtime,
        limit=limit,
        units=units[idx],
        user=user_codes,
        group=group_codes,
        exit_code=np.asarray(exit_code, dtype=np.int64)[idx],
        recorded_start=np.asarray(recorded_start, dtype=np.float64)[idx] - t0,
        recorded_priority=(
            np.asarray(recorded_priority, dtype=np.float64)[idx]
            if recorded_priority is not None
            else np.full(idx.size, np.nan)
        ),
        names=[names[int(i)] for i in idx] if len(names) else [""] * idx.size,
        partitions=[partitions[int(i)] for i in idx] if any(partitions) else [],
        unit=unit,
        total_units=total_units,
        size_stated=size_stated,
        start_epoch=float(epoch_base) + t0,
        source=diag.path,
        fmt=fmt,
        user_names=user_names,
        group_names=group_names,
        warnings=diag.warnings(),
        notes=diag.notes(),
    )


def _codes(keys: Sequence[object] | np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Integer codes (ranks of the sorted distinct keys) and the keys as names."""
    arr = np.asarray(keys)[idx]
    uniq, inverse = np.unique(arr, return_inverse=True)
    return inverse.astype(np.int64).reshape(-1), [_name(u) for u in uniq.tolist()]


def _name(key: object) -> str:
    if isinstance(key, float) and key.is_integer():
        return str(int(key))
    return str(key)
