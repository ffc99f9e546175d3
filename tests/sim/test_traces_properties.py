"""Property tests: valid rows always parse to what they say; garbage only ever gives TraceError."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.traces import Trace, TraceError, read_trace

# Readers must not leak numpy RuntimeWarnings (overflowing casts and the like) either.
pytestmark = pytest.mark.filterwarnings("error")

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def read_bytes_as_trace(data: bytes, name: str = "t", **kw):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / name
        path.write_bytes(data)
        return read_trace(path, **kw)


swf_job = st.fixed_dictionaries(
    {
        "submit": st.integers(0, 10**8),
        "wait": st.integers(-1, 10**6),
        "run": st.integers(0, 10**6),
        "procs": st.integers(1, 4096),
        "req": st.one_of(st.just(-1), st.integers(1, 10**6)),
        "status": st.sampled_from([-1, 0, 1, 5]),
        "user": st.integers(-1, 500),
        "extra": st.integers(0, 3),
    }
)


@SETTINGS
@given(jobs=st.lists(swf_job, min_size=1, max_size=40))
def test_random_valid_swf_rows_parse(jobs):
    lines = ["; MaxProcs: 4096", "; UnixStartTime: 1600000000"]
    for i, j in enumerate(jobs, 1):
        extra = " 7" * j["extra"]
        lines.append(
            f"{i} {j['submit']} {j['wait']} {j['run']} {j['procs']} -1 -1 {j['procs']} "
            f"{j['req']} -1 {j['status']} {j['user']} 1 -1 -1 -1 -1 -1{extra}"
        )
    trace = read_bytes_as_trace(("\n".join(lines) + "\n").encode(), "t.swf")
    assert len(trace) == len(jobs) and trace.warnings == []
    first = min(j["submit"] for j in jobs)
    assert trace.start_epoch == 1600000000 + first
    for k, job_id in enumerate(trace.job_id):
        j = jobs[job_id - 1]
        assert trace.submit[k] == j["submit"] - first
        assert trace.runtime[k] == j["run"] and trace.units[k] == j["procs"]
        assert trace.limit[k] == (j["req"] if j["req"] > 0 else max(60, -(-j["run"] // 60) * 60))
        assert trace.user_names[trace.user[k]] == str(j["user"])
        assert trace.exit_code[k] == (1 if j["status"] in (0, 5) else 0)


sacct_job = st.fixed_dictionaries(
    {
        "submit": st.integers(1_500_000_000, 1_800_000_000),
        "wait": st.integers(0, 10**6),
        "run": st.integers(0, 10**6),
        "nodes": st.integers(1, 512),
        "limit": st.integers(1, 10**5),
        "limit_style": st.sampled_from(["minutes", "hms", "dhms"]),
        "user": st.text("abcdefgh0123456789", min_size=1, max_size=8),
        "name": st.text(
            st.characters(blacklist_characters="|", blacklist_categories=["Cs", "Cc", "Zl", "Zp"]),
            max_size=12,
        ),
        "exit": st.integers(0, 255),
    }
)


def iso(t: int) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def slurm_limit(minutes: int, style: str) -> str:
    if style == "minutes":
        return str(minutes)
    h, m = divmod(minutes, 60)
    if style == "hms":
        return f"{h:02d}:{m:02d}:00"
    d, h = divmod(h, 24)
    return f"{d}-{h:02d}:{m:02d}:00"


@SETTINGS
@given(jobs=st.lists(sacct_job, min_size=1, max_size=30))
def test_random_valid_sacct_rows_parse(jobs):
    lines = ["JobID|JobName|User|Submit|Start|End|Timelimit|NNodes|ExitCode"]
    for i, j in enumerate(jobs, 1):
        start = j["submit"] + j["wait"]
        lines.append(
            f"{i}|{j['name']}|{j['user']}|{iso(j['submit'])}|{iso(start)}|"
            f"{iso(start + j['run'])}|{slurm_limit(j['limit'], j['limit_style'])}|"
            f"{j['nodes']}|{j['exit']}:0"
        )
    trace = read_bytes_as_trace(("\n".join(lines) + "\n").encode(), "t.txt")
    assert len(trace) == len(jobs) and trace.warnings == []
    for k, job_id in enumerate(trace.job_id):
        j = jobs[job_id - 1]
        assert trace.start_epoch + trace.submit[k] == j["submit"]
        assert trace.runtime[k] == j["run"] and trace.units[k] == j["nodes"]
        assert trace.limit[k] == j["limit"] * 60
        assert trace.recorded_start[k] - trace.submit[k] == j["wait"]
        assert trace.names[k] == j["name"].strip()
        assert trace.user_names[trace.user[k]] == j["user"]
        assert trace.exit_code[k] == j["exit"]


def check_outcome(read) -> None:
    try:
        trace = read()
    except TraceError as exc:
        assert str(exc)
        return
    assert isinstance(trace, Trace) and len(trace) > 0
    assert np.all(np.diff(trace.submit) >= 0) and trace.submit[0] == 0


@SETTINGS
@given(
    data=st.binary(max_size=2000),
    fmt=st.sampled_from(["auto", "swf", "sacct", "csv"]),
    strict=st.booleans(),
)
def test_random_bytes_only_trace_error(data, fmt, strict):
    check_outcome(lambda: read_bytes_as_trace(data, fmt=fmt, strict=strict))


TOKENS = [
    "JobID",
    "Submit",
    "Start",
    "End",
    "NNodes",
    "Timelimit",
    "job_id",
    "user",
    "submit",
    "start",
    "end",
    "nodes",
    "limit",
    "|",
    ",",
    "\t",
    " ",
    "\n",
    ";",
    ":",
    "-1",
    "0",
    "1",
    "17",
    "2024-01-01T00:00:00",
    "Unknown",
    "UNLIMITED",
    "1-00:00:00",
    "5_3",
    "7.batch",
    "nan",
    "inf",
    "1e999",
    "-",
    "99999999999999999999999",
    "é",
    '"',
    "MaxProcs: 0",
]


@SETTINGS
@given(
    parts=st.lists(st.sampled_from(TOKENS), max_size=120),
    fmt=st.sampled_from(["auto", "swf", "sacct", "csv"]),
    strict=st.booleans(),
)
def test_random_trace_like_text_only_trace_error(parts, fmt, strict):
    check_outcome(lambda: read_bytes_as_trace("".join(parts).encode(), fmt=fmt, strict=strict))


SEEDS = [
    "JobID|Submit|Start|End|Timelimit|NNodes|ExitCode\n"
    "1|2024-01-01T00:00:00|2024-01-01T00:00:10|2024-01-01T01:00:00|60|1|0:0\n"
    "2|2024-01-01T00:00:05|2024-01-01T00:01:10|2024-01-01T00:02:00|2-00:00:00|4|1:0\n"
    "3|2024-01-01T00:00:09|2024-01-01T00:02:10|2024-01-01T00:03:00|UNLIMITED|2|0:9\n",
    "3\n  JobID JobName  UID  Start  Submit  End  TimelimitR ExitCode NNodes\n"
    "------ ------- ---- ------ ------- ---- ---------- -------- ------\n"
    "7\ta\t001\t2023-01-01T00:00:09\t2023-01-01T00:00:00\t2023-01-01T00:10:00\t30\t0:0\t2\n"
    "8\tb\t002\t2023-01-01T00:01:00\t2023-01-01T00:00:30\t2023-01-01T00:02:00\t30\t2:0\t1\n",
    "; MaxProcs: 64\n; UnixStartTime: 1000\n"
    "1 0 5 100 4 -1 -1 4 600 -1 1 1 1 -1 1 1 -1 -1\n"
    "2 10 -1 -1 8 -1 -1 8 -1 -1 5 2 1 -1 1 1 -1 -1\n"
    "3 20 0 50 -1 -1 -1 2 60 -1 0 3 1 -1 1 1 -1 -1 9 9\n",
    "job_id,user,submit,start,end,gpus,limit,exit_code\n"
    "1,a,0,1,5,2,60,0\n2,b,2024-01-01T00:00:00,2024-01-01T00:00:01,2024-01-01T00:01:00,1,1:00,1\n",
]


@SETTINGS
@given(
    seed=st.sampled_from(SEEDS),
    edits=st.lists(
        st.tuples(
            st.integers(0, 500),
            st.integers(0, 30),
            st.text(st.sampled_from(list("0123456789-:|,;\t\n .TeE+x_")), max_size=6),
        ),
        min_size=1,
        max_size=6,
    ),
    strict=st.booleans(),
)
def test_damaged_files_only_trace_error(seed, edits, strict):
    text = seed
    for pos, cut, insert in edits:
        p = pos % (len(text) + 1)
        text = text[:p] + insert + text[p + cut :]
    check_outcome(lambda: read_bytes_as_trace(text.encode(), strict=strict))
