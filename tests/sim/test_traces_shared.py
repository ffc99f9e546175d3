"""Readers against the real traces: the shared ones (skipped if absent) and the embedded one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sim.data import LS6_A100_NODES, default_total_units, default_trace_path
from sim.traces import TraceError, read_trace
from sim.traces.model import ARRAY_FIELDS

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "traces"


def shared(name: str) -> Path:
    path = SHARED / name
    if not path.exists():
        pytest.skip(f"shared trace {path} not present (it lives beside the repository)")
    return path


def check_invariants(trace) -> None:
    n = len(trace)
    assert n > 0
    for name in ARRAY_FIELDS:
        assert getattr(trace, name).shape == (n,), name
    assert len(trace.names) == n
    order = np.lexsort((trace.job_id, trace.submit))
    assert np.array_equal(order, np.arange(n)), "not sorted by (submit, job_id)"
    assert trace.submit[0] == 0.0
    assert np.unique(trace.job_id).size == n
    assert (trace.runtime >= 0).all() and (trace.limit > 0).all() and (trace.units > 0).all()
    assert trace.units.max() <= trace.total_units
    assert trace.user.min() >= 0 and trace.user.max() < len(trace.user_names)
    assert trace.group.max() < len(trace.group_names)


def test_ls6_sacct_export():
    trace = read_trace(shared("ls6-a100.log"))
    check_invariants(trace)
    assert trace.fmt == "sacct" and trace.unit == "nodes"
    assert len(trace) == 24776  # 24,777 rows, one malformed
    assert len(trace.user_names) == 366
    # the first row: 478729 dimer.10, submitted 2022-10-05T11:52:48 (read as UTC)
    assert trace.start_epoch == 1664970768.0
    first = int(np.flatnonzero(trace.job_id == 478729)[0])
    assert trace.names[first] == "dimer.10"
    assert trace.limit[first] == 2880 * 60
    assert trace.units[first] == 2
    # runtime = End - Start = 2022-11-03T15:34:15 - 2022-11-01T15:34:14
    assert trace.runtime[first] == 2 * 86400 + 1
    assert trace.recorded_start[first] == 1667316854.0 - 1664970768.0
    assert trace.total_units == 64  # largest job; the machine size is given by the caller
    assert trace.units.min() == 1 and trace.units.max() == 64
    assert (trace.exit_code != 0).sum() == 24776 - 21048  # rows whose ExitCode is not 0:0
    assert (trace.exit_code == 128 + 9).sum() == 9  # ExitCode 0:9, killed by signal 9


def test_ls6_malformed_row_is_reported_with_its_line():
    trace = read_trace(shared("ls6-a100.log"))
    assert len(trace.warnings) == 1
    w = trace.warnings[0]
    assert w.line == 19706 and w.path.endswith("ls6-a100.log")
    assert "expected 10 fields, found 11" in w.reason
    assert (w.kind, w.count) == ("malformed", 1)
    assert str(w).startswith(f"{w.path}:19706: ")
    assert 746545 not in set(trace.job_id.tolist())


def test_ls6_strict_raises_at_the_malformed_row():
    with pytest.raises(TraceError, match=r"ls6-a100\.log:19706: expected 10 fields"):
        read_trace(shared("ls6-a100.log"), strict=True)


def test_ls6_time_zone_changes_epoch_not_relative_times():
    utc = read_trace(shared("ls6-a100.log"))
    chicago = read_trace(shared("ls6-a100.log"), tz="America/Chicago")
    assert chicago.start_epoch - utc.start_epoch == 5 * 3600  # CDT on 2022-10-05
    assert len(chicago) == len(utc)


def test_lublin_swf_without_requested_times():
    trace = read_trace(shared("lublin_256.swf"))
    check_invariants(trace)
    assert trace.fmt == "swf" and trace.unit == "procs"
    assert len(trace) == 10000 and trace.total_units == 256  # MaxNodes, no MaxProcs
    assert trace.start_epoch == 5094.0  # no UnixStartTime: 0 + first submit
    # requested time -1: limit = run time rounded up to whole minutes (never times out)
    assert (trace.limit >= trace.runtime).all()
    assert (trace.limit % 60 == 0).all() and (trace.limit - trace.runtime < 60).all()
    assert np.isnan(trace.recorded_start).all()  # wait time -1
    assert trace.warnings == []
    job1 = int(np.flatnonzero(trace.job_id == 1)[0])
    assert (trace.runtime[job1], trace.units[job1], trace.limit[job1]) == (12072, 16, 12120)


def test_lublin_limit_factor():
    trace = read_trace(shared("lublin_256.swf"), limit_factor=2.0)
    job1 = int(np.flatnonzero(trace.job_id == 1)[0])
    assert trace.limit[job1] == 24180  # ceil(24144 / 60) * 60


def test_hpc2n_swf_with_requested_times_and_cancelled_jobs():
    trace = read_trace(shared("hpc2n-excerpt.swf"))
    check_invariants(trace)
    assert trace.total_units == 240 and trace.start_epoch == 1027839845.0
    assert len(trace) == 3170 - 25  # 25 jobs with run time -1 skipped, counted
    (w,) = trace.warnings
    assert w.line == 34 and "skipped 25 jobs" in w.reason and "run time" in w.reason
    assert (w.kind, w.count) == ("skipped", 25)
    job4 = int(np.flatnonzero(trace.job_id == 4)[0])
    assert trace.limit[job4] == 144000 and trace.runtime[job4] == 143967
    assert trace.recorded_start[job4] == trace.submit[job4] + 99808


def test_embedded_default_trace():
    path = default_trace_path()
    assert path.exists() and path.stat().st_size < 1_000_000
    assert (path.parent / "ls6-a100.LICENSE").exists()
    assert "CC BY 4.0" in (path.parent / "README.md").read_text()
    trace = read_trace(path, total_units=default_total_units())
    check_invariants(trace)
    assert (
        trace.fmt == "sacct"
        and trace.unit == "nodes"
        and trace.total_units == default_total_units() == 72
    )
    assert len(trace) == 4157 and trace.warnings == []
    assert 27 < trace.submit[-1] / 86400 < 28
    # the recorded schedule never used more nodes than the partition physically has
    ends = trace.recorded_start + trace.runtime
    t = np.concatenate([trace.recorded_start, ends])
    d = np.concatenate([trace.units, -trace.units])
    o = np.lexsort((d, t))
    assert np.cumsum(d[o]).max() <= LS6_A100_NODES


def test_embedded_matches_the_shared_original():
    full = read_trace(shared("ls6-a100.log"))
    part = read_trace(default_trace_path())
    sel = np.isin(full.job_id, part.job_id)
    assert sel.sum() == len(part)
    sub = full.select(sel)
    for name in ("runtime", "limit", "units", "exit_code"):
        assert np.array_equal(getattr(sub, name), getattr(part, name)), name
