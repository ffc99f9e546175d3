"""The simulator against real Slurm 22.05 on a small workload with a reservation.

Two CPUs. A (1 CPU, 60 s limit) runs 15 s; B wants both CPUs and gets the reservation at
A's limit; C (1 CPU, 60 s limit) fits the free CPU now but would end after B's reserved
start, so backfill must not start it: B starts when A ends, then C after B. Real Slurm
and the simulator (configured from the same slurm.conf, jobs submitted when Slurm got them)
must agree on the order, with a median start difference of at most 2 s (every start within 5 s).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hpcbase.slurm.localcluster import missing_programs
from sim.realcheck import simulate
from sim.realslurm import WorkloadJob, run_workload

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.skipif(bool(missing_programs()), reason="Slurm/munge not installed"),
]


def assert_starts_close(sim: dict[str, float], real: dict[str, float]) -> None:
    """The fidelity target: median start difference <= 2 s, every start within 5 s."""
    diffs = sorted(abs(sim[n] - real[n]) for n in real)
    assert diffs[len(diffs) // 2] <= 2.0 and diffs[-1] <= 5.0, {n: sim[n] - real[n] for n in real}


def test_simulator_keeps_real_slurms_order_and_reservation(tmp_path: Path) -> None:
    extra = tmp_path / "sched.conf"
    extra.write_text("SchedulerParameters=bf_interval=1,bf_resolution=1\n")
    jobs = [
        WorkloadJob("A", 1, 60, 15),
        WorkloadJob("B", 2, 60, 3, submit_offset_s=1),
        WorkloadJob("C", 1, 60, 3, submit_offset_s=2),
    ]
    conf = tmp_path / "slurm.conf"
    rows = run_workload(jobs, extra, cpus=2, conf_out=conf, progress=False)
    real = {r["name"]: float(r["start"]) for r in rows}
    assert real["A"] < real["B"] < real["C"]  # the workload does what it is built for
    sim = simulate(jobs, rows, conf)
    assert sim["A"] < sim["B"] < sim["C"]
    # A single job may be off by a few seconds more than the median: real Slurm's
    # sub-second completion latency, which the simulator's one-second model does not
    # carry (issue 13), put C 3 s late in 2 of 6 runs.
    assert_starts_close(sim, real)


def test_partition_tier_and_maxtime_as_real_slurm(tmp_path: Path) -> None:
    # Two CPUs; three partitions on the one node (so no node pools): debug (default), high
    # (PriorityTier=2) and short (MaxTime=1 minute). A fills the node for 15 s; B (debug) and
    # then C (high) want both CPUs: C starts first, at A's end, B after C. D asks short for
    # 2 minutes: pending for ever (PartitionTimeLimit, EnforcePartLimits=NO by default),
    # then cancelled by the runner. Node pools cannot be checked here: one node
    # (docs/simulator.md). QOS limits: the last test.
    extra = tmp_path / "sched.conf"
    extra.write_text(
        "SchedulerParameters=bf_interval=1,bf_resolution=1\n"
        "PartitionName=high Nodes=ALL PriorityTier=2 State=UP\n"
        "PartitionName=short Nodes=ALL MaxTime=1 State=UP\n"
    )
    jobs = [
        WorkloadJob("A", 2, 60, 15),
        WorkloadJob("B", 2, 60, 3, submit_offset_s=1),
        WorkloadJob("C", 2, 60, 3, submit_offset_s=2, partition="high"),
        WorkloadJob("D", 1, 120, 3, submit_offset_s=3, partition="short"),
    ]
    conf = tmp_path / "slurm.conf"
    rows = run_workload(jobs, extra, cpus=2, conf_out=conf, progress=False)
    real = {r["name"]: r["start"] for r in rows}
    assert real["D"] is None and real["A"] < real["C"] < real["B"]
    sim = simulate(jobs, rows, conf)
    assert sim["D"] != sim["D"]  # NaN: never started
    assert sim["A"] < sim["C"] < sim["B"]
    assert_starts_close(sim, {n: float(real[n]) for n in "ABC"})  # type: ignore[arg-type]


def test_backfill_depth_as_real_slurm(tmp_path: Path) -> None:
    # Two CPUs, bf_max_job_test=2 (what a fitted site profile may hold). A (1 CPU) runs
    # 20 s of a 3-minute limit; B and D want both CPUs and wait; E (1 CPU, 1 minute) fits
    # the free CPU and ends before B's reservation, so a backfill that reaches it starts it
    # at once. It is the third job in the queue: the pass tests B and D only, and the main
    # scheduler stops at B, so E starts after D. The simulator with Slurm's default depth
    # starts E at once: the test tells the two apart.
    extra = tmp_path / "sched.conf"
    extra.write_text("SchedulerParameters=bf_interval=1,bf_resolution=1,bf_max_job_test=2\n")
    jobs = [
        WorkloadJob("A", 1, 180, 20),
        WorkloadJob("B", 2, 60, 3, submit_offset_s=1),
        WorkloadJob("D", 2, 60, 3, submit_offset_s=2),
        WorkloadJob("E", 1, 60, 3, submit_offset_s=3),
    ]
    conf = tmp_path / "slurm.conf"
    rows = run_workload(jobs, extra, cpus=2, conf_out=conf, progress=False)
    real = {r["name"]: float(r["start"]) for r in rows}
    assert real["A"] < real["B"] < real["D"] < real["E"]
    sim = simulate(jobs, rows, conf)
    assert sim["A"] < sim["B"] < sim["D"] < sim["E"]
    assert_starts_close(sim, real)
    default = tmp_path / "default.conf"
    default.write_text(conf.read_text().replace(",bf_max_job_test=2", ""))
    deep = simulate(jobs, rows, default)
    assert deep["E"] < deep["B"]  # a deep backfill starts E at once


def test_qos_limits_and_their_change_as_real_slurm(tmp_path: Path) -> None:
    # Eight CPUs; QOS normal with MaxJobsPerUser=2 and MaxTRESPerUser=cpu=4, in the
    # cluster's own accounting database (MariaDB, slurmdbd); two local accounts submit.
    # daemon's a3 and a4 wait on the jobs limit with CPUs free. 7 s in, sacctmgr raises it
    # to 3: the change wakes no scheduler (backfill's _more_work looks at jobs, nodes and
    # partitions only), so a3 starts at the next pass, which Slurm runs at the next job
    # event (b1's end, 11 s in) or earlier when its backfill still runs on from an update
    # in the same second as its last pass (Slurm's whole-second clock): 3 of 5 trial runs.
    # a4 waits for a1 or a2. bin's b2 (2 CPUs) would hold 5 CPUs with b1, over the cap, so
    # it waits for b1 although it fits; b3 (1 CPU) keeps within and starts at once. The
    # simulator gets the same limits and the change at the second sacctmgr returned.
    extra = tmp_path / "sched.conf"
    extra.write_text("SchedulerParameters=bf_interval=1,bf_resolution=1\n")
    qos = "MaxJobsPerUser=2 MaxTRESPerUser=cpu=4"
    jobs = [
        WorkloadJob("a1", 1, 60, 13, user="daemon"),
        WorkloadJob("a2", 1, 60, 13, user="daemon"),
        WorkloadJob("a3", 1, 60, 4, submit_offset_s=1, user="daemon"),
        WorkloadJob("a4", 1, 60, 3, submit_offset_s=1, user="daemon"),
        WorkloadJob("b1", 3, 60, 8, submit_offset_s=2, user="bin"),
        WorkloadJob("b2", 2, 60, 3, submit_offset_s=3, user="bin"),
        WorkloadJob("b3", 1, 60, 1, submit_offset_s=3, user="bin"),
    ]
    conf = tmp_path / "slurm.conf"
    applied: list[tuple[float, str]] = []
    rows = run_workload(
        jobs,
        extra,
        cpus=8,
        conf_out=conf,
        progress=False,
        qos=qos,
        qos_changes=[(7.0, "MaxJobsPerUser=3")],
        qos_applied=applied,
    )
    assert all(r["state"] == "COMPLETED" for r in rows), rows
    real = {r["name"]: float(r["start"]) for r in rows}
    end = {r["name"]: float(r["end"]) for r in rows}
    step = applied[0][0]
    # the workload does what it is built for, on real Slurm
    assert step - 1 <= real["a3"] <= end["b1"] + 1, (real, step)
    assert real["a4"] >= min(end["a1"], end["a2"]) - 1
    assert real["b2"] >= end["b1"] - 1 and real["b3"] < real["b2"] - 5
    sim = simulate(jobs, rows, conf, qos=qos, qos_applied=applied)
    assert step - 1 <= sim["a3"] <= end["b1"] + 1 and sim["a4"] > sim["a3"]
    assert sim["b2"] > sim["b3"] + 5
    assert_starts_close(sim, {n: t for n, t in real.items() if n != "a3"})
    unlimited = simulate(jobs, rows, conf)
    assert unlimited["a3"] < step - 3 and unlimited["b2"] < end["b1"] - 3  # the limits held them
