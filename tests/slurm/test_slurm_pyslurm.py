"""The optional pyslurm backend, with a stand-in pyslurm module (the real one cannot be
installed against Slurm 22.05 here; see docs/slurm.md)."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

from hpcbase.slurm import CliClient, CommandRunner, RetryPolicy, SlurmError, get_client
from hpcbase.slurm.pyslurm_backend import PyslurmClient, job_from_pyslurm


class FakeJob:
    def __init__(self, **kw):
        base = dict(
            id=1,
            name="a",
            user_name="root",
            state="PENDING",
            state_reason="Dependency",
            num_nodes=1,
            cpus=4,
            time_limit=90,
            submit_time=100,
            eligible_time=None,
            start_time=None,
            end_time=None,
            dependencies={"afterok": [7, 8]},
            exit_code=0,
            exit_code_signal=0,
            comment=None,
            partition="debug",
        )
        base.update(kw)
        self.__dict__.update(base)


def fake_pyslurm(version: str, jobs: list[FakeJob]) -> types.ModuleType:
    mod = types.ModuleType("pyslurm")
    mod.__version__ = version

    class Jobs:
        @staticmethod
        def load():
            return {j.id: j for j in jobs}

    class Job:
        @staticmethod
        def load(job_id):
            for j in jobs:
                if j.id == job_id:
                    return j
            raise RuntimeError("Invalid job id specified")

    mod.Jobs, mod.Job = Jobs, Job
    return mod


def version_runner() -> CommandRunner:
    def run(argv, **kw):
        return subprocess.CompletedProcess(argv, 0, "slurm-wlm 22.05.8\n", "")

    return CommandRunner(RetryPolicy(attempts=1), run=run)


def test_conversion() -> None:
    j = job_from_pyslurm(FakeJob())
    assert (j.id, j.state, j.time_limit, j.dependency, j.start, j.end) == (
        1,
        "PENDING",
        5400,
        "afterok:7:8",
        None,
        None,
    )
    done = job_from_pyslurm(
        FakeJob(
            state="FAILED",
            start_time=110,
            end_time=170,
            exit_code=0,
            exit_code_signal=9,
            time_limit=0xFFFFFFFF,
        )
    )
    assert (done.start, done.end, done.exit_code, done.time_limit) == (110, 170, 137, None)


def test_matching_pyslurm_reads_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = [
        FakeJob(),
        FakeJob(id=2, state="RUNNING", start_time=120, state_reason="None"),
        FakeJob(id=3, state="COMPLETED", start_time=120, end_time=130),
    ]
    monkeypatch.setitem(sys.modules, "pyslurm", fake_pyslurm("22.5.1", jobs))
    c = get_client("pyslurm", runner=version_runner(), min_interval=0)
    assert isinstance(c, PyslurmClient)
    assert [j.id for j in c.queue()] == [1, 2]  # the finished job is not in the queue
    assert c.job(3).end == 130 and c.calls["pyslurm"] == 2


def test_mismatched_pyslurm_is_refused_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyslurm", fake_pyslurm("25.11.0", []))
    with pytest.raises(
        SlurmError, match="pyslurm 25.11.0 does not match the installed Slurm 22.05"
    ):
        get_client("pyslurm", runner=version_runner())
    assert type(get_client("auto", runner=version_runner())) is CliClient


def test_missing_pyslurm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyslurm", None)  # import fails
    with pytest.raises(SlurmError, match="needs pyslurm built for Slurm 22.05"):
        get_client("pyslurm", runner=version_runner())
