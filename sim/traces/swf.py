"""Standard Workload Format (Parallel Workloads Archive): reader and writer.

Rules (also in docs/traces.md):

* 18 whitespace-separated fields per job; extra trailing columns are ignored; fewer is a
  malformed row. ``;`` lines are comments; ``; Key: value`` header lines give ``MaxProcs``,
  ``MaxNodes`` and ``UnixStartTime``.
* size: allocated processors (field 5), else requested processors (field 8) when the first
  is -1 or 0; a job with neither is skipped (counted).
* run time -1 (typically jobs cancelled before they started): skipped (counted); run
  time 0 is kept.
* requested time (field 9) -1 or 0: unknown, so the limit falls back to
  ``ceil(runtime * limit_factor / 60) * 60`` (see :func:`sim.traces.assemble.fallback_limit`).
* recorded start = submit + wait when the wait (field 3) is known.
* status (field 11) -> exit code: 1 (completed) -> 0, 0 (failed) and 5 (cancelled) -> 1,
  anything else -> 0.
* unit ``procs``; total from ``MaxProcs``, else ``MaxNodes``, else the largest job.
"""

from __future__ import annotations

import gzip
import math
import os
import re
import tempfile
from pathlib import Path

import numpy as np

from sim.traces.assemble import DEFAULT_LIMIT_FACTOR, assemble
from sim.traces.diagnostics import Diagnostics
from sim.traces.model import Trace, TraceError

N_FIELDS = 18
_HEADER = re.compile(r"^[ \t]*;[ \t]*([A-Za-z][A-Za-z0-9_ ]*?)[ \t]*:([^\n]*)$", re.M)
_COMMENT = re.compile(r"^[ \t]*;[^\n]*", re.M)
# Field indices (0-based) used here.
JOB, SUBMIT, WAIT, RUN, ALLOC, REQ_PROCS, REQ_TIME, STATUS, USER, GROUP = (
    0, 1, 2, 3, 4, 7, 8, 10, 11, 12,
)
_CHECKED = {SUBMIT: "submit time", WAIT: "wait time", RUN: "run time", ALLOC: "processors",
            REQ_PROCS: "requested processors", REQ_TIME: "requested time"}
_INTEGRAL = {ALLOC: "processors", REQ_PROCS: "requested processors", STATUS: "status",
             USER: "user", GROUP: "group"}


def read_swf(
    text: str,
    path: str,
    *,
    strict: bool = False,
    unit: str | None = None,
    total_units: int | None = None,
    limit_factor: float = DEFAULT_LIMIT_FACTOR,
) -> Trace:
    """Parse SWF ``text`` (read from ``path``, named in diagnostics)."""
    diag = Diagnostics(path, strict)
    header: dict[str, str] = {}
    for m in _HEADER.finditer(text):
        header.setdefault(m.group(1).replace(" ", "").lower(), m.group(2).strip())
    body = _COMMENT.sub("", text)
    fast = _fast_table(body)
    table, lines = fast if fast is not None else _slow_table(body.split("\n"), diag)
    if not lines.size and not diag.warnings():
        raise TraceError(f"{path}: SWF file holds no job lines")
    table, lines = _validate(table, lines, diag)
    return _build(table, lines, header, diag, unit, total_units, limit_factor)


def _fast_table(body: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Vectorised parse when every non-blank line has >= 18 numbers; None otherwise."""
    if not body.isascii():
        return None
    raw = np.frombuffer(body.encode("ascii"), dtype=np.uint8)
    if not raw.size:
        return None
    newline = raw == 10
    gap = newline | (raw == 32) | ((raw >= 9) & (raw <= 13)) | ((raw >= 28) & (raw <= 31))
    starts = np.flatnonzero(~gap[1:] & gap[:-1]) + 1
    if not gap[0]:
        starts = np.concatenate(([0], starts))
    line_of = np.searchsorted(np.flatnonzero(newline), starts)  # 0-based line of each token
    counts = np.bincount(line_of, minlength=int(line_of[-1]) + 1 if line_of.size else 1)
    used = np.flatnonzero(counts)
    if not used.size or counts[used].min() < N_FIELDS:
        return None
    try:
        values = np.fromstring(body, sep=" ")
    except ValueError:  # a token that is not a number
        return None
    if values.size != starts.size:
        return None
    if counts[used].max() == N_FIELDS:
        return values.reshape(-1, N_FIELDS), used.astype(np.int64) + 1
    first_token = np.concatenate(([0], np.cumsum(counts)[:-1]))
    position = np.arange(starts.size) - first_token[line_of]
    table = values[position < N_FIELDS].reshape(-1, N_FIELDS)
    return table, used.astype(np.int64) + 1


def _slow_table(lines: list[str], diag: Diagnostics) -> tuple[np.ndarray, np.ndarray]:
    """Line by line, reporting rows with too few fields or non-numbers."""
    rows: list[list[float]] = []
    good: list[int] = []
    for lineno, line in enumerate(lines, 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) < N_FIELDS:
            diag.bad(lineno, f"expected {N_FIELDS} SWF fields, found {len(parts)}; row skipped")
            continue
        try:
            rows.append([float(x) for x in parts[:N_FIELDS]])
        except ValueError:
            bad = next(x for x in parts[:N_FIELDS] if not _is_float(x))
            diag.bad(lineno, f"not a number: {bad[:40]!r}; row skipped")
            continue
        good.append(lineno)
    return np.array(rows, dtype=np.float64).reshape(-1, N_FIELDS), np.asarray(good, dtype=np.int64)


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _validate(
    table: np.ndarray, lines: np.ndarray, diag: Diagnostics
) -> tuple[np.ndarray, np.ndarray]:
    """Drop rows with non-finite numbers, bad job ids or negative values other than -1."""
    bad = np.zeros(table.shape[0], dtype=bool)
    reasons: dict[int, str] = {}

    def flag(mask: np.ndarray, reason_of) -> None:
        for i in np.flatnonzero(mask & ~bad):
            reasons[int(i)] = reason_of(int(i))
        bad[:] |= mask

    flag(~np.isfinite(table).all(axis=1), lambda i: "a field is not a finite number")
    jid = table[:, JOB]
    flag((jid < 0) | (jid != np.floor(jid)) | (jid > 2**62),
         lambda i: f"job number {table[i, JOB]:g} is not a non-negative integer")
    for col, what in _CHECKED.items():
        v = table[:, col]
        flag((v < 0) & (v != -1),
             lambda i, col=col, what=what: f"negative {what} {table[i, col]:g}")
    flag(table[:, SUBMIT] < 0, lambda i: "unknown submit time (-1)")
    for col, what in _INTEGRAL.items():
        flag(np.abs(table[:, col]) >= 2**31,
             lambda i, col=col, what=what: f"{what} {table[i, col]:g} out of range")
    for i in sorted(reasons):
        diag.bad(int(lines[i]), reasons[i] + "; row skipped")
    return table[~bad], lines[~bad]


def _build(
    table: np.ndarray,
    lines: np.ndarray,
    header: dict[str, str],
    diag: Diagnostics,
    unit: str | None,
    total_units: int | None,
    limit_factor: float,
) -> Trace:
    size = np.where(table[:, ALLOC] > 0, table[:, ALLOC], table[:, REQ_PROCS])
    no_size = size <= 0
    no_run = table[:, RUN] < 0
    for mask, reason in ((no_size, "unknown size (processors -1 or 0)"),
                         (no_run & ~no_size, "unknown run time (-1; cancelled before it ran?)")):
        if mask.any():
            diag.skip(reason, int(lines[np.flatnonzero(mask)[0]]), int(mask.sum()))
    keep = ~(no_size | no_run)
    t, lines = table[keep], lines[keep]
    if total_units is None:
        total_units = _header_int(header, "maxprocs") or _header_int(header, "maxnodes")
    epoch = _header_int(header, "unixstarttime") or 0
    req = t[:, REQ_TIME]
    status = t[:, STATUS]
    wait = t[:, WAIT]
    return assemble(
        diag,
        fmt="swf",
        unit=unit or "procs",
        lines=lines,
        job_id=t[:, JOB].astype(np.int64),
        submit=t[:, SUBMIT],
        runtime=t[:, RUN],
        limit=np.where(req > 0, req, np.nan),
        units=np.rint(size[keep]).astype(np.int64),
        users=t[:, USER].astype(np.int64),
        groups=t[:, GROUP].astype(np.int64),
        exit_code=np.where((status == 0) | (status == 5), 1, 0),
        recorded_start=np.where(wait >= 0, t[:, SUBMIT] + wait, np.nan),
        names=[],
        epoch_base=float(epoch),
        total_units=total_units,
        limit_factor=limit_factor,
    )


def _header_int(header: dict[str, str], key: str) -> int | None:
    """A positive integer header value, or None when absent or unusable."""
    text = header.get(key)
    if text is None:
        return None
    try:
        value = int(float(text.split()[0]))
    except (ValueError, IndexError, OverflowError):
        return None
    return value if value > 0 else None


def write_swf(trace: Trace, path: str | os.PathLike[str]) -> None:
    """Write ``trace`` as SWF (atomically), so :func:`read_swf` gives the same trace back.

    Header: ``MaxJobs``, ``MaxRecords``, ``MaxProcs`` (and ``MaxNodes`` when the unit is
    nodes), ``UnixStartTime``. Users and groups are written as their names when those are
    integers, else as code + 1. Exit code 0 -> status 1, anything else -> status 0.
    """
    n = len(trace)
    lines = ["; Version: 2.2", "; Computer: written by hpcsim (sim.traces.swf.write_swf)"]
    lines += [f"; MaxJobs: {n}", f"; MaxRecords: {n}"]
    if trace.total_units:
        lines.append(f"; MaxProcs: {int(trace.total_units)}")
        if trace.unit == "nodes":
            lines.append(f"; MaxNodes: {int(trace.total_units)}")
    lines.append(f"; UnixStartTime: {int(math.floor(trace.start_epoch))}")
    shift = trace.start_epoch - math.floor(trace.start_epoch)
    users = _id_column(trace.user, trace.user_names)
    groups = _id_column(trace.group, trace.group_names)
    wait = trace.recorded_start - trace.submit
    for i in range(n):
        w = wait[i]
        lines.append(
            f"{int(trace.job_id[i])} {_num(trace.submit[i] + shift)} "
            f"{_num(w) if np.isfinite(w) else -1} {_num(trace.runtime[i])} "
            f"{int(trace.units[i])} -1 -1 {int(trace.units[i])} {_num(trace.limit[i])} -1 "
            f"{0 if trace.exit_code[i] else 1} {users[i]} {groups[i]} -1 -1 -1 -1 -1"
        )
    _atomic_write(Path(path), "\n".join(lines) + "\n")


def _num(x: float) -> str:
    """Integers without a decimal point; other values exactly (repr round-trips)."""
    x = float(x)
    return str(int(x)) if x.is_integer() else repr(x)


def _id_column(codes: np.ndarray, names: list[str]) -> list[int]:
    if names and all(re.fullmatch(r"-?\d+", s) for s in names):
        table = [int(s) for s in names]
        return [table[int(c)] for c in codes]
    return [int(c) + 1 for c in codes]


def _atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and ``os.replace`` (gzip for .gz)."""
    data = text.encode()
    if path.suffix == ".gz":
        data = gzip.compress(data, mtime=0)
    fd, tmp = tempfile.mkstemp(dir=path.parent or Path("."), prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
