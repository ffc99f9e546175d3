"""A plain CSV form for GPU-cluster (or any) traces; the format is in docs/traces.md.

Header required (names case-insensitive, any order, extra columns ignored): a job id, a
user, submit and start times, an end time or a duration, and a size (nodes, gpus or cpus).
Each role takes the usual spellings (``job_id``, ``jobid``, ``id``; ``submit``,
``submit_time``, ``time_submit``; ``gpus``, ``gpu_num``, ``num_gpus``; ...: :data:`ROLES`,
compared without case, ``_``, ``-`` or spaces). Optional: ``limit`` (unknown without it: the
run-time fallback), ``group``, ``name``, ``exit_code``, ``partition`` (or ``queue``). Times
are ISO 8601 (naive ones read in ``tz``, default UTC) or Unix seconds. ``limit`` and
``duration`` are seconds (a bare number) or a Slurm duration (``1:00:00``,
``2-00:00:00``, ``UNLIMITED``). Empty/``Unknown`` start or end: the job never ran and is
skipped (counted).
"""

from __future__ import annotations

import csv
import io
import math

import numpy as np

from hpcbase.slurmtime import parse_duration
from sim.traces.assemble import DEFAULT_LIMIT_FACTOR, assemble
from sim.traces.diagnostics import Diagnostics
from sim.traces.model import Trace, TraceError
from sim.traces.timestamps import TimeParser, zone

#: Each role's accepted header names, normalised (:func:`_norm`), in order of preference.
ROLES: dict[str, tuple[str, ...]] = {
    "job_id": ("jobid", "id", "jobnumber", "idjob"),
    "user": ("user", "userid", "uid", "username", "iduser"),
    "group": ("group", "groupid", "gid"),
    "name": ("name", "jobname"),
    "submit": ("submit", "submittime", "timesubmit", "submitted", "submissiontime"),
    "start": ("start", "starttime", "timestart", "started"),
    "end": ("end", "endtime", "timeend", "ended", "finish", "finishtime"),
    "duration": ("duration", "runtime", "elapsed", "elapsedraw", "runtimesec"),
    "limit": ("limit", "limitseconds", "requestedtime"),  # seconds (Slurm's own are minutes)
    "exit_code": ("exitcode", "exit"),
    "partition": ("partition", "queue"),
    "nodes": (
        "nodes", "nnodes", "nodenum", "numnodes", "nodecount", "nodesalloc", "allocnodes",
        "nodesreq", "reqnodes",
    ),
    "gpus": ("gpus", "ngpus", "gpunum", "numgpus", "gpucount", "gpusalloc", "allocgpus"),
    "cpus": (
        "cpus", "ncpus", "cpunum", "numcpus", "procs", "nprocs", "cores", "cpusalloc",
        "alloccpus", "cpusreq", "reqcpus",
    ),
}  # fmt: skip
#: The roles a header must have (and ``end`` or ``duration``, and a size).
REQUIRED = ("job_id", "user", "submit", "start")
#: Size roles, in order of preference, and the unit each counts.
SIZE_COLUMNS = {"nodes": "nodes", "gpus": "gpus", "cpus": "procs"}


def _norm(name: str) -> str:
    return "".join(c for c in name.strip().lower() if c.isalnum())


def header_roles(header: list[str]) -> dict[str, int]:
    """Each role's column index, where the header has one of its names (the first name in
    :data:`ROLES`' order that the header holds)."""
    index: dict[str, int] = {}
    for i, h in enumerate(header):
        index.setdefault(_norm(h), i)
    return {
        role: next(index[n] for n in names if n in index)
        for role, names in ROLES.items()
        if any(n in index for n in names)
    }


def read_csv_trace(
    text: str,
    path: str,
    *,
    strict: bool = False,
    unit: str | None = None,
    total_units: int | None = None,
    tz: str | None = None,
    limit_factor: float = DEFAULT_LIMIT_FACTOR,
) -> Trace:
    """Parse the CSV form ``text`` (read from ``path``, named in diagnostics)."""
    diag = Diagnostics(path, strict)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise TraceError(f"{path}: empty CSV") from None
    except csv.Error as exc:
        raise TraceError(f"{path}:1: unreadable CSV header: {exc}") from None
    col = header_roles(header)
    wanted = _size_role(unit)
    sizes = [c for c in SIZE_COLUMNS if c in col and wanted in (None, c)]
    missing = [c for c in REQUIRED if c not in col]
    missing += [] if "end" in col or "duration" in col else ["end or duration"]
    missing += [] if sizes else [wanted or "nodes, gpus or cpus"]
    if missing:
        raise TraceError(
            f"{path}:1: CSV header lacks {', '.join(missing)}; found: {','.join(header)[:200]}"
            " (see docs/traces.md for the CSV form)"
        )
    size_col = sizes[0]
    if "limit" not in col:
        diag.note("no time-limit column: every job's limit is its run time (rounded up)")
    parse_time = TimeParser(zone(tz), allow_unix=True)
    out: dict[str, list] = {
        k: []
        for k in (
            "line",
            "id",
            "submit",
            "start",
            "run",
            "limit",
            "units",
            "user",
            "group",
            "exit",
            "name",
            "partition",
        )
    }
    width = len(header)
    try:
        for row in reader:
            line = reader.line_num
            if not any(c.strip() for c in row):
                continue
            if len(row) != width:
                diag.bad(line, f"expected {width} fields, found {len(row)}; row skipped")
                continue
            try:
                _parse_row(row, col, size_col, line, parse_time, out, diag)
            except (ValueError, OverflowError, OSError) as exc:
                diag.bad(line, f"{exc}; row skipped")
    except csv.Error as exc:
        raise TraceError(f"{path}:{reader.line_num}: unreadable CSV: {exc}") from None
    if not out["line"]:
        diag.raise_if_strict()
        if not diag.warnings():
            raise TraceError(f"{path}: CSV holds no job rows")
        raise TraceError(f"{path}: no usable jobs ({diag.warnings()[-1].reason})")
    return assemble(
        diag,
        fmt="csv",
        unit=SIZE_COLUMNS[size_col] if unit is None or _size_role(unit) else unit,
        lines=np.array(out["line"]),
        job_id=np.array(out["id"], dtype=np.int64),
        submit=np.array(out["submit"]),
        runtime=np.array(out["run"]),
        limit=np.array(out["limit"]),
        units=np.array(out["units"], dtype=np.int64),
        users=out["user"],
        groups=out["group"],
        exit_code=np.array(out["exit"], dtype=np.int64),
        recorded_start=np.array(out["start"]),
        names=out["name"],
        partitions=out["partition"],
        total_units=total_units,
        limit_factor=limit_factor,
    )


def _size_role(unit: str | None) -> str | None:
    """The size role ``unit`` names (``procs`` is ``cpus``), or None."""
    u = {"procs": "cpus"}.get((unit or "").lower(), (unit or "").lower())
    return u if u in SIZE_COLUMNS else None


def _parse_row(
    row: list[str],
    col: dict[str, int],
    size_col: str,
    line: int,
    parse_time: TimeParser,
    out: dict[str, list],
    diag: Diagnostics,
) -> None:
    def get(name: str) -> str:
        return row[col[name]].strip() if name in col else ""

    start = parse_time(get("start"))
    if "end" in col:
        end = parse_time(get("end"))
    else:
        text = get("duration")
        run = parse_duration(text, bare_unit=1.0) if start is not None and text else None
        if run is not None and not 0 <= run < math.inf:
            raise ValueError(f"bad duration {text[:20]!r}")
        end = None if start is None or run is None else start + run
    if start is None or end is None:
        diag.skip("never ran (start or end empty/Unknown)", line)
        return
    submit = parse_time(get("submit"))
    if submit is None:
        raise ValueError(f"missing submit time {get('submit')[:40]!r}")
    try:
        job_id = int(get("job_id"))
    except ValueError:
        raise ValueError(f"bad job_id {get('job_id')[:40]!r}") from None
    if job_id < 0 or job_id > 2**62:
        raise ValueError(f"job_id out of range: {job_id}")
    if end < start:
        raise ValueError(f"end before start ({end - start:g} s)")
    try:
        size = int(get(size_col))
    except ValueError:
        raise ValueError(f"bad {size_col} {get(size_col)[:20]!r}") from None
    if not 0 < size < 2**31:
        raise ValueError(f"{size_col} out of range: {size}")
    limit_text = get("limit")
    limit = parse_duration(limit_text, bare_unit=1.0) if limit_text else math.inf
    exit_text = get("exit_code")
    try:
        exit_code = int(exit_text) if exit_text else 0
        if abs(exit_code) >= 2**31:
            raise ValueError
    except ValueError:
        raise ValueError(f"bad exit_code {exit_text[:20]!r}") from None
    out["line"].append(line)
    out["id"].append(job_id)
    out["submit"].append(submit)
    out["start"].append(start)
    out["run"].append(end - start)
    out["limit"].append(limit)
    out["units"].append(size)
    out["user"].append(get("user"))
    out["group"].append(get("group"))
    out["exit"].append(exit_code)
    out["name"].append(get("name"))
    out["partition"].append(get("partition"))
