"""sim/realslurm.py: workload validation, and a tiny workload on a fresh real cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpcbase.config import ConfigError
from hpcbase.slurm.localcluster import missing_programs
from sim.realslurm import (
    WorkloadJob,
    as_job,
    generate_conf,
    resolve_dependency,
    run_workload,
)


def test_job_validation_names_job_and_field() -> None:
    with pytest.raises(ValueError, match=r"job 2: unknown field\(s\) \['cores'\]"):
        as_job({"name": "x", "cores": 2}, 2)
    with pytest.raises(ValueError, match=r"job 0 \('x'\): cpus must be >= 1"):
        as_job(WorkloadJob("x", 0, 60, 1), 0)
    with pytest.raises(ValueError, match="job 1: .*missing"):
        as_job({"name": "x"}, 1)
    with pytest.raises(ValueError, match=r"job 3 \('x'\): user 'no-such-user' is not a local"):
        as_job(WorkloadJob("x", 1, 60, 1, user="no-such-user"), 3)


def test_bad_qos_limits_are_refused_before_anything_starts() -> None:
    with pytest.raises(ConfigError, match="qos:1: MaxJobsPerUser: expected a whole number"):
        run_workload([WorkloadJob("x", 1, 60, 1)], None, cpus=1, qos="MaxJobsPerUser=lots")
    with pytest.raises(ConfigError, match="qos:1: expected Key=Value"):
        run_workload([WorkloadJob("x", 1, 60, 1)], None, cpus=1, qos_changes=[(5.0, "three")])


def test_dependency_names_become_ids() -> None:
    ids = {"a": 10, "b": 11}
    assert resolve_dependency("afterok:a", ids, "j") == "afterok:10"
    assert (
        resolve_dependency("afterany:a:b,afternotok:b", ids, "j") == "afterany:10:11,afternotok:11"
    )
    assert resolve_dependency(None, ids, "j") is None
    with pytest.raises(ValueError, match=r"j: dependency on \['z'\], which are not earlier jobs"):
        resolve_dependency("afterok:z", ids, "j")
    with pytest.raises(ValueError, match="bad dependency 'before:a'"):
        resolve_dependency("before:a", ids, "j")


@pytest.mark.slurm
@pytest.mark.skipif(bool(missing_programs()), reason="Slurm/munge not installed (scripts/setup.sh)")
def test_tiny_workload_on_real_slurm(tmp_path: Path) -> None:
    extra = tmp_path / "sched.conf"
    extra.write_text("SchedulerParameters=bf_interval=1\n")
    jobs = [
        WorkloadJob("first", cpus=2, limit_s=60, sleep_s=2),
        {
            "name": "second",
            "cpus": 2,
            "limit_s": 90,
            "sleep_s": 1,
            "submit_offset_s": 0.5,
            "dependency": "afterok:first",
        },
        {
            "name": "never",
            "cpus": 1,
            "limit_s": 60,
            "sleep_s": 1,
            "submit_offset_s": 0.5,
            "dependency": "afternotok:first",
        },
    ]
    conf = tmp_path / "slurm.conf"
    rows = run_workload(jobs, extra, cpus=2, conf_out=conf, progress=False)
    first, second, never = rows
    assert [r["name"] for r in rows] == ["first", "second", "never"]
    assert first["state"] == second["state"] == "COMPLETED"
    assert first["start"] >= first["submit"] and first["end"] - first["start"] >= 2
    assert second["start"] >= first["end"] and second["limit_s"] == 120  # whole minutes
    assert never["state"] == "CANCELLED" and never["start"] is None
    text = conf.read_text()
    assert "SchedulerParameters=bf_interval=1" in text and "CPUs=2" in text
    same = generate_conf(extra, 2, tmp_path / "gen.conf").read_text()
    strip = [ln for ln in same.splitlines() if "/tmp/" not in ln and "Port=" not in ln]
    assert strip == [ln for ln in text.splitlines() if "/tmp/" not in ln and "Port=" not in ln]
