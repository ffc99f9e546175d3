"""Standard Workload Format (Parallel Workloads Archive): reader and writer.

Rules (also in docs/traces.md):

* 18 whitespace-separated fields per job; any number of extra trailing fields is ignored
  (queue names, node properties, brace lists with spaces inside such as ``{n1, n2}``);
  fewer is a malformed row. ``;`` lines are comments; ``; Key: value`` header lines give
  ``MaxProcs``, ``MaxNodes`` and ``UnixStartTime``. The header is optional.
* times: offsets from ``UnixStartTime`` (0 without it), unless the submit times are
  themselves Unix seconds (see :func:`absolute_times`); then they are read as such.
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
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from hpcbase.atomic import atomic_write
from sim.traces.assemble import DEFAULT_LIMIT_FACTOR, assemble
from sim.traces.diagnostics import Diagnostics
from sim.traces.model import Trace, TraceError

N_FIELDS = 18
#: The standard fields, in order, as diagnostics name them.
FIELD_NAMES = (
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable number",
    "queue number",
    "partition number",
    "preceding job number",
    "think time",
)
#: Earliest submit (s) from which header-less submit times are taken as Unix seconds
#: (1973-03-03): an offset-based log starts at or near 0.
ABSOLUTE_MIN = 1e8
# A field: a run of non-blank characters in which a {...} group may hold blanks.
_FIELD = re.compile(r"(?:[^\s{]+|\{[^}\n]*\}?)+")
_ODD_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
#: words pandas reads as 1 and 0 where a number is expected (the other parsers refuse them)
_BOOLEANS = frozenset(("True", "TRUE", "true", "False", "FALSE", "false"))
#: Tests switch the vectorised parsers off to check them against the line-by-line one.
FAST_PATHS = True
_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
_HEADER = re.compile(r"^[ \t]*;[ \t]*([A-Za-z][A-Za-z0-9_ ]*?)[ \t]*:([^\n]*)$", re.M)
_COMMENT = re.compile(r"^[ \t]*;[^\n]*", re.M)
QUEUE = 14  # "queue number" (0-based field index)
PARTITION = 15  # "partition number"
# Field indices (0-based) used here.
JOB, SUBMIT, WAIT, RUN, ALLOC, REQ_PROCS, REQ_TIME, STATUS, USER, GROUP = (
    0,
    1,
    2,
    3,
    4,
    7,
    8,
    10,
    11,
    12,
)
_CHECKED = {
    SUBMIT: "submit time",
    WAIT: "wait time",
    RUN: "run time",
    ALLOC: "processors",
    REQ_PROCS: "requested processors",
    REQ_TIME: "requested time",
}
#: user and group ids only name a user (the reader codes them densely): any integer a
#: double holds exactly will do (some converted logs carry 14-digit hashes)
_BOUND = {USER: 2**53, GROUP: 2**53}
_INTEGRAL = {
    ALLOC: "processors",
    REQ_PROCS: "requested processors",
    STATUS: "status",
    USER: "user",
    GROUP: "group",
}


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
    fast = _pandas_table(text) if FAST_PATHS else None
    if fast is None:
        body = _COMMENT.sub("", text)
        fast = _fast_table(body) if FAST_PATHS else None
    table, lines = fast if fast is not None else _slow_table(body.split("\n"), diag)
    if not lines.size and not diag.warnings():
        raise TraceError(f"{path}: SWF file holds no job lines")
    table, lines = _validate(table, lines, diag)
    return _build(table, lines, header, diag, unit, total_units, limit_factor)


def split_fields(line: str) -> list[str]:
    """The fields of an SWF line: blank-separated, a ``{...}`` group being one field."""
    return _FIELD.findall(line)


def looks_like_swf_row(line: str) -> bool:
    """True when ``line`` has at least 18 fields and the first 18 are numbers."""
    fields = split_fields(line)
    return len(fields) >= N_FIELDS and all(_NUMBER.match(f) for f in fields[:N_FIELDS])


def absolute_times(earliest_submit: float, unix_start: int | None) -> bool:
    """Whether SWF submit times are Unix seconds rather than offsets from the log's start.

    The standard writes offsets from ``UnixStartTime``, so an offset-based log starts at or
    near 0. Some archives (and ``;``-less exports) write Unix seconds instead. They are taken
    as such when the earliest submit is at least :data:`ABSOLUTE_MIN` (1973-03-03) and,
    if the header gives ``UnixStartTime``, not before it (as offsets they would put the log
    more than its own age after its start).
    """
    if not earliest_submit >= ABSOLUTE_MIN:
        return False
    return unix_start is None or earliest_submit >= unix_start


def _pandas_table(text: str) -> tuple[np.ndarray, np.ndarray] | None:
    """pandas' C parser over the whole text: the fast path for clean files (comment lines
    anywhere, the widest row first when rows carry extra fields). None when anything is
    unusual (non-ASCII, control characters, a non-number, a short row), so that the other
    parsers give the exact per-line diagnostics."""
    if not text.isascii() or _ODD_CONTROL.search(text) is not None:
        return None
    import csv
    import io

    import pandas as pd

    lines = text.split("\n")
    data_lines = [i for i, ln in enumerate(lines, 1) if ln.lstrip()[:1] not in ("", ";")]
    if not data_lines or _has_boolean_field(text, lines, data_lines):
        return None
    try:
        frame = pd.read_csv(
            io.BytesIO(text.encode("ascii")),
            sep=r"\s+",
            header=None,
            comment=";",
            usecols=range(N_FIELDS),
            dtype=np.float64,
            engine="c",
            quoting=csv.QUOTE_NONE,
        )
    except (ValueError, IndexError, TypeError, OverflowError, pd.errors.ParserError):
        return None
    table = frame.to_numpy(dtype=np.float64)
    if table.shape != (len(data_lines), N_FIELDS) or np.isnan(table).any():
        return None
    return table, np.asarray(data_lines, dtype=np.int64)


def _has_boolean_field(text: str, lines: list[str], data_lines: list[int]) -> bool:
    """Whether a data line (1-based numbers) holds a field pandas would read as a boolean;
    a quick scan first, since clean files have none."""
    if not any(part in text for part in ("rue", "RUE", "alse", "ALSE")):
        return False
    return any(not _BOOLEANS.isdisjoint(lines[i - 1].split(";", 1)[0].split()) for i in data_lines)


def _fast_table(body: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Vectorised parse when every non-blank line has >= 18 fields whose first 18 are
    numbers (any extra fields are blanked out first); None otherwise."""
    if not body.isascii():
        return None
    raw = np.frombuffer(body.encode("ascii"), dtype=np.uint8)
    if not raw.size:
        return None
    newline = raw == 10
    gap = newline | (raw == 32) | ((raw >= 9) & (raw <= 13)) | ((raw >= 28) & (raw <= 31))
    first = ~gap
    first[1:] &= gap[:-1]
    starts = np.flatnonzero(first)
    if not starts.size:
        return None
    line_of = np.searchsorted(np.flatnonzero(newline), starts)  # 0-based line of each token
    counts = np.bincount(line_of)
    used = np.flatnonzero(counts)
    if counts[used].min() < N_FIELDS:
        return None
    first_token = np.concatenate(([0], np.cumsum(counts)[:-1]))
    position = np.arange(starts.size) - first_token[line_of]
    n_values = starts.size
    if counts[used].max() > N_FIELDS:
        # blank every byte of the fields after the 18th (their content is not read)
        extra = position >= N_FIELDS
        token_of_byte = np.cumsum(first, dtype=np.int32) - 1
        drop = extra[np.maximum(token_of_byte, 0)] & ~gap & (token_of_byte >= 0)
        data = raw.copy()
        data[drop] = 32
        body = data.tobytes().decode("ascii")
        n_values = int((~extra).sum())
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            values = np.fromstring(body, sep=" ")
    except (ValueError, DeprecationWarning):  # a field that is not a number
        return None
    if values.size != n_values:
        return None
    return values.reshape(-1, N_FIELDS), used.astype(np.int64) + 1


def _slow_table(lines: list[str], diag: Diagnostics) -> tuple[np.ndarray, np.ndarray]:
    """Line by line, reporting rows with too few fields or non-numbers (naming the field)."""
    rows: list[list[float]] = []
    good: list[int] = []
    for lineno, line in enumerate(lines, 1):
        parts = split_fields(line)
        if not parts:
            continue
        if len(parts) < N_FIELDS:
            diag.bad(lineno, f"expected {N_FIELDS} SWF fields, found {len(parts)}; row skipped")
            continue
        try:
            rows.append([float(x) for x in parts[:N_FIELDS]])
        except ValueError:
            k = next(k for k, x in enumerate(parts[:N_FIELDS]) if not _is_float(x))
            diag.bad(
                lineno,
                f"field {k + 1} ({FIELD_NAMES[k]}) is not a number: {parts[k][:40]!r}; row skipped",
            )
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
    flag(
        (jid < 0) | (jid != np.floor(jid)) | (jid > 2**62),
        lambda i: f"job number {table[i, JOB]:g} is not a non-negative integer",
    )
    for col, what in _CHECKED.items():
        v = table[:, col]
        flag(
            (v < 0) & (v != -1), lambda i, col=col, what=what: f"negative {what} {table[i, col]:g}"
        )
    flag(table[:, SUBMIT] < 0, lambda i: "unknown submit time (-1)")
    for col, what in _INTEGRAL.items():
        flag(
            np.abs(table[:, col]) >= _BOUND.get(col, 2**31),
            lambda i, col=col, what=what: f"{what} {table[i, col]:g} out of range",
        )
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
    for mask, reason in (
        (no_size, "unknown size (processors -1 or 0)"),
        (no_run & ~no_size, "unknown run time (-1; cancelled before it ran?)"),
    ):
        if mask.any():
            diag.skip(reason, int(lines[np.flatnonzero(mask)[0]]), int(mask.sum()))
    keep = ~(no_size | no_run)
    t, lines = table[keep], lines[keep]
    if total_units is None:
        total_units = _header_int(header, "maxprocs") or _header_int(header, "maxnodes")
        if total_units is None and t.shape[0]:
            diag.note(
                "no MaxProcs/MaxNodes header: the machine size is the recorded schedule's "
                f"peak use, else the largest job's ({int(size[keep].max())} procs); give "
                "the real size (--nodes)"
            )
    unix_start = _header_int(header, "unixstarttime")
    epoch = unix_start or 0
    if t.shape[0] and absolute_times(float(t[:, SUBMIT].min()), unix_start):
        first = float(t[:, SUBMIT].min())
        when = _iso(first)
        ignored = f"; UnixStartTime {unix_start} ignored" if unix_start else ""
        diag.note(
            f"submit times are absolute Unix seconds (earliest {first:.0f} = {when}), "
            f"not offsets{ignored}"
        )
        epoch = 0
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
        partitions=_queues(t),
        epoch_base=float(epoch),
        total_units=total_units,
        limit_factor=limit_factor,
    )


def _queues(t: np.ndarray) -> list[str]:
    """Each job's partition name ("" where unknown, -1): field 15, the queue number, where
    the log fills it; else field 16, the partition number (a Slurm site's log converted by
    sacct keeps its partitions there)."""
    for field in (QUEUE, PARTITION):
        if t.shape[1] > field and (t[:, field] >= 0).any():
            return ["" if v < 0 else str(int(v)) for v in t[:, field].tolist()]
    return []


def _iso(t: float) -> str:
    try:
        return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return "out of range"


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
    integers, else as code + 1. Exit code 0 -> status 1, anything else -> status 0. The
    queue number is the partition where the names are numbers, else the name's rank.
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
    queues = _queue_column(trace.partitions, n)
    for i in range(n):
        w = wait[i]
        lines.append(
            f"{int(trace.job_id[i])} {_num(trace.submit[i] + shift)} "
            f"{_num(w) if np.isfinite(w) else -1} {_num(trace.runtime[i])} "
            f"{int(trace.units[i])} -1 -1 {int(trace.units[i])} {_num(trace.limit[i])} -1 "
            f"{0 if trace.exit_code[i] else 1} {users[i]} {groups[i]} -1 {queues[i]} -1 -1 -1"
        )
    _write_text(Path(path), "\n".join(lines) + "\n")


def _queue_column(partitions: list[str], n: int) -> list[int]:
    """Each job's SWF queue number: its partition's where the names are numbers, else the
    name's rank among them (1, 2, ...); -1 where it names none."""
    if not partitions:
        return [-1] * n
    names = sorted({p for p in partitions if p})
    if all(re.fullmatch(r"\d+", p) for p in names):
        return [int(p) if p else -1 for p in partitions]
    rank = {p: k + 1 for k, p in enumerate(names)}
    return [rank[p] if p else -1 for p in partitions]


def _num(x: float) -> str:
    """Integers without a decimal point; other values exactly (repr round-trips)."""
    x = float(x)
    return str(int(x)) if x.is_integer() else repr(x)


def _id_column(codes: np.ndarray, names: list[str]) -> list[int]:
    if names and all(re.fullmatch(r"-?\d+", s) for s in names):
        table = [int(s) for s in names]
        return [table[int(c)] for c in codes]
    return [int(c) + 1 for c in codes]


def _write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (gzip for .gz)."""
    data = text.encode()
    if path.suffix == ".gz":
        data = gzip.compress(data, mtime=0)
    atomic_write(path, data)
