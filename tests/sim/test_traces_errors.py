"""Files that are not traces give a clear TraceError, never a traceback of another kind."""

from __future__ import annotations

import bz2
import gzip
import os

import pytest

from sim.traces import TraceError, detect_format, read_trace

SWF_ROW = "1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 1 1 -1 -1\n"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"\n  \n\t\n", "empty file"),
        (bytes(range(256)) * 10, "binary data"),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00" + b"\x00" * 100, "binary data"),
        (b"hello world\nthis is not a trace\n", "not a recognised trace"),
        (b"a,b,c\n1,2,3\n", "not a recognised trace"),
        (b"\x1f\x8b\x08\x00garbage", "corrupt gzip"),
        (gzip.compress(b""), "empty file"),
        (gzip.compress(b"\x00\x01\x02" * 100), "binary data"),
        (b"job_id,user,submit\n1,2,3\n", "CSV header lacks start, end or duration, nodes, gpus"),
    ],
)
def test_not_a_trace(tmp_path, content, message):
    path = tmp_path / "junk.dat"
    path.write_bytes(content)
    with pytest.raises(TraceError, match=message) as err:
        read_trace(path)
    assert str(path) in str(err.value)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(TraceError, match=r"nope\.swf: no such file"):
        read_trace(tmp_path / "nope.swf")
    with pytest.raises(TraceError, match="is a directory"):
        read_trace(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files regardless of permissions")
def test_unreadable_file(tmp_path):
    path = tmp_path / "secret.swf"
    path.write_text(SWF_ROW)
    path.chmod(0)
    with pytest.raises(TraceError, match="cannot read"):
        read_trace(path)


def test_compressed_and_forced_formats(tmp_path):
    gz = tmp_path / "t.swf.gz"
    gz.write_bytes(gzip.compress(SWF_ROW.encode()))
    bz = tmp_path / "t.data"  # the name says nothing; the content decides
    bz.write_bytes(bz2.compress(SWF_ROW.encode()))
    assert len(read_trace(gz)) == 1 and len(read_trace(bz)) == 1
    with pytest.raises(TraceError, match="sacct header lacks"):
        read_trace(gz, fmt="sacct")
    with pytest.raises(TraceError, match="CSV header lacks"):
        read_trace(gz, fmt="csv")
    with pytest.raises(TraceError, match="unknown trace format 'xml'"):
        read_trace(gz, fmt="xml")


def test_bad_options(tmp_path):
    path = tmp_path / "t.swf"
    path.write_text(SWF_ROW)
    with pytest.raises(TraceError, match="limit_factor"):
        read_trace(path, limit_factor=0.5)
    with pytest.raises(TraceError, match="total_units must be positive"):
        read_trace(path, total_units=0)
    sacct = tmp_path / "s.txt"
    sacct.write_text(
        "JobID|Submit|Start|End|NNodes\n"
        "1|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:01:00|1\n"
    )
    with pytest.raises(TraceError, match="unknown time zone 'Mars/Olympus'"):
        read_trace(sacct, tz="Mars/Olympus")


def test_detect_format():
    assert detect_format("; Version: 2\n" + SWF_ROW) == "swf"
    assert detect_format(SWF_ROW) == "swf"
    assert detect_format("24\n  JobID JobName\n---- ----\n") == "sacct"
    assert detect_format("JobIDRaw|State\n") == "sacct"
    assert detect_format("job_id,user,submit,start,end,nodes,limit\n") == "csv"


def swf_row(job: int, submit: float, wait: float, run: float, limit: float) -> str:
    return f"{job} {submit:.0f} {wait:.0f} {run:.0f} 1 -1 -1 1 {limit:.0f} -1 1 1 1 -1 1 1 -1 -1\n"


def test_times_no_log_spans_are_skipped_by_line(tmp_path):
    """A submit time, wait, run time or limit over 50 years (a corrupt field; hypothesis
    found a submit of 1e20 s that made the replay's availability timeline ask for 789 PiB)
    skips its row with a warning naming the line, in every format (the shared assembly)."""
    century = 100 * 365.25 * 86400
    rows = [swf_row(1, 0, 0, 10, 60), swf_row(2, 5, 1, 10, 60), swf_row(3, 1e20, 0, 10, 60)]
    rows += [swf_row(4, 9, century, 10, 60), swf_row(5, 9, 0, century, 60)]
    rows += [swf_row(6, 9, 0, 10, century), swf_row(7, 9, 0, 10, 60)]
    path = tmp_path / "far.swf"
    path.write_text("".join(rows))
    trace = read_trace(path, cache=False)
    assert sorted(trace.job_id.tolist()) == [1, 2, 7]
    got = {w.line: w.reason for w in trace.warnings}
    assert set(got) == {3, 4, 5, 6}
    for line, what in ((3, "submit time"), (4, "wait"), (5, "run time"), (6, "limit")):
        assert got[line].startswith(f"{what} of ") and "(over 50)" in got[line]
    with pytest.raises(TraceError, match=r"far\.swf:3: submit time"):
        read_trace(path, strict=True, cache=False)
    csv = tmp_path / "far.csv"
    csv.write_text(
        "job_id,user,submit,start,end,nodes\n1,u,0,0,10,1\n2,u,90000000000,90000000000,90000000010,1\n"
    )
    (warning,) = read_trace(csv, cache=False).warnings  # 2,850 years: a Unix time it reads
    assert warning.line == 3 and warning.reason.startswith("submit time")
