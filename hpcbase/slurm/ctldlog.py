"""slurmctld's log, read back: when jobs were submitted, started and ended, and when the
backfill scheduler ran and what it planned, to the millisecond.

The log stamps lines ``[YYYY-MM-DDTHH:MM:SS.mmm]`` in the controller's local time; times
returned here are Unix seconds. The lines read are those of Slurm 22.05 at ``debug``
(submissions, ends, main-scheduler starts), with ``DebugFlags=Backfill`` (passes, starts
and plans of the backfill scheduler), with ``DebugFlags=Priority`` (the decay thread's
runs) and with ``DebugFlags=TraceJobs`` (every epilog's end). A ``.gz`` log is read as such.
"""

from __future__ import annotations

import datetime as dt
import gzip
import math
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TextIO

_STAMP = r"\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)\] "
EVENTS: dict[str, re.Pattern[str]] = {
    "submit": re.compile(_STAMP + r"_slurm_rpc_submit_batch_job: JobId=(\d+) "),
    "pass": re.compile(_STAMP + r"sched/backfill: _attempt_backfill: beginning"),
    "start": re.compile(_STAMP + r"sched/backfill: _start_job: Started JobId=(\d+) "),
    "main_start": re.compile(_STAMP + r"sched: Allocate JobId=(\d+) "),
    "end": re.compile(_STAMP + r"_job_complete: JobId=(\d+) done"),
    "main": re.compile(_STAMP + r"debug:  sched: Running job scheduler for default depth"),
    "main_full": re.compile(_STAMP + r"debug:  sched: Running job scheduler for full queue"),
    # a job's epilog completing: slurmd's own message (debug2; the late ones), or any way,
    # the agent's "already complete" answer included (DebugFlags=TraceJobs)
    "epilog": re.compile(
        _STAMP + r"(?:debug2: _slurm_rpc_epilog_complete: |"
        r"(?:\w+: )?TRACE_JOBS: job_epilog_complete: enter )JobId=(\d+)\b"
    ),
    # the decay thread's runs (DebugFlags=Priority): Fair Tree's or classic's line
    "decay": re.compile(
        _STAMP + r".*(?:Fair Tree fairshare algorithm, starting at root|"
        r"Decay factor over)"
    ),
}
"""Event kind -> the line that marks it (group 1 the time, group 2 the job id if any)."""

_PLAN = re.compile(r"_dump_job_sched: JobId=(\d+) to start at (\S+),")

TIMING_LINES = re.compile(
    r"_slurm_rpc_submit_batch_job: JobId|_attempt_backfill: beginning|_start_job: Started"
    r"|_job_complete: JobId=\d+ done|_dump_job_sched: JobId"
    r"|_slurm_rpc_epilog_complete: JobId|job_epilog_complete: enter JobId"
    r"|sched: Allocate JobId|backfill: completed testing"
    r"|sched: Running job scheduler|Spawning RPC agent for msg_type REQUEST_TERMINATE_JOB"
    r"|Fair Tree fairshare algorithm, starting at root|Decay factor over"
)
"""The lines worth keeping of a debug log for the timing and the plans (a filter: a full
``debug2`` log of a short run is megabytes, these lines a few kB)."""


def unix_time(stamp: str) -> float:
    """A log stamp (local time, with or without fractions of a second) as Unix seconds."""
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if "." in stamp else "%Y-%m-%dT%H:%M:%S"
    return dt.datetime.strptime(stamp, fmt).timestamp()


def _open(log: Path) -> TextIO:
    return gzip.open(log, "rt") if log.suffix == ".gz" else open(log)


def _lines(log: Path | Iterable[str]) -> Iterator[str]:
    if isinstance(log, Path):
        with _open(log) as f:
            yield from f
    else:
        yield from log


def read_events(log: Path | Iterable[str]) -> dict[str, list[tuple[float, int]]]:
    """Every event of :data:`EVENTS` in the log: kind -> [(Unix time, job id or 0)], in log
    order (a kind the log lacks maps to an empty list)."""
    found: dict[str, list[tuple[float, int]]] = {k: [] for k in EVENTS}
    for line in _lines(log):
        for kind, pat in EVENTS.items():
            m = pat.match(line)
            if m:
                job = int(m.group(2)) if m.lastindex == 2 else 0
                found[kind].append((unix_time(m.group(1)), job))
                break
    return found


def backfill_plans(log: Path | Iterable[str]) -> list[tuple[float, int, float]]:
    """(pass time, job id, planned start) of the first job each backfill pass planned a
    future start for (``DebugFlags=Backfill``); times in whole Unix seconds."""
    out: list[tuple[float, int, float]] = []
    now: float | None = None
    for line in _lines(log):
        m = EVENTS["pass"].search(line)
        if m:
            now = float(math.floor(unix_time(m.group(1))))
            continue
        plan = _PLAN.search(line)
        if plan and now is not None:
            out.append((now, int(plan.group(1)), unix_time(plan.group(2))))
            now = None  # only the first plan of a pass
    return out
