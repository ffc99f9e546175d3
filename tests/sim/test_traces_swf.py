"""SWF reader: header, fallbacks, extra columns, malformed rows; the writer."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from sim.traces import TraceError, read_trace, write_swf
from sim.traces.model import ARRAY_FIELDS

HEADER = """\
; Version: 2.2
; Computer: test machine
; UnixStartTime: 1000000000
; TimeZoneString: Europe/Stockholm
; MaxNodes: 64
; MaxProcs: 128
;
"""


def row(job, submit, wait, run, procs, req_procs, req_time, status=1, user=3, group=1, extra=""):
    return (
        f"{job} {submit} {wait} {run} {procs} -1 -1 {req_procs} {req_time} -1 {status} "
        f"{user} {group} -1 1 1 -1 -1{extra}\n"
    )


def write(tmp_path, text: str, name: str = "w.swf"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_fields_fallbacks_and_header(tmp_path):
    text = HEADER + (
        row(1, 100, 5, 50, 4, 4, 600)
        + row(2, 100, -1, 30, -1, 8, -1, status=0, user=7)  # procs -1 -> requested; limit -1
        + row(3, 200, 0, 0, 2, 2, 60, status=5)  # cancelled with run time 0: kept
        + row(4, 300, -1, -1, 2, 2, 60, status=5)  # run time -1: skipped, counted
        + row(5, 400, -1, 10, -1, -1, 60)  # no size at all: skipped, counted
        + "; a comment in the middle\n"
        + row(6, 50, 1, 20, 1, 1, 120, extra=" 99 98")  # extra columns ignored
    )
    trace = read_trace(write(tmp_path, text))
    assert trace.fmt == "swf" and trace.unit == "procs"
    assert trace.total_units == 128  # MaxProcs before MaxNodes
    assert trace.start_epoch == 1000000050.0  # UnixStartTime + earliest submit
    assert trace.job_id.tolist() == [6, 1, 2, 3]
    assert trace.submit.tolist() == [0.0, 50.0, 50.0, 150.0]
    assert trace.units.tolist() == [1, 4, 8, 2]
    assert trace.limit.tolist() == [120.0, 600.0, 60.0, 60.0]  # job 2: 30 s -> 1 minute
    assert trace.runtime.tolist() == [20.0, 50.0, 30.0, 0.0]
    assert trace.exit_code.tolist() == [0, 0, 1, 1]
    rs = trace.recorded_start
    assert rs[0] == 1.0 and rs[1] == 55.0 and np.isnan(rs[2]) and rs[3] == 150.0
    assert [trace.user_names[u] for u in trace.user] == ["3", "3", "7", "3"]
    reasons = sorted(w.reason for w in trace.warnings)
    assert len(reasons) == 2
    assert "skipped 1 job: unknown run time" in reasons[0] and "line 11" in reasons[0]
    assert "skipped 1 job: unknown size" in reasons[1] and "line 12" in reasons[1]


def test_malformed_rows(tmp_path):
    text = HEADER + (
        row(1, 0, 0, 10, 1, 1, 60)
        + "2 10 0 10 1\n"  # line 9: too few fields
        + row(3, 20, 0, "ten", 1, 1, 60)  # line 10: not a number
        + row(4, 30, 0, 10, -4, 1, 60)  # line 11: negative size other than -1
        + row(1, 40, 0, 10, 1, 1, 60)  # line 12: duplicate job id
        + row(5, 50, 0, 10, 1, 1, "nan")  # line 13: not finite
        + row("6.5", 60, 0, 10, 1, 1, 60)  # line 14: job number not an integer
    )
    path = write(tmp_path, text)
    trace = read_trace(path)
    assert trace.job_id.tolist() == [1]
    got = {w.line: w.reason for w in trace.warnings}
    assert sorted(got) == [9, 10, 11, 12, 13, 14]
    assert "expected 18 SWF fields, found 5" in got[9]
    assert "not a number: 'ten'" in got[10]
    assert "negative processors -4" in got[11]
    assert "duplicate job id 1 (first at line 8)" in got[12]
    assert "not a finite number" in got[13]
    assert "job number 6.5" in got[14]
    with pytest.raises(TraceError, match=r"w\.swf:9: expected 18 SWF fields"):
        read_trace(path, strict=True)
    # strict names the earliest bad line, whichever check finds it: the negative size
    # (line 9) is found after the short row (line 10) but is reported
    text = HEADER + row(1, 0, 0, 10, 1, 1, 60) + row(4, 30, 0, 10, -4, 1, 60) + "2 10 0\n"
    with pytest.raises(TraceError, match=r"w\.swf:9: negative processors -4"):
        read_trace(write(tmp_path, text), strict=True)


def test_fast_and_line_by_line_paths_agree(tmp_path):
    rows = "".join(row(i, i * 7, i % 3, 100 + i, 1 + i % 8, 1 + i % 8, 3600) for i in range(1, 300))
    fast = read_trace(write(tmp_path, HEADER + rows, "a.swf"))
    slow = read_trace(write(tmp_path, HEADER + rows + "; café\n", "b.swf"))  # non-ASCII: slow path
    for name in ("job_id", "submit", "runtime", "limit", "units", "user", "recorded_start"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name), equal_nan=True), name


def test_total_units_and_jobs_larger_than_the_machine(tmp_path):
    """A job larger than the stated size never starts, unless the log records it
    starting: then it ran, and the recorded schedule bounds the machine."""
    text = HEADER + row(1, 0, 0, 10, 100, 100, 60) + row(2, 5, -1, 10, 200, 200, 60)
    text += row(3, 9, 4, 10, 200, 200, 60)
    trace = read_trace(write(tmp_path, text))
    assert trace.job_id.tolist() == [1, 3]
    assert "larger than the machine (128 procs)" in trace.warnings[0].reason
    assert trace.warnings[0].count == 1
    trace = read_trace(write(tmp_path, text), total_units=256, unit="nodes")
    assert trace.job_id.tolist() == [1, 2, 3] and trace.unit == "nodes"


def test_write_read_round_trip_gzip(tmp_path):
    text = HEADER + row(1, 100, 5, 50, 4, 4, 600) + row(2, 130, -1, 30, 8, 8, -1, status=0)
    trace = read_trace(write(tmp_path, text))
    out = tmp_path / "copy.swf.gz"
    write_swf(trace, out)
    assert gzip.decompress(out.read_bytes()).startswith(b"; Version: 2.2")
    back = read_trace(out)
    for name in ARRAY_FIELDS:
        assert np.array_equal(getattr(back, name), getattr(trace, name), equal_nan=True), name
    assert (back.start_epoch, back.total_units, back.user_names) == (
        trace.start_epoch,
        trace.total_units,
        trace.user_names,
    )
    assert not list(tmp_path.glob(".copy*"))  # no temporary left behind


def test_only_comments_is_an_error(tmp_path):
    with pytest.raises(TraceError, match="holds no job lines"):
        read_trace(write(tmp_path, HEADER))


def test_partitions_from_the_partition_field_where_no_queue_is_given(tmp_path):
    """A Slurm log converted to SWF keeps its partitions in field 16 and leaves the queue
    (field 15) unknown; a log that fills the queue keeps it."""
    text = HEADER + row(1, 100, 5, 50, 4, 4, 600) + row(2, 130, 0, 30, 8, 8, 60)
    by_partition = text.replace(" -1 1 1 -1 -1", " -1 -1 10 -1 -1", 1).replace(
        " -1 1 1 -1 -1", " -1 -1 4 -1 -1", 1
    )
    assert read_trace(write(tmp_path, by_partition)).partitions == ["10", "4"]
    both = text.replace(" -1 1 1 -1 -1", " -1 2 10 -1 -1", 1)
    assert read_trace(write(tmp_path, both, "b.swf")).partitions == ["2", "1"]
    neither = text.replace(" -1 1 1 -1 -1", " -1 -1 -1 -1 -1")
    assert read_trace(write(tmp_path, neither, "n.swf")).partitions == []


def test_partitions_survive_a_write(tmp_path):
    from dataclasses import replace

    text = HEADER + row(1, 100, 5, 50, 4, 4, 600) + row(2, 130, 0, 30, 8, 8, 60)
    text += row(3, 140, 0, 30, 8, 8, 60)
    trace = read_trace(write(tmp_path, text))
    for parts, back_as in (
        (["3", "", "12"], ["3", "", "12"]),  # queue numbers as they are
        (["gpu", "cpu", "gpu"], ["2", "1", "2"]),  # names: their rank
    ):
        write_swf(replace(trace, partitions=parts), tmp_path / "p.swf")
        assert read_trace(tmp_path / "p.swf").partitions == back_as
    assert trace.partitions == ["1", "1", "1"]  # row() writes queue 1
    write_swf(replace(trace, partitions=[]), tmp_path / "none.swf")
    assert read_trace(tmp_path / "none.swf").partitions == []
