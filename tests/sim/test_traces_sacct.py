"""sacct export variants: separators, Slurm time formats, steps, arrays, skipped jobs."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from sim.traces import TraceError, read_trace

PARSABLE = """\
JobID|JobIDRaw|JobName|User|Group|Partition|Submit|Eligible|Start|End|Elapsed|Timelimit|NNodes|NCPUS|State|ExitCode
100|100|train|alice|lab|gpu|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T10:05:00|2024-03-01T12:05:00|02:00:00|2-00:00:00|2|256|COMPLETED|0:0
100.batch|100.batch|batch||||2024-03-01T10:05:00|2024-03-01T10:05:00|2024-03-01T10:05:00|2024-03-01T12:05:00|02:00:00||1|128|COMPLETED|0:0
100.0|100.0|python||||2024-03-01T10:05:01|2024-03-01T10:05:01|2024-03-01T10:05:01|2024-03-01T12:05:00|01:59:59||2|256|COMPLETED|0:0
101_3|105|sweep|bob|lab|gpu|2024-03-01T09:00:00|2024-03-01T09:00:00|2024-03-01T09:01:00|2024-03-01T09:31:00|00:30:00|45:00|1|128|FAILED|2:0
101_4|106|sweep|bob|lab|gpu|2024-03-01T09:00:00|2024-03-01T09:00:00|2024-03-01T09:02:00|2024-03-01T09:12:00|00:10:00|01:00:00|1|128|CANCELLED by 0|0:15
102|102|wait|carol|other|gpu|2024-03-01T11:00:00|2024-03-01T11:00:00|Unknown|Unknown|00:00:00|1-12|4|512|PENDING|0:0
103|103|run|carol|other|gpu|2024-03-01T11:30:00|2024-03-01T11:30:00|2024-03-01T11:31:00|Unknown|00:20:00|UNLIMITED|1|128|RUNNING|0:0
104|104|big|alice|lab|gpu|2024-03-01T11:40:00|2024-03-01T11:40:00|2024-03-01T11:41:00|2024-03-01T11:51:00|00:10:00|Partition_Limit|8|1024|TIMEOUT|0:1
"""


def write(tmp_path, text: str, name: str = "t.txt", gz: bool = False):
    path = tmp_path / name
    data = text.encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def by_id(trace, job_id: int) -> int:
    return int(np.flatnonzero(trace.job_id == job_id)[0])


def test_parsable2_with_steps_arrays_and_time_formats(tmp_path):
    trace = read_trace(write(tmp_path, PARSABLE))
    assert trace.fmt == "sacct"
    # steps skipped silently; 102 never started, 103 still running: both counted
    assert sorted(trace.job_id.tolist()) == [100, 104, 105, 106]
    reasons = [w.reason for w in trace.warnings]
    assert len(reasons) == 2
    assert any("skipped 1 job: never started" in r and "line 7" in r for r in reasons)
    assert any("skipped 1 job: never ended" in r for r in reasons)
    assert trace.start_epoch == 1709283600.0  # 2024-03-01T09:00:00Z, the earliest submit
    j = by_id(trace, 100)
    assert trace.limit[j] == 2 * 86400 and trace.runtime[j] == 7200 and trace.units[j] == 2
    assert trace.submit[j] == 3600 and trace.recorded_start[j] == 3900
    assert trace.user_names[trace.user[j]] == "alice" and trace.group_names[trace.group[j]] == "lab"
    assert trace.limit[by_id(trace, 105)] == 45 * 60  # MM:SS would be seconds; 45:00 = 45 min
    assert trace.exit_code[by_id(trace, 105)] == 2
    assert trace.exit_code[by_id(trace, 106)] == 128 + 15
    # Partition_Limit -> unknown -> run time rounded up to minutes
    assert trace.limit[by_id(trace, 104)] == 600
    assert trace.exit_code[by_id(trace, 104)] == 128 + 1
    assert trace.names[j] == "train"


def test_cpu_unit_uses_cpu_columns(tmp_path):
    trace = read_trace(write(tmp_path, PARSABLE), unit="procs")
    assert trace.unit == "procs" and trace.units[by_id(trace, 104)] == 1024
    with pytest.raises(TraceError, match="sacct header lacks AllocTRES/ReqTRES"):
        read_trace(write(tmp_path, PARSABLE), unit="gpus")
    with pytest.raises(TraceError, match="not 'cores'"):
        read_trace(write(tmp_path, PARSABLE), unit="cores")


def test_parsable_with_trailing_bar_and_no_jobidraw(tmp_path):
    text = (
        "JobID|Submit|Start|End|Timelimit|AllocNodes|\n"
        "7_1|2024-01-01T00:00:00|2024-01-01T00:00:10|2024-01-01T00:01:10|10|1|\n"
        "7_2|2024-01-01T00:00:00|2024-01-01T00:00:20|2024-01-01T00:00:50|10|1|\n"
        "9|2024-01-01T00:00:05|2024-01-01T00:00:30|2024-01-01T00:00:40|1:30|3|\n"
        "7_[3-5]|2024-01-01T00:00:00|Unknown|Unknown|10|0|\n"
    )
    trace = read_trace(write(tmp_path, text))
    # array tasks without JobIDRaw get fresh ids above the largest plain id, in file order
    assert trace.job_id.tolist() == [10, 11, 9]
    assert trace.runtime.tolist() == [60.0, 30.0, 10.0]
    assert trace.limit.tolist() == [600.0, 600.0, 90.0]  # 1:30 = MM:SS
    assert trace.units.tolist() == [1, 1, 3]


FIXED_ROWS = [
    (
        "JobID",
        "JobName",
        "User",
        "Submit",
        "Start",
        "End",
        "Timelimit",
        "NNodes",
        "State",
        "ExitCode",
    ),
    (
        "5001",
        "my job",
        "dave",
        "2024-05-01T08:00:00",
        "2024-05-01T08:00:05",
        "2024-05-01T09:00:05",
        "01:00:00",
        "1",
        "COMPLETED",
        "0:0",
    ),
    (
        "5002",
        "sim",
        "erin",
        "2024-05-01T08:10:00",
        "2024-05-01T08:20:00",
        "2024-05-01T08:30:00",
        "3-00:00:00",
        "16",
        "FAILED",
        "1:0",
    ),
    (
        "5002.batch",
        "batch",
        "",
        "2024-05-01T08:20:00",
        "2024-05-01T08:20:00",
        "2024-05-01T08:30:00",
        "",
        "1",
        "FAILED",
        "1:0",
    ),
]
WIDTHS = (12, 10, 9, 19, 19, 19, 10, 8, 10, 8)


def sacct_table(rows, widths) -> str:
    """Rows laid out as sacct's default output: right-aligned columns under a dashes line."""
    lines = [" ".join(f"{c:>{w}}" for c, w in zip(rows[0], widths))]
    lines.append(" ".join("-" * w for w in widths))
    lines += [" ".join(f"{c:>{w}}" for c, w in zip(r, widths)) for r in rows[1:]]
    return "\n".join(lines) + "\n"


def test_fixed_width_with_dashes_line(tmp_path):
    trace = read_trace(write(tmp_path, sacct_table(FIXED_ROWS, WIDTHS)))
    assert trace.job_id.tolist() == [5001, 5002]
    assert trace.names == ["my job", "sim"]  # a space inside a column is fine with dashes
    assert trace.limit.tolist() == [3600.0, 3 * 86400.0]
    assert trace.exit_code.tolist() == [0, 1]
    assert trace.warnings == []


def test_whitespace_without_dashes_and_row_count_line(tmp_path):
    text = (
        "2\nJobID Submit Start End TimelimitRaw NNodes\n"
        "1 2024-01-01T00:00:00 2024-01-01T00:00:00 2024-01-01T01:00:00 120 2\n"
        "2 2024-01-01T00:30:00 2024-01-01T01:00:00 2024-01-01T01:10:00 UNLIMITED 1\n"
    )
    trace = read_trace(write(tmp_path, text, gz=True, name="t.log.gz"))
    assert trace.job_id.tolist() == [1, 2]
    assert trace.limit.tolist() == [7200.0, 600.0]


def test_malformed_rows_named_and_skipped(tmp_path):
    text = (
        "JobID\tSubmit\tStart\tEnd\tTimelimit\tNNodes\n"
        "1\t2024-01-01T00:00:00\t2024-01-01T00:00:00\t2024-01-01T01:00:00\t60\t2\n"
        "2\tyesterday\t2024-01-01T00:00:00\t2024-01-01T01:00:00\t60\t2\n"
        "3\t2024-01-01T00:00:00\t2024-01-01T02:00:00\t2024-01-01T01:00:00\t60\t2\n"
        "4\t2024-01-01T00:00:00\t2024-01-01T00:00:00\t2024-01-01T01:00:00\t60\t-2\n"
        "5\t2024-01-01T00:00:00\t2024-01-01T00:00:00\t2024-01-01T01:00:00\tsoon\t2\n"
        "1\t2024-01-01T00:00:00\t2024-01-01T00:00:00\t2024-01-01T01:00:00\t60\t2\n"
        "6\t2024-01-01T00:00:00\t2024-01-01T00:00:00\t2024-01-01T01:00:00\t60\n"
    )
    path = write(tmp_path, text)
    trace = read_trace(path)
    assert trace.job_id.tolist() == [1]
    got = {w.line: w.reason for w in trace.warnings}
    assert sorted(got) == [3, 4, 5, 6, 7, 8]
    assert "not an ISO 8601 time: 'yesterday'" in got[3]
    assert "negative run time" in got[4]
    assert "size out of range '-2'" in got[5]
    assert "not a Slurm duration: 'soon'" in got[6]
    assert "duplicate job id 1 (first at line 2)" in got[7]
    assert "expected 6 fields, found 5" in got[8]
    with pytest.raises(TraceError, match=r"t\.txt:3: not an ISO 8601 time"):
        read_trace(path, strict=True)


def test_missing_columns_named(tmp_path):
    text = "JobID|Submit|End|Timelimit\n1|2024-01-01T00:00:00|2024-01-01T01:00:00|60\n"
    with pytest.raises(TraceError, match=r"t\.txt:1: sacct header lacks Start, NNodes"):
        read_trace(write(tmp_path, text))


def test_elapsed_used_without_end_column(tmp_path):
    text = (
        "JobID|Submit|Start|ElapsedRaw|NNodes\n1|2024-01-01T00:00:00|2024-01-01T00:00:00|4321|1\n"
    )
    trace = read_trace(write(tmp_path, text))
    assert trace.runtime.tolist() == [4321.0]
    assert trace.limit.tolist() == [4380.0]


def test_all_jobs_unusable_is_an_error(tmp_path):
    text = "JobID|Submit|Start|End|NNodes\n1|2024-01-01T00:00:00|None|Unknown|1\n"
    with pytest.raises(TraceError, match="no usable jobs.*never started"):
        read_trace(write(tmp_path, text))


def test_bad_exit_code_row_does_not_shift_columns(tmp_path):
    text = (
        "JobID|Submit|Start|End|NNodes|ExitCode\n"
        "1|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:01:00|1|0:0\n"
        "2|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:01:00|1|x:y\n"
        "3|2024-01-01T00:00:01|2024-01-01T00:00:02|2024-01-01T00:01:00|2|3:0\n"
    )
    trace = read_trace(write(tmp_path, text))
    assert trace.job_id.tolist() == [1, 3] and trace.exit_code.tolist() == [0, 3]
    assert trace.units.tolist() == [1, 2]
    assert trace.warnings[0].line == 3 and "bad exit code 'x'" in trace.warnings[0].reason


def test_gpu_unit_from_alloctres(tmp_path):
    text = (
        "JobID|Submit|Start|End|NNodes|AllocTRES\n"
        "1|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:01:00|1|"
        "billing=8,cpu=8,gres/gpu:a100=4,gres/gpu=4,mem=64G,node=1\n"
        "2|2024-01-01T00:00:01|2024-01-01T00:00:02|2024-01-01T00:01:00|2|"
        "cpu=16,gres/gpu:a100=6,gres/gpu:v100=2,node=2\n"
        "3|2024-01-01T00:00:02|2024-01-01T00:00:02|2024-01-01T00:01:00|1|cpu=4,node=1\n"
    )
    trace = read_trace(write(tmp_path, text), unit="gpus")
    assert trace.unit == "gpus" and trace.units.tolist() == [4, 8]
    assert "skipped 1 job: uses no GPUs" in trace.warnings[0].reason
    assert read_trace(write(tmp_path, text)).units.tolist() == [1, 2, 1]


def test_a_priority_column_is_kept_by_its_header_name(tmp_path):
    # a space-aligned header over TAB-separated rows; the column found by name, any case
    text = (
        "3\n"
        "   JobID    UID               Start              Submit                 End   PRIORITY"
        " TimelimitR   NNodes\n"
        "-------- ------ ------------------- ------------------- ------------------- ----------"
        " ---------- --------\n"
        "7\t01\t2024-01-01T00:05:00\t2024-01-01T00:00:00\t2024-01-01T01:05:00\t1234\t120\t2\n"
        "8\t02\t2024-01-01T00:10:00\t2024-01-01T00:01:00\t2024-01-01T00:40:00\t\t60\t1\n"
        "9\t01\t2024-01-01T00:20:00\t2024-01-01T00:02:00\t2024-01-01T00:50:00\t1001.5\t60\t1\n"
    )
    trace = read_trace(write(tmp_path, text))
    assert trace.job_id.tolist() == [7, 8, 9]
    assert trace.has_recorded_priority
    np.testing.assert_array_equal(trace.recorded_priority, [1234.0, np.nan, 1001.5])
    # subsets keep it aligned with the jobs
    np.testing.assert_array_equal(trace.select(trace.job_id != 8).recorded_priority, [1234, 1001.5])
    bad = text.replace("\t1234\t", "\thigh\t")
    trace = read_trace(write(tmp_path, bad, name="bad.txt"))
    assert trace.job_id.tolist() == [8, 9] and "bad priority" in trace.warnings[0].reason


def test_without_a_priority_column_none_is_recorded(tmp_path):
    trace = read_trace(write(tmp_path, PARSABLE))
    assert not trace.has_recorded_priority
    assert trace.recorded_priority.shape == (len(trace),)
