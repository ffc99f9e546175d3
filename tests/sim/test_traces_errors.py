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
