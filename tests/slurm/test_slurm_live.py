"""The CLI client against the real local Slurm 22.05 cluster (tests/conftest.py)."""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable
from typing import TypeVar

import pytest

from hpcbase.slurm import CliClient, JobInfo, RetryPolicy, SlurmError, SlurmUnavailable, get_client

pytestmark = pytest.mark.slurm
T = TypeVar("T")


def wait_for(what: str, fn: Callable[[], T | None], timeout: float = 60.0) -> T:
    """Poll ``fn`` (every 0.25 s) until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.25)


@pytest.fixture
def slurm(slurm_cluster) -> CliClient:
    client = get_client(
        "cli", min_interval=0.2, policy=RetryPolicy(attempts=3, timeout=20, backoff=0.5)
    )
    assert isinstance(client, CliClient)
    return client


def tag() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


def submit(slurm: CliClient, cmd: str, cpus: int = 1, limit: str = "5:00", **opts: object) -> int:
    return slurm.submit(cmd, {"n": cpus, "time": limit, "output": "/dev/null", **opts})


def state_of(slurm: CliClient, jid: int, *states: str) -> JobInfo | None:
    j = slurm.job(jid, max_age=0)
    return j if j is not None and j.state in states else None


def test_ping_and_partition(slurm: CliClient) -> None:
    assert slurm.ping()
    part = slurm.partition()
    assert (part.name, part.total_nodes, part.total_cpus, part.default) == ("debug", 1, 16, True)
    assert part.max_time is None and part.total_units == 16
    with pytest.raises(SlurmError, match="no partition named 'nope'"):
        slurm.partition("nope")


def test_submit_queue_job_cancel(slurm: CliClient) -> None:
    name = tag()
    jid = submit(slurm, "sleep 300", cpus=3, limit="2-00:00:00", J=name, comment="chain=c1 step=0")
    mine = [j for j in slurm.queue(max_age=0) if j.id == jid]
    assert len(mine) == 1
    j = mine[0]
    assert (j.name, j.cpus, j.nodes, j.time_limit, j.partition) == (name, 3, 1, 172800, "debug")
    assert j.comment == "chain=c1 step=0" and j.state in ("PENDING", "RUNNING")
    assert j.submit is not None and abs(j.submit - time.time()) < 120
    running = wait_for("the job to run", lambda: state_of(slurm, jid, "RUNNING"))
    assert running.start is not None and running.end is None
    assert slurm.queue(partition="debug", max_age=0) and slurm.queue(partition="other") == []
    slurm.cancel(jid)
    done = wait_for("the job to be cancelled", lambda: state_of(slurm, jid, "CANCELLED"))
    assert done.finished and done.end is not None and done.end >= running.start
    slurm.cancel(jid)  # cancelling an ended job is not an error
    assert slurm.job(99_999_999) is None


def test_submit_errors_carry_slurm_stderr(slurm: CliClient) -> None:
    with pytest.raises(SlurmError, match="invalid partition specified: nope") as info:
        submit(slurm, "true", p="nope")
    assert not isinstance(info.value, SlurmUnavailable)


def test_dependency_and_snapshot(slurm: CliClient) -> None:
    parent = submit(slurm, "sleep 3", cpus=2, limit="1:00", J=tag())
    child = submit(slurm, "exit 3", cpus=5, limit="2:00", J=tag(), dependency=f"afterok:{parent}")
    orphan_parent = submit(slurm, "exit 1", cpus=1, limit="1:00", J=tag())
    orphan = submit(
        slurm, "true", cpus=1, limit="1:00", J=tag(), dependency=f"afterok:{orphan_parent}"
    )
    j = slurm.job(child, max_age=0)
    assert j.pending and j.reason == "Dependency" and j.dependency.startswith(f"afterok:{parent}")
    snap = slurm.snapshot(max_age=0)
    assert snap.total_units == 16
    pend = snap.pend_id.tolist()
    assert child in pend
    k = pend.index(child)
    assert (
        snap.pend_units[k] == 5 and snap.pend_limit[k] == 120 and math.isnan(snap.pend_eligible[k])
    )
    ids = pend + snap.run_id.tolist()
    assert parent in ids and abs(snap.time - time.time()) < 60
    if parent in snap.run_id.tolist():
        r = snap.run_id.tolist().index(parent)
        assert snap.run_units[r] == 2 and snap.run_limit[r] == 60
    p = wait_for("the parent to end", lambda: state_of(slurm, parent, "COMPLETED"))
    c = wait_for("the child to fail", lambda: state_of(slurm, child, "FAILED"))
    assert c.start >= p.end and c.exit_code == 3 and c.eligible >= p.end
    o = wait_for(
        "the orphan to be stuck",
        lambda: (
            (x := slurm.job(orphan, max_age=0)) and x.reason == "DependencyNeverSatisfied" and x
        ),
    )
    assert o.pending and not o.is_eligible(time.time())
    slurm.cancel(orphan)


def test_start_estimates(slurm: CliClient) -> None:
    blocker = submit(slurm, "sleep 120", cpus=16, limit="3:00", J=tag())
    waiting = submit(slurm, "true", cpus=16, limit="1:00", J=tag())
    try:
        wait_for("the blocker to run", lambda: state_of(slurm, blocker, "RUNNING"))
        est = wait_for("an estimate", lambda: slurm.start_estimates(max_age=0).get(waiting))
        b = slurm.job(blocker)
        assert b.start is not None
        # Slurm expects the waiting job to start when the blocker reaches its limit.
        assert b.start + 60 <= est <= b.start + 180 + 60
        assert waiting in slurm.start_estimates(partition="debug")
        assert slurm.start_estimates(partition="other") == {}
    finally:
        slurm.cancel(blocker)
        slurm.cancel(waiting)


def test_test_only_says_when_a_job_would_start_and_submits_nothing(slurm: CliClient) -> None:
    now = time.time()
    free = slurm.test_only("true", {"n": 1, "time": "1:00"})
    assert free is not None and now - 5 <= free <= now + 60  # an idle node: at once
    blocker = submit(slurm, "sleep 120", cpus=16, limit="3:00", J=tag())
    try:
        b = wait_for("the blocker to run", lambda: state_of(slurm, blocker, "RUNNING"))
        queued = len(slurm.queue(max_age=0))
        later = slurm.test_only("true", {"n": 16, "time": "1:00"})
        # a whole-node job would wait for the blocker's limit
        assert later is not None and b.start is not None
        assert b.start + 120 <= later <= b.start + 180 + 60
        assert len(slurm.queue(max_age=0)) == queued  # nothing was submitted
    finally:
        slurm.cancel(blocker)


def test_queries_are_throttled(slurm_cluster) -> None:
    client = get_client("cli", min_interval=1.0)
    jid = submit(client, "sleep 30", J=tag())
    before = client.calls["squeue"]
    for _ in range(20):
        assert any(j.id == jid for j in client.queue())
        client.snapshot()
    assert client.calls["squeue"] - before == 1
    client.queue(max_age=0)  # waits out the 1 s floor, then asks again
    assert client.calls["squeue"] - before == 2
    for _ in range(10):
        client.job(jid)
        client.partition()
    assert client.calls["scontrol"] == 2  # one job query, one partition query
    client.cancel(jid)


def test_slurmctld_down_then_back(slurm: CliClient, slurmctld_control) -> None:
    jid = submit(slurm, "sleep 120", J=tag())
    wait_for("the job to run", lambda: state_of(slurm, jid, "RUNNING"))
    slurmctld_control.stop_slurmctld()
    quick = get_client(
        "cli", min_interval=0.1, policy=RetryPolicy(attempts=2, timeout=2, backoff=0.1)
    )
    with pytest.raises(SlurmUnavailable, match="Slurm is unavailable.*after 2 attempts"):
        quick.queue()
    assert quick.calls["squeue"] == 2
    assert not quick.ping()
    with pytest.raises(SlurmUnavailable):
        quick.submit("true", {"output": "/dev/null"})
    slurmctld_control.start()
    assert quick.ping()
    j = quick.job(jid, max_age=0)  # the job survived the restart, still running
    assert j is not None and j.state == "RUNNING"
    assert any(x.id == jid for x in quick.queue(max_age=0))
    quick.cancel(jid)
