"""Slurm accounting exports (``sacct`` output) as job traces.

Layouts: ``--parsable2`` (``|``-separated; ``--parsable``'s trailing ``|`` too), TAB-separated
rows (also under a space-aligned header, as the LS6 export has), and sacct's default
fixed-width table (columns cut at the dashes line), or plain whitespace-separated rows when
no dashes line exists. An optional first line holding only a row count is ignored.

Size: ``unit="nodes"`` (default) from NNodes/AllocNodes/ReqNodes, ``"procs"`` from
NCPUS/AllocCPUS/ReqCPUS, ``"gpus"`` from the ``gres/gpu`` count in AllocTRES/ReqTRES (jobs
without GPUs are skipped, counted).

Rows: job steps (``123.batch``, ``123.0``, ``123.extern``) are skipped silently; array
tasks (``123_4``) and het-job parts (``123+1``) are kept, numbered by ``JobIDRaw`` when
that column exists, else given fresh ids above the file's largest plain id, in file order.
Jobs that never started (Start ``Unknown``/``None``) or never ended are skipped (counted).
Run time = End - Start (``ElapsedRaw``/``Elapsed`` when End is absent). Limits: minutes or
Slurm durations; ``UNLIMITED``/``Partition_Limit`` count as unknown (see
:func:`sim.traces.assemble.fallback_limit`). ``ExitCode`` ``a:b`` -> ``a``, or ``128 + b``
when killed by signal ``b``; without that column, State ``COMPLETED`` -> 0, ``FAILED``,
``NODE_FAIL``, ``OUT_OF_MEMORY``, ``TIMEOUT``, ``CANCELLED`` -> 1. A ``Priority`` column is
kept as the trace's ``recorded_priority`` (blank: NaN). Naive times are read in ``tz``
(default UTC).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np

from hpcbase.slurmtime import parse_duration
from sim.traces.assemble import DEFAULT_LIMIT_FACTOR, assemble
from sim.traces.diagnostics import Diagnostics
from sim.traces.model import Trace, TraceError
from sim.traces.timestamps import TimeParser, zone

# Accepted header names (lower case) for each role, in order of preference.
ROLES: dict[str, tuple[str, ...]] = {
    "id": ("jobidraw", "jobid"),
    "shown_id": ("jobid",),
    "name": ("jobname",),
    "partition": ("partition",),
    "user": ("user", "uid"),
    "group": ("group", "gid"),
    "submit": ("submit",),
    "start": ("start",),
    "end": ("end",),
    "elapsed_raw": ("elapsedraw",),
    "elapsed": ("elapsed",),
    "limit": ("timelimitraw", "timelimitr", "timelimit"),
    "exit": ("exitcode",),
    "state": ("state",),
    "nodes": ("nnodes", "allocnodes", "reqnodes"),
    "procs": ("ncpus", "alloccpus", "reqcpus"),
    "gpus": ("alloctres", "reqtres"),
    "priority": ("priority",),
}
UNITS = {"nodes": "nodes", "procs": "procs", "cpus": "procs", "gpus": "gpus"}


def counted_unit(unit: str | None, path: str, dialect: str) -> str:
    """The unit a Slurm log is read in (nodes by default; cpus are procs)."""
    counted = UNITS.get((unit or "nodes").lower())
    if counted is None:
        raise TraceError(
            f"{path}: {dialect} traces count nodes, procs (cpus) or gpus, not {unit!r}"
        )
    return counted


_FAILED_STATES = (
    "FAILED",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "TIMEOUT",
    "CANCELLED",
    "BOOT_FAIL",
    "DEADLINE",
    "PREEMPTED",
)
_ID = re.compile(r"^(\d+)(?:([_+])(\d+))?$")
_DASHES = re.compile(r"-+")


def read_sacct(
    text: str,
    path: str,
    *,
    strict: bool = False,
    unit: str | None = None,
    total_units: int | None = None,
    tz: str | None = None,
    limit_factor: float = DEFAULT_LIMIT_FACTOR,
) -> Trace:
    """Parse a sacct export ``text`` (read from ``path``, named in diagnostics)."""
    unit = counted_unit(unit, path, "sacct")
    diag = Diagnostics(path, strict)
    lines = text.split("\n")
    k = _first_content(lines)
    if k < len(lines) and lines[k].strip().isdigit():
        k = _first_content(lines, k + 1)
    if k >= len(lines):
        raise TraceError(f"{path}: no sacct header line")
    header_no = k + 1
    split, columns, body = _layout(lines, k)
    col = _roles(columns, path, header_no, unit)
    parse_time = TimeParser(zone(tz))
    rows = _Rows()
    n_cols = len(columns)
    for lineno in range(body, len(lines)):
        line = lines[lineno]
        if not line.strip():
            continue
        fields = split(line)
        if len(fields) != n_cols:
            hint = " (a field holds a TAB?)" if len(fields) > n_cols and "\t" in line else ""
            found = f"expected {n_cols} fields, found {len(fields)}{hint}"
            diag.bad(lineno + 1, f"{found}; row skipped")
            continue
        try:
            _parse_row(fields, col, unit, lineno + 1, parse_time, rows, diag)
        except (ValueError, OverflowError, OSError) as exc:
            diag.bad(lineno + 1, f"{exc}; row skipped")
    if not rows.line:
        diag.raise_if_strict()
        if not diag.warnings():
            raise TraceError(f"{path}: sacct export holds no job rows")
        raise TraceError(f"{path}: no usable jobs ({diag.warnings()[-1].reason})")
    return assemble(
        diag,
        fmt="sacct",
        unit=unit,
        lines=np.array(rows.line),
        job_id=rows.job_ids(),
        submit=np.array(rows.submit),
        runtime=np.array(rows.runtime),
        limit=np.array(rows.limit),
        units=np.array(rows.units),
        users=rows.user,
        groups=rows.group,
        exit_code=np.array(rows.exit),
        recorded_start=np.array(rows.start),
        recorded_priority=np.array(rows.priority) if "priority" in col else None,
        names=rows.name,
        partitions=rows.partition,
        total_units=total_units,
        limit_factor=limit_factor,
    )


class _Rows:
    """Columns of the accepted rows, in file order."""

    def __init__(self) -> None:
        self.line: list[int] = []
        self.plain_id: list[int] = []  # -1 for array tasks without JobIDRaw
        self.submit: list[float] = []
        self.start: list[float] = []
        self.runtime: list[float] = []
        self.limit: list[float] = []
        self.units: list[int] = []
        self.user: list[str] = []
        self.group: list[str] = []
        self.exit: list[int] = []
        self.name: list[str] = []
        self.partition: list[str] = []
        self.priority: list[float] = []

    def job_ids(self) -> np.ndarray:
        """Plain ids as they are; the others numbered after the largest, in file order."""
        ids = np.array(self.plain_id, dtype=np.int64)
        fresh = ids < 0
        if fresh.any():
            top = int(ids.max()) if (~fresh).any() else 0
            ids[fresh] = top + 1 + np.arange(int(fresh.sum()))
        return ids


def _first_content(lines: list[str], start: int = 0) -> int:
    k = start
    while k < len(lines) and not lines[k].strip():
        k += 1
    return k


def _layout(lines: list[str], k: int) -> tuple[Callable[[str], list[str]], list[str], int]:
    """How to split rows: returns (split function, column names, index of the first row)."""
    header = lines[k]
    body = k + 1
    dashes = None
    if body < len(lines) and re.fullmatch(r"[-\s|+]+", lines[body]) and "-" in lines[body]:
        dashes = lines[body]
        body += 1
    if "|" in header:
        trailing = header.rstrip().endswith("|")
        columns = header.strip().split("|")
        if trailing:
            columns = columns[:-1]

        def split(line: str) -> list[str]:
            parts = line.rstrip("\r\n").split("|")
            if trailing and parts and parts[-1].strip() == "":
                parts = parts[:-1]
            return parts

        return split, [c.strip() for c in columns], body
    columns = header.split("\t") if "\t" in header else header.split()
    sample = [ln for ln in lines[body : body + 200] if ln.strip()][:50]
    tabbed = sum(len(ln.split("\t")) == len(columns) for ln in sample)
    if "\t" in header or (sample and tabbed * 2 > len(sample)):
        return _split_tabs, [c.strip() for c in columns], body
    if dashes is not None:
        spans = [(m.start(), m.end()) for m in _DASHES.finditer(dashes)]
        fixed = [header[a:b].strip() for a, b in spans]
        if len(fixed) == len(header.split()):
            return (lambda line: [line[a:b].strip() for a, b in spans]), fixed, body
    return str.split, header.split(), body


def _split_tabs(line: str) -> list[str]:
    return line.rstrip("\r\n").split("\t")


def _roles(columns: list[str], path: str, header_no: int, unit: str) -> dict[str, int]:
    """Column index of each role present; TraceError naming what is missing."""
    lower = [c.strip().lower() for c in columns]
    col: dict[str, int] = {}
    for role, names in ROLES.items():
        for name in names:
            if name in lower:
                col[role] = lower.index(name)
                break
    missing = [r for r in ("id", "submit", "start", unit) if r not in col]
    if "end" not in col and "elapsed_raw" not in col and "elapsed" not in col:
        missing.append("end (or elapsed)")
    if missing:
        want = {
            "id": "JobID",
            "submit": "Submit",
            "start": "Start",
            "nodes": "NNodes/AllocNodes",
            "procs": "NCPUS/AllocCPUS",
            "gpus": "AllocTRES/ReqTRES",
        }
        lacking = ", ".join(want.get(m, m) for m in missing)
        raise TraceError(
            f"{path}:{header_no}: sacct header lacks {lacking}; found: {' '.join(columns)[:200]}"
        )
    return col


def _parse_row(
    f: list[str],
    col: dict[str, int],
    unit: str,
    line: int,
    parse_time: TimeParser,
    rows: _Rows,
    diag: Diagnostics,
) -> None:
    raw_id = f[col["id"]].strip()
    shown = f[col["shown_id"]].strip() if "shown_id" in col else raw_id
    if "." in raw_id or "." in shown:
        return  # a job step
    start = parse_time(f[col["start"]])
    if start is None:
        diag.skip("never started (Start Unknown/None)", line)
        return
    m = _ID.match(raw_id)
    if m is None:
        raise ValueError(f"bad job id {raw_id[:40]!r}")
    plain = int(m.group(1)) if m.group(2) is None else -1
    if plain > 2**62:
        raise ValueError(f"job id out of range {raw_id[:40]!r}")
    submit = parse_time(f[col["submit"]])
    if submit is None:
        raise ValueError(f"missing submit time {f[col['submit']].strip()[:40]!r}")
    if "end" in col:
        end = parse_time(f[col["end"]])
        if end is None:
            diag.skip("never ended (End Unknown: still running at export)", line)
            return
        runtime = end - start
    elif "elapsed_raw" in col:
        runtime = float(f[col["elapsed_raw"]])
    else:
        runtime = parse_duration(f[col["elapsed"]], bare_unit=1.0)
    if not runtime >= 0 or math.isinf(runtime):
        raise ValueError(f"negative run time ({runtime:g} s: End before Start)")
    size_text = f[col[unit]].strip()
    size = _gpus(size_text) if unit == "gpus" else _int(size_text, "size")
    if unit == "gpus" and size == 0:
        diag.skip("uses no GPUs (no gres/gpu in its TRES)", line)
        return
    if not 0 < size < 2**31:
        raise ValueError(f"size out of range {size_text[:20]!r}")
    limit_text = f[col["limit"]].strip() if "limit" in col else ""
    limit = parse_duration(limit_text) if limit_text else math.inf
    exit_code = _exit_code(f, col)
    priority = _priority(f[col["priority"]]) if "priority" in col else math.nan
    rows.line.append(line)
    rows.plain_id.append(plain)
    rows.submit.append(submit)
    rows.start.append(start)
    rows.runtime.append(runtime)
    rows.limit.append(limit)
    rows.units.append(size)
    rows.user.append(f[col["user"]].strip() if "user" in col else "")
    rows.group.append(f[col["group"]].strip() if "group" in col else "")
    rows.exit.append(exit_code)
    rows.priority.append(priority)
    rows.name.append(f[col["name"]].strip() if "name" in col else "")
    # a job submitted to several partitions ran in the first sacct names
    rows.partition.append(f[col["partition"]].strip().split(",")[0] if "partition" in col else "")


def _int(text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or abs(value) >= 2**31:
        raise ValueError(f"bad {what} {text[:20]!r}")
    return value


def _priority(text: str) -> float:
    """A recorded priority: a non-negative number, or NaN when blank."""
    text = text.strip()
    if not text:
        return math.nan
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value < math.inf:
        raise ValueError(f"bad priority {text[:20]!r}")
    return value


def _gpus(tres: str) -> int:
    """GPUs in a TRES list (``cpu=8,gres/gpu=4,node=1``; typed ``gres/gpu:a100=4`` too)."""
    total = typed = 0
    for item in tres.split(","):
        key, _, value = item.strip().partition("=")
        if key == "gres/gpu":
            total = _int(value, "GPU count")
        elif key.startswith("gres/gpu:"):
            typed += _int(value, "GPU count")
    return total or typed


def _exit_code(f: list[str], col: dict[str, int]) -> int:
    if "exit" in col:
        text = f[col["exit"]].strip()
        code, _, signal = text.partition(":")
        c = _int(code, "exit code")
        s = _int(signal, "exit code") if signal else 0
        return 128 + s if s and not c else c
    if "state" in col:
        return int(f[col["state"]].strip().upper().startswith(_FAILED_STATES))
    return 0
