"""The documented CSV form."""

from __future__ import annotations

import pytest

from sim.traces import TraceError, read_trace


def write(tmp_path, text: str, name: str = "jobs.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_csv_gpus_iso_and_unix_times(tmp_path):
    text = (
        "job_id,user,group,name,submit,start,end,gpus,limit,exit_code,partition\n"
        '11,ann,ml,"train, big",2024-02-01T00:00:00,2024-02-01T00:10:00,2024-02-01T01:10:00,8,2:00:00,0,a100\n'
        "12,ben,ml,eval,1706746200,1706746260,1706746320,1,600,3,a100\n"
        "13,ann,ml,never,2024-02-01T00:20:00,,,2,600,0,a100\n"
        "14,cat,bio,x,2024-02-01T00:30:00+01:00,2024-02-01T00:30:00+01:00,2024-02-01T00:40:00+01:00,2,UNLIMITED,,a100\n"
    )
    trace = read_trace(write(tmp_path, text))
    assert trace.fmt == "csv" and trace.unit == "gpus"
    assert trace.job_id.tolist() == [14, 11, 12]  # 14 was submitted at 23:30Z the day before
    assert trace.start_epoch == 1706743800.0  # 2024-01-31T23:30:00Z
    assert trace.runtime.tolist() == [600.0, 3600.0, 60.0]
    assert trace.limit.tolist() == [600.0, 7200.0, 600.0]  # UNLIMITED -> run time (minutes)
    assert trace.units.tolist() == [2, 8, 1]
    assert trace.exit_code.tolist() == [0, 0, 3]
    assert trace.names[1] == "train, big"
    assert [trace.user_names[u] for u in trace.user] == ["cat", "ann", "ben"]
    (w,) = trace.warnings
    assert "skipped 1 job: never ran" in w.reason and w.line == 4


def test_csv_nodes_and_naive_time_zone(tmp_path):
    text = "job_id,user,submit,start,end,nodes,limit\n1,u,2024-07-01T12:00:00,2024-07-01T12:00:00,2024-07-01T13:00:00,4,3600\n"
    utc = read_trace(write(tmp_path, text))
    chicago = read_trace(write(tmp_path, text), tz="America/Chicago")
    assert utc.unit == "nodes" and utc.units.tolist() == [4]
    assert chicago.start_epoch - utc.start_epoch == 5 * 3600


def test_csv_wrong_columns(tmp_path):
    text = "job_id,user,queued,begin,stop,slots,limit\n1,u,0,0,10,1,60\n"
    lacks = r"jobs\.csv:1: CSV header lacks submit, start, end or duration, nodes, gpus or cpus"
    with pytest.raises(TraceError, match=lacks):
        read_trace(write(tmp_path, text))
    with pytest.raises(TraceError, match=r"CSV header lacks gpus; found"):
        read_trace(
            write(tmp_path, "job_id,user,submit,start,end,nodes\n1,u,0,0,10,1\n"), unit="gpus"
        )


def test_csv_usual_spellings_duration_and_no_limit(tmp_path):
    """Other dialects' headers (as GPU-cluster and Slurm-derived logs spell them): the
    roles by their usual names, a duration instead of an end, no limit column (the run-time
    fallback, noted), and the size in the first of nodes, gpus, cpus (``unit`` picks)."""
    text = (
        "Job ID,User_Name,GPU_Num,CPU_Num,Node_Num,State,Submit_Time,Start_Time,End_Time,Queue\n"
        "7,ann,8,64,1,COMPLETED,2024-02-01 00:00:00,2024-02-01 00:10:00,2024-02-01 01:10:00,vc1\n"
        "8,ben,2,16,1,FAILED,2024-02-01 00:05:00,2024-02-01 00:06:00,2024-02-01 00:16:30,vc2\n"
    )
    path = write(tmp_path, text)
    trace = read_trace(path)
    assert trace.fmt == "csv" and trace.unit == "nodes" and trace.units.tolist() == [1, 1]
    assert trace.runtime.tolist() == [3600.0, 630.0]
    assert trace.limit.tolist() == [3600.0, 660.0]  # unknown: the run time, whole minutes
    assert any("no time-limit column" in n for n in trace.notes)
    assert read_trace(path, unit="gpus").units.tolist() == [8, 2]
    cpus = read_trace(path, unit="cpus")
    assert cpus.unit == "procs" and cpus.units.tolist() == [64, 16]
    text = (
        "id_job,id_user,time_submit,time_start,duration,cpus_req,limit\n"
        "1,9,1706746200,1706746260,600,4,1:00:00\n"
    )
    text += "2,9,1706746200,1706746260,UNLIMITED,4,60\n3,9,1706746200,,600,4,60\n"
    trace = read_trace(write(tmp_path, text))
    assert trace.unit == "procs" and trace.runtime.tolist() == [600.0]
    assert trace.limit.tolist() == [3600.0]
    bad, never = trace.warnings
    assert "bad duration 'UNLIMITED'" in bad.reason and bad.line == 3
    assert "never ran" in never.reason


def test_csv_bad_rows(tmp_path):
    text = (
        "job_id,user,submit,start,end,nodes,limit\n"
        "1,u,0,10,100,1,60\n"
        "2,u,0,10\n"
        "3,u,0,10,5,1,60\n"
        "x,u,0,10,100,1,60\n"
        "4,u,0,10,100,0,60\n"
        "5,u,0,10,100,1,-60\n"
    )
    path = write(tmp_path, text)
    trace = read_trace(path)
    assert trace.job_id.tolist() == [1]
    got = {w.line: w.reason for w in trace.warnings}
    assert "expected 7 fields, found 4" in got[3]
    assert "end before start" in got[4]
    assert "bad job_id 'x'" in got[5]
    assert "nodes out of range: 0" in got[6]
    assert "-60" in got[7]
    with pytest.raises(TraceError, match=r"jobs\.csv:3:"):
        read_trace(path, strict=True)
