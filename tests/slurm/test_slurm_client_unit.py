"""Logic of the client with fake commands and a fake clock: throttling, retries, options,
snapshots. The same features are exercised against real Slurm in test_slurm_live.py."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest

from hpcbase.slurm import (
    CliClient,
    CommandRunner,
    RetryPolicy,
    SlurmError,
    SlurmUnavailable,
    get_client,
    options_to_args,
)
from hpcbase.slurm.cache import QueryCache

DATA = Path(__file__).parent / "data"


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.t += s


class FakeSlurm:
    """Answers argv with canned (returncode, stdout, stderr), recording every call."""

    def __init__(self, answers: dict[str, list[tuple[int, str, str]] | tuple[int, str, str]]):
        self.answers = answers
        self.argv: list[list[str]] = []
        self.envs: list[dict[str, str]] = []

    def __call__(self, argv, *, input=None, capture_output, text, env, timeout):
        self.argv.append(argv)
        self.envs.append(env)
        ans = self.answers[argv[0]]
        if isinstance(ans, list):
            ans = ans.pop(0) if len(ans) > 1 else ans[0]
        if ans == "timeout":
            raise subprocess.TimeoutExpired(argv, timeout)
        rc, out, err = ans
        return subprocess.CompletedProcess(argv, rc, out, err)


def make_client(
    fake: FakeSlurm, clock: FakeClock, min_interval: float = 10.0, attempts: int = 3
) -> CliClient:
    policy = RetryPolicy(attempts=attempts, timeout=5, backoff=1.0, backoff_max=3.0)
    runner = CommandRunner(policy, env={"SLURM_CONF": "/x/slurm.conf"}, run=fake, sleep=clock.sleep)
    return CliClient(min_interval=min_interval, runner=runner, clock=clock, sleep=clock.sleep)


def test_cache_floor_and_max_age() -> None:
    clock = FakeClock()
    cache = QueryCache(10.0, clock=clock, sleep=clock.sleep)
    n = []
    fetch = lambda: n.append(1) or len(n)  # noqa: E731
    assert cache.get("k", fetch) == 1
    clock.t += 5
    assert cache.get("k", fetch) == 1  # cached
    assert cache.get("k", fetch, max_age=100) == 1
    assert cache.get("k", fetch, max_age=0) == 2  # waited out the floor first
    assert clock.slept == [5.0]
    clock.t += 11
    assert cache.get("k", fetch) == 3 and clock.slept == [5.0]
    cache.invalidate()
    assert cache.get("k", fetch) == 4 and clock.slept == [5.0, 10.0]


def test_queue_is_throttled_and_cached() -> None:
    clock = FakeClock()
    fake = FakeSlurm({"squeue": (0, (DATA / "squeue_active.txt").read_text(), "")})
    c = make_client(fake, clock)
    for _ in range(5):
        assert len(c.queue()) == 7
    assert c.calls["squeue"] == 1
    assert c.queue(partition="other") == []
    clock.t += 10.5
    c.queue()
    assert c.calls["squeue"] == 2 and clock.slept == []
    env = fake.envs[-1]
    assert env["SLURM_TIME_FORMAT"] == "%s" and env["SLURM_CONF"] == "/x/slurm.conf"


def test_submit_invalidates_queue_but_keeps_the_floor() -> None:
    clock = FakeClock()
    fake = FakeSlurm({"squeue": (0, "", ""), "sbatch": (0, "77\n", "")})
    c = make_client(fake, clock)
    c.queue()
    assert c.submit("sleep 1", {"n": 2, "time": "1:00", "J": "x"}, env={"A": "1"}) == 77
    assert fake.argv[-1] == [
        "sbatch",
        "--parsable",
        "-n",
        "2",
        "--time=1:00",
        "-J",
        "x",
        "--wrap",
        "sleep 1",
    ]
    assert fake.envs[-1]["A"] == "1"
    c.queue()
    assert c.calls["squeue"] == 2 and clock.slept == [10.0]


def test_submit_script_forms(tmp_path: Path) -> None:
    fake = FakeSlurm({"sbatch": (0, "5;mirage\n", "")})
    c = make_client(fake, FakeClock())
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\ntrue\n")
    assert c.submit(script, ["-n", "1"]) == 5
    assert fake.argv[-1] == ["sbatch", "--parsable", "-n", "1", str(script)]
    c.submit("#!/bin/sh\ntrue\n")
    assert fake.argv[-1] == ["sbatch", "--parsable"]
    with pytest.raises(SlurmError, match="batch script not found"):
        c.submit(tmp_path / "missing.sh")


def test_options_to_args() -> None:
    assert options_to_args(
        {
            "-n": 4,
            "--time": "2-00:00:00",
            "hold": True,
            "x": None,
            "begin": False,
            "dependency": "afterok:1",
        }
    ) == ["-n", "4", "--time=2-00:00:00", "--hold", "--dependency=afterok:1"]
    assert options_to_args(["-N", 2]) == ["-N", "2"]
    assert options_to_args(None) == []


def test_unavailable_after_retries_with_backoff() -> None:
    clock = FakeClock()
    err = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
    fake = FakeSlurm({"squeue": (1, "", err)})
    c = make_client(fake, clock, attempts=4)
    with pytest.raises(
        SlurmUnavailable, match="Unable to contact slurm controller.*after 4 attempts"
    ):
        c.queue()
    assert c.calls["squeue"] == 4 and clock.slept == [1.0, 2.0, 3.0]  # capped at backoff_max


def test_timeouts_retry_reads_but_not_submissions() -> None:
    clock = FakeClock()
    fake = FakeSlurm({"squeue": ["timeout", (0, "", "")], "sbatch": "timeout"})
    c = make_client(fake, clock)
    assert c.queue() == [] and c.calls["squeue"] == 2
    with pytest.raises(SlurmUnavailable, match="may or may not have been applied"):
        c.submit("true")
    assert c.calls["sbatch"] == 1


def test_submission_retried_when_never_sent() -> None:
    clock = FakeClock()
    err = (
        "sbatch: error: Batch job submission failed: "
        "Unable to contact slurm controller (connect failure)"
    )
    fake = FakeSlurm({"sbatch": [(1, "", err), (0, "9\n", "")]})
    c = make_client(fake, clock)
    assert c.submit("true") == 9 and c.calls["sbatch"] == 2


def test_other_failures_raise_slurm_error_with_stderr() -> None:
    fake = FakeSlurm({"sbatch": (1, "", "sbatch: error: invalid partition specified: nope")})
    c = make_client(fake, FakeClock())
    with pytest.raises(SlurmError, match="invalid partition specified: nope") as info:
        c.submit("true", {"p": "nope"})
    assert not isinstance(info.value, SlurmUnavailable) and c.calls["sbatch"] == 1


def test_missing_binary_is_unavailable() -> None:
    runner = CommandRunner(RetryPolicy(attempts=3, timeout=1))
    with pytest.raises(SlurmUnavailable, match="not found"):
        runner.run(["definitely-not-a-slurm-command-xyz"])


def test_job_falls_back_to_sacct_once() -> None:
    clock = FakeClock()
    fake = FakeSlurm(
        {
            "scontrol": (1, "", "slurm_load_jobs error: Invalid job id specified"),
            "sacct": (1, "", "Slurm accounting storage is disabled"),
        }
    )
    c = make_client(fake, clock, min_interval=0)
    assert c.job(1) is None and c.job(2) is None
    assert c.calls["sacct"] == 1 and c.calls["scontrol"] == 2
    row = "3|x|bob|COMPLETED|1|2|5:00|100|100|110|170|None|0:0|debug|"
    fake2 = FakeSlurm(
        {
            "scontrol": (1, "", "slurm_load_jobs error: Invalid job id specified"),
            "sacct": (0, row + "\n", ""),
        }
    )
    job = make_client(fake2, clock, min_interval=0).job(3)
    assert job is not None and (job.state, job.end, job.time_limit) == ("COMPLETED", 170, 300)


def test_snapshot_units_limits_and_eligibility() -> None:
    clock = FakeClock()
    fake = FakeSlurm(
        {
            "squeue": (0, (DATA / "squeue_active.txt").read_text(), ""),
            "scontrol": (0, (DATA / "scontrol_partition.txt").read_text(), ""),
        }
    )
    c = make_client(fake, clock)
    snap = c.snapshot()
    assert snap.total_units == 4  # one-node partition: CPUs
    assert (
        list(snap.run_id) == [5]
        and list(snap.run_units) == [4]
        and list(snap.run_start) == [1795326778]
    )
    pend = dict(zip(snap.pend_id.tolist(), range(len(snap.pend_id))))
    assert set(pend) == {6, 7, 8, 9, 10, 11}
    assert snap.pend_units[pend[6]] == 2 and snap.pend_limit[pend[6]] == 172800
    assert math.isinf(snap.pend_limit[pend[9]])  # UNLIMITED job, UNLIMITED partition
    assert snap.pend_eligible[pend[6]] == 1795326777
    for ineligible in (7, 8, 10):  # dependency, begin time in the future, held
        assert math.isnan(snap.pend_eligible[pend[ineligible]])
    with pytest.raises(SlurmError, match="no partition named 'gpu'; partitions: debug"):
        c.snapshot("gpu")


def test_get_client_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(get_client("cli"), CliClient)
    with pytest.raises(SlurmError, match="unknown Slurm backend"):
        get_client("rest")
    monkeypatch.setenv("MIRAGE_SLURM_BACKEND", "cli")
    assert type(get_client()) is CliClient


def test_retry_policy_validation() -> None:
    with pytest.raises(ValueError, match="attempts"):
        RetryPolicy(attempts=0)
    assert [RetryPolicy(backoff=0.5, backoff_max=1.5).delay(i) for i in (1, 2, 3, 4)] == [
        0.5,
        1.0,
        1.5,
        1.5,
    ]


def test_cache_forgets_old_keys() -> None:
    clock = FakeClock()
    cache = QueryCache(0.0, clock=clock, sleep=clock.sleep)
    cache.max_entries = 8
    for i in range(9):
        clock.t += 1
        cache.get(("job", i), lambda i=i: i)
    assert len(cache._values) == 7 and ("job", 0) not in cache._values
    assert cache.get(("job", 8), lambda: -1) == 8
