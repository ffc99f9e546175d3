"""Slurm's jobcomp/filetxt log (``JobCompType=jobcomp/filetxt``) as a job trace.

One ``Key=Value`` line per finished job, as ``slurmctld`` writes it where a site keeps no
accounting database::

    JobId=5 UserId=alice(1001) GroupId=... Name=run JobState=COMPLETED Partition=debug
    TimeLimit=60 StartTime=2026-11-22T05:52:58 EndTime=2026-11-22T05:53:18 NodeCnt=1
    ProcCnt=4 ... SubmitTime=2026-11-22T05:52:57 EligibleTime=... ExitCode=0:0

Lines are split into keys and values by :func:`hpcbase.slurm.parse.parse_kv_line` (free-text
values such as ``Name`` may hold spaces) and checked field by field by
:func:`hpcbase.slurm.parse.job_from_kv` (the suite's one reading of Slurm's job records), so
a bad field is reported with its name and line. Times are read in ``tz`` (default UTC) like
the other readers' naive times. ``TimeLimit`` is minutes (``UNLIMITED`` counts as unknown);
size: ``unit="nodes"`` (``NodeCnt``, default), ``"procs"`` (``ProcCnt``) or ``"gpus"``
(``gres/gpu`` in ``Tres``). Jobs that never started (cancelled while pending:
``NodeList=(null)``, no ``StartTime``) are skipped, counted. The log is in completion order;
the trace is sorted by submit time as always.
"""

from __future__ import annotations

import math

import numpy as np

from hpcbase.slurm.errors import SlurmError
from hpcbase.slurm.parse import job_from_kv, parse_kv_line
from sim.traces.assemble import DEFAULT_LIMIT_FACTOR, assemble
from sim.traces.diagnostics import Diagnostics
from sim.traces.model import Trace, TraceError
from sim.traces.sacct import _gpus, counted_unit
from sim.traces.timestamps import TimeParser, zone

REQUIRED = ("JobId", "SubmitTime", "StartTime", "EndTime")
"""Keys a jobcomp line must have (besides the size key of the chosen unit)."""
SIZE_KEYS = {"nodes": ("NodeCnt", "NumNodes"), "procs": ("ProcCnt", "NumCPUs"), "gpus": ("Tres",)}


def looks_like_jobcomp(line: str) -> bool:
    """True for a jobcomp/filetxt line: starts with ``JobId=`` and has a ``SubmitTime=``."""
    s = line.strip()
    return s.startswith("JobId=") and " SubmitTime=" in s and " EndTime=" in s


def read_jobcomp(
    text: str,
    path: str,
    *,
    strict: bool = False,
    unit: str | None = None,
    total_units: int | None = None,
    tz: str | None = None,
    limit_factor: float = DEFAULT_LIMIT_FACTOR,
) -> Trace:
    """Parse a jobcomp/filetxt log ``text`` (read from ``path``, named in diagnostics)."""
    counted = counted_unit(unit, path, "jobcomp")
    diag = Diagnostics(path, strict)
    parse_time = TimeParser(zone(tz))
    cols: dict[str, list] = {k: [] for k in _COLUMNS}
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            _row(line, lineno, counted, parse_time, cols, diag)
        except (ValueError, SlurmError, OverflowError) as exc:
            diag.bad(lineno, f"{exc}; row skipped")
    diag.raise_if_strict()
    if not cols["line"]:
        why = diag.warnings()[-1].reason if diag.warnings() else "no job lines"
        raise TraceError(f"{path}: no usable jobs in the jobcomp log ({why})")
    ids = np.array(cols["id"], np.int64)
    if np.unique(ids).shape[0] != ids.shape[0]:  # a requeued job is logged once per run
        keep = _last_of_each(ids)
        for i in np.flatnonzero(~keep):
            diag.bad(cols["line"][i], f"job {ids[i]} logged again later; earlier run dropped")
        cols = {k: [v[i] for i in np.flatnonzero(keep)] for k, v in cols.items()}
    return assemble(
        diag,
        fmt="jobcomp",
        unit=counted,
        lines=np.array(cols["line"]),
        job_id=np.array(cols["id"], np.int64),
        submit=np.array(cols["submit"]),
        runtime=np.array(cols["runtime"]),
        limit=np.array(cols["limit"]),
        units=np.array(cols["units"]),
        users=cols["user"],
        groups=cols["group"],
        exit_code=np.array(cols["exit"]),
        recorded_start=np.array(cols["start"]),
        names=cols["name"],
        partitions=cols["partition"],
        total_units=total_units,
        limit_factor=limit_factor,
    )


_COLUMNS = (
    "line",
    "id",
    "submit",
    "start",
    "runtime",
    "limit",
    "units",
    "user",
    "group",
    "exit",
    "name",
    "partition",
)


def _last_of_each(ids: np.ndarray) -> np.ndarray:
    """True at the last occurrence of each id."""
    keep = np.zeros(ids.shape[0], bool)
    seen: set[int] = set()
    for i in range(ids.shape[0] - 1, -1, -1):
        if int(ids[i]) not in seen:
            seen.add(int(ids[i]))
            keep[i] = True
    return keep


def _row(
    line: str,
    lineno: int,
    unit: str,
    parse_time: TimeParser,
    cols: dict[str, list],
    diag: Diagnostics,
) -> None:
    kv = parse_kv_line(line)
    missing = [k for k in REQUIRED if k not in kv]
    size_key = next((k for k in SIZE_KEYS[unit] if k in kv), None)
    if size_key is None:
        missing.append("/".join(SIZE_KEYS[unit]))
    if missing:
        raise ValueError(f"jobcomp line lacks {', '.join(missing)}")
    job = job_from_kv(kv)  # checks every field it knows, naming the bad one
    start = parse_time(kv["StartTime"])
    if start is None or job.start is None or ("NodeList" in kv and not job.node_list):
        diag.skip("never started (cancelled while pending: no StartTime or NodeList)", lineno)
        return
    submit = parse_time(kv["SubmitTime"])
    end = parse_time(kv["EndTime"])
    if submit is None or end is None:
        raise ValueError(f"field {'SubmitTime' if submit is None else 'EndTime'}: no time")
    if end < start:
        raise ValueError(f"negative run time ({end - start:g} s: EndTime before StartTime)")
    if unit == "gpus":
        size = _gpus(kv["Tres"])
        if size == 0:
            diag.skip("uses no GPUs (no gres/gpu in its Tres)", lineno)
            return
    else:
        size = job.nodes if unit == "nodes" else job.cpus
    if not 0 < size < 2**31:
        raise ValueError(f"field {size_key}: size out of range {kv.get(size_key or '', '')[:20]!r}")
    cols["line"].append(lineno)
    cols["id"].append(job.id)
    cols["submit"].append(submit)
    cols["start"].append(start)
    cols["runtime"].append(end - start)
    cols["limit"].append(math.inf if job.time_limit is None else float(job.time_limit))
    cols["units"].append(size)
    cols["user"].append(job.user)
    cols["group"].append(_name(kv.get("GroupId", "")))
    cols["exit"].append(job.exit_code or 0)
    cols["name"].append(job.name)
    cols["partition"].append(job.partition or "")


def _name(text: str) -> str:
    """``root(0)`` -> ``root``."""
    head, _, _ = text.strip().partition("(")
    return head
