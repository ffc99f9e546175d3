"""Parsing of Slurm 22.05 output recorded from the local cluster (tests/slurm/data)."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import pytest

from hpcbase.slurm import SlurmError
from hpcbase.slurm.parse import (
    parse_exit_code,
    parse_jobcomp,
    parse_kv_line,
    parse_limit,
    parse_partitions,
    parse_sacct,
    parse_sbatch,
    parse_scontrol_job,
    parse_squeue,
    parse_start_estimates,
    parse_test_only,
)
from hpcbase.slurmtime import UNLIMITED, format_duration, parse_duration, parse_timestamp

DATA = Path(__file__).parent / "data"


def read(name: str) -> str:
    return (DATA / name).read_text()


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch):
    """The recordings' ISO times are local times of a machine on UTC."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2-00:00:00", 172800),
        ("1:00", 60),
        ("10:00", 600),
        ("5", 300),
        ("00:03:00", 180),
        ("1-2", 93600),
        ("1-2:30", 95400),
        ("365-00:00:00", 365 * 86400),
        ("0:30", 30),
        ("UNLIMITED", None),
        ("INFINITE", None),
        ("Partition_Limit", None),
        ("N/A", None),
        ("NOT_SET", None),
    ],
)
def test_parse_limit(text: str, seconds: int | None) -> None:
    """Limits in Slurm's output: whole seconds, None for no limit or an unset one."""
    assert parse_limit(text) == seconds


@pytest.mark.parametrize("bad", ["1:2:3:4", "abc", "1-", "-5", "1.5"])
def test_parse_limit_rejects_bad_text(bad: str) -> None:
    with pytest.raises(ValueError, match="not a Slurm duration"):
        parse_limit(bad)


def test_one_grammar_with_an_explicit_unlimited() -> None:
    assert parse_duration("UNLIMITED") == UNLIMITED
    assert parse_duration("2880") == parse_duration("2-00:00:00") == 172800.0
    assert parse_duration("1.5") == 90.0  # trace files may give fractions
    assert parse_duration("90", bare_unit=1.0) == 90.0
    with pytest.raises(ValueError, match="not a Slurm duration"):
        parse_duration("N/A")  # unset is no limit only where the caller says so
    assert parse_duration("N/A", unset_ok=True) == UNLIMITED


def test_format_duration_round_trips() -> None:
    for s in (0, 59, 3600, 86399, 172800 + 61):
        assert parse_duration(format_duration(s)) == s
    assert format_duration(None) == format_duration(UNLIMITED) == "UNLIMITED"
    assert parse_duration(format_duration(UNLIMITED)) == UNLIMITED


def test_parse_timestamp_forms() -> None:
    assert parse_timestamp("1795326777") == 1795326777.0
    iso = "2026-11-22T05:53:18"
    assert parse_timestamp(iso) == datetime(2026, 11, 22, 5, 53, 18).timestamp()
    for none in ("N/A", "Unknown", "None", "", "0"):
        assert parse_timestamp(none) is None
    with pytest.raises(ValueError, match="not a Slurm time"):
        parse_timestamp("yesterday")


@pytest.mark.parametrize(
    ("text", "code"),
    [("0:0", 0), ("3:0", 3), ("0:9", 137), ("768", 3), ("9", 137), ("0", 0), ("", None)],
)
def test_parse_exit_code(text: str, code: int | None) -> None:
    assert parse_exit_code(text) == code


def test_squeue_active_jobs() -> None:
    jobs = {j.id: j for j in parse_squeue(read("squeue_active.txt"))}
    assert set(jobs) == {5, 6, 7, 8, 9, 10, 11}
    run = jobs[5]
    assert (run.name, run.state, run.cpus, run.nodes, run.time_limit) == (
        "long",
        "RUNNING",
        4,
        1,
        60,
    )
    assert run.start == 1795326778 and run.end is None and run.running
    spaced = jobs[6]
    assert spaced.name == "name with spaces" and spaced.comment == "free text a=b"
    assert spaced.time_limit == 2 * 86400 and spaced.reason == "Resources"
    assert spaced.pending and spaced.start is None and spaced.eligible == 1795326777
    dep = jobs[7]
    assert dep.dependency == "afterok:6(unfulfilled)" and dep.eligible is None
    assert not dep.is_eligible(1795326800)
    later = jobs[8]
    assert later.reason == "BeginTime" and later.eligible == 1795330377
    assert not later.is_eligible(1795326800)
    assert jobs[9].time_limit is None  # UNLIMITED
    assert jobs[10].reason == "JobHeldUser" and not jobs[10].is_eligible(2e9)
    assert all(j.user == "root" and j.partition == "debug" for j in jobs.values())


def test_squeue_finished_jobs() -> None:
    jobs = {j.id: j for j in parse_squeue(read("squeue_all.txt"))}
    assert jobs[5].state == "COMPLETED" and jobs[5].finished
    assert (jobs[5].start, jobs[5].end, jobs[5].exit_code) == (1795326778, 1795326798, 0)
    assert jobs[9].state == "FAILED" and jobs[9].exit_code == 3
    assert jobs[11].exit_code == 137  # killed by signal 9
    assert jobs[8].state == "CANCELLED" and jobs[8].end == 1795326809
    assert jobs[3].comment == "x y=z" and jobs[3].name == "b c"


def test_squeue_bad_line_names_the_line() -> None:
    with pytest.raises(SlurmError, match="line 2"):
        parse_squeue(read("squeue_active.txt").splitlines()[0] + "\n5\x1fonly two\n")
    bad = read("squeue_active.txt").splitlines()[0].replace("\x1f10:00\x1f", "\x1fsoon\x1f")
    with pytest.raises(SlurmError, match="TimeLimit='soon'"):
        parse_squeue(bad)


def test_scontrol_job_epoch_and_iso_agree(utc: None) -> None:
    epoch = [parse_scontrol_job(line) for line in read("scontrol_jobs_epoch.txt").splitlines()]
    assert [j.id for j in epoch] == [5, 6, 7, 8]
    assert epoch[0].state == "RUNNING" and epoch[0].time_limit == 60
    assert epoch[1].name == "name with spaces" and epoch[1].comment == "free text a=b"
    assert epoch[2].dependency == "afterok:6(unfulfilled)" and epoch[2].reason == "Dependency"
    iso = {j.id: j for j in map(parse_scontrol_job, read("scontrol_jobs_iso.txt").splitlines())}
    assert iso[5].submit == epoch[0].submit  # ISO local time == epoch
    assert iso[5].end is not None and iso[5].end - iso[5].start == 20
    assert iso[7].exit_code == 3 and iso[11].exit_code == 137
    assert parse_scontrol_job("slurm_load_jobs error: Invalid job id specified") is None


def test_kv_line_keeps_spaces_in_free_text() -> None:
    kv = parse_kv_line("JobId=3 JobName=a b Comment=x y=z  StdErr=/dev/null Power=")
    assert kv == {
        "JobId": "3",
        "JobName": "a b",
        "Comment": "x y=z",
        "StdErr": "/dev/null",
        "Power": "",
    }


def test_jobcomp_log() -> None:
    jobs = {j.id: j for j in parse_jobcomp(read("jobcomp.txt"))}
    assert set(jobs) == {5, 6, 7, 8, 9, 10, 11}
    assert jobs[5].end - jobs[5].start == 20 and jobs[5].cpus == 4 and jobs[5].time_limit == 60
    assert jobs[6].name == "name with spaces" and jobs[6].time_limit == 2880 * 60
    assert jobs[9].state == "FAILED" and jobs[9].time_limit is None
    with pytest.raises(SlurmError, match="jobcomp line 1"):
        parse_jobcomp("Name=x JobState=COMPLETED\n")


def test_partition_and_start_estimates() -> None:
    (part,) = parse_partitions(read("scontrol_partition.txt"))
    assert (part.name, part.total_nodes, part.total_cpus, part.max_time, part.default) == (
        "debug",
        1,
        4,
        None,
        True,
    )
    assert part.units == "cpus" and part.total_units == 4
    est = parse_start_estimates(read("squeue_start.txt"))
    assert est[8] == ("debug", 1795330377.0) and est[6] == ("debug", None)
    assert set(est) == {6, 7, 8, 9, 10, 11}


def test_sacct_recorded_row() -> None:
    # sacct is only used where accounting exists (not in the local cluster): a typical row.
    row = (
        "42|train|alice|CANCELLED by 0|2|64|1-00:00:00|"
        "1700000000|1700000005|1700000100|1700003700|None|0:15|gpu|chain=a step=2"
    )
    (job,) = parse_sacct(row)
    assert (job.id, job.state, job.nodes, job.cpus, job.time_limit) == (
        42,
        "CANCELLED",
        2,
        64,
        86400,
    )
    assert job.exit_code == 128 + 15 and job.comment == "chain=a step=2" and job.end == 1700003700


def test_sbatch_test_only_output() -> None:
    line = "sbatch: Job 7 to start at {} using 1 processors on nodes vm in partition debug\n"
    assert parse_test_only(line.format("1795475727")) == 1795475727.0
    assert parse_test_only(line.format("2026-11-23T23:15:27")) == parse_timestamp(
        "2026-11-23T23:15:27"
    )
    assert parse_test_only("sbatch: error: nothing") is None


def test_sbatch_output() -> None:
    assert parse_sbatch("123\n") == 123
    assert parse_sbatch("124;cluster\n") == 124
    with pytest.raises(SlurmError, match="no job id"):
        parse_sbatch("sbatch: error: nope")
