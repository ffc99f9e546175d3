"""Partitions as node pools, partition limits and per-user QOS limits, each against a
hand-worked example (issue 13, item 4)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hpcbase.config import ConfigError
from hpcbase.jobs import JobSpec, JobState
from sim.config import SlurmConfig
from sim.engine import Simulator
from sim.generate import generate
from sim.limits import QosLimits
from sim.traces.read import read_trace
from tests.sim.simhelpers import make_trace, starts

# Submissions scheduled at once (batch_sched_delay=0), so the examples stay simple.
PROMPT = "SchedulerParameters=batch_sched_delay=0\n"
CPU_GPU = (
    PROMPT
    + """NodeName=n[1-4]
NodeName=g[1-2]
PartitionName=cpu Nodes=n[1-4] Default=YES
PartitionName=gpu Nodes=g[1-2]
"""
)


def parted(rows: list[tuple], parts: list[str], total: int = 6):
    """make_trace with each job's partition."""
    return replace(make_trace(rows, total=total), partitions=parts)


def test_a_job_runs_only_on_its_partitions_nodes():
    # 6 nodes: cpu n1-n4, gpu g1-g2. Job 1 fills the cpu partition until t=100; job 2 (cpu,
    # 1 node) must wait for it although both gpu nodes are free; job 3 (gpu, 2 nodes) starts
    # at once. On one pool of 6 nodes job 2 would start at 0.
    cfg = SlurmConfig.from_text(CPU_GPU)
    rows = [(0, 100, 100, 4), (0, 50, 60, 1), (0, 50, 60, 2)]
    sim = Simulator(parted(rows, ["cpu", "cpu", "gpu"]), cfg)
    sim.run()
    assert starts(sim) == {1: 0.0, 3: 0.0, 2: 100.0}
    single = Simulator(make_trace(rows, total=6), SlurmConfig.from_text(PROMPT))
    single.run()
    assert starts(single)[2] == 0.0


def test_a_job_that_does_not_fit_blocks_only_its_own_partition():
    # Job 1 holds 3 cpu nodes; job 2 (cpu, 4 nodes) cannot start and blocks the cpu
    # partition for the main scheduler (job 3, cpu, 1 node, must not jump it: its limit
    # overlaps job 2's reservation), but job 4 in gpu starts at once.
    cfg = SlurmConfig.from_text(CPU_GPU)
    rows = [(0, 100, 100, 3), (0, 50, 100, 4), (0, 50, 500, 1), (0, 50, 100, 2)]
    sim = Simulator(parted(rows, ["cpu", "cpu", "cpu", "gpu"]), cfg)
    sim.run()
    s = starts(sim)
    assert s[1] == 0.0 and s[4] == 0.0
    assert s[2] == 100.0 and s[3] == 150.0


def test_overlapping_partitions_share_their_common_nodes():
    # n1-n4 in "all", n1-n2 also in "small". Job 1 (small, 2 nodes) takes n1-n2. Job 2
    # (all, 3 nodes) waits for it (only n3-n4 free) and then takes n1-n3, lowest nodes
    # first; job 3 (small, 1 node) finds no free node of "small" until job 2 ends.
    cfg = SlurmConfig.from_text(
        PROMPT
        + """NodeName=n[1-4]
PartitionName=all Nodes=n[1-4] Default=YES
PartitionName=small Nodes=n[1-2]
"""
    )
    rows = [(0, 100, 100, 2), (1, 100, 100, 3), (2, 10, 100, 1)]
    sim = Simulator(parted(rows, ["small", "all", "small"], total=4), cfg)
    sim.run()
    assert starts(sim) == {1: 0.0, 2: 100.0, 3: 200.0}


def test_priority_tier_orders_jobs_before_priority():
    # Both partitions hold every node (no pools). Job 1 fills the cluster until t=100; job 2
    # (low tier, submitted first) and job 3 (high tier) both want every node: job 3 first.
    cfg = SlurmConfig.from_text(
        PROMPT
        + """NodeName=n[1-4]
PartitionName=low Nodes=ALL Default=YES
PartitionName=high Nodes=ALL PriorityTier=2
"""
    )
    rows = [(0, 100, 100, 4), (1, 100, 100, 4), (2, 100, 100, 4)]
    sim = Simulator(parted(rows, ["low", "low", "high"], total=4), cfg)
    sim.run()
    assert starts(sim) == {1: 0.0, 3: 100.0, 2: 200.0}


def test_priority_job_factor_feeds_the_partition_factor():
    cfg = SlurmConfig.from_text(
        """PriorityType=priority/multifactor
PriorityWeightPartition=1000
NodeName=n[1-4]
PartitionName=a Nodes=ALL Default=YES PriorityJobFactor=1
PartitionName=b Nodes=ALL PriorityJobFactor=4
"""
    )
    rows = [(0, 100, 100, 4), (1, 100, 100, 4), (2, 100, 100, 4)]
    sim = Simulator(parted(rows, ["a", "a", "b"], total=4), cfg)
    sim.advance(10)
    # weight * factor / the largest factor: 1000 * 1/4 and 1000 * 4/4
    assert sim.job(2).priority == 250 and sim.job(3).priority == 1000
    sim.run()
    assert starts(sim)[3] == 100.0


def test_a_job_over_maxtime_stays_pending_and_blocks_nothing():
    # Slurm 22.05's default EnforcePartLimits=NO: accepted, pending for ever
    # (PartitionTimeLimit), skipped by both schedulers. MaxTime=1 is one minute.
    text = PROMPT + "NodeName=n[1-4]\nPartitionName=p Nodes=ALL Default=YES MaxTime=1\n"
    rows = [(0, 30, 120, 1), (1, 30, 60, 4)]
    sim = Simulator(make_trace(rows, total=4), SlurmConfig.from_text(text))
    sim.run()
    assert starts(sim) == {2: 1.0}
    assert sim.job(1).state is JobState.PENDING and sim.reason(1) == "PartitionTimeLimit"
    # EnforcePartLimits=ALL: refused at submission
    sim = Simulator(
        make_trace(rows, total=4), SlurmConfig.from_text(text + "EnforcePartLimits=ALL")
    )
    sim.run()
    assert sim.job(1).state is JobState.CANCELLED and sim.reason(1) == "PartitionTimeLimit"
    assert starts(sim)[2] == 1.0
    with pytest.raises(ValueError, match="PartitionTimeLimit"):
        sim.submit(JobSpec(units=1, limit=61, runtime=10))


def test_a_job_larger_than_its_partition_is_rejected():
    sim = Simulator(parted([(0, 10, 60, 3)], ["gpu"]), SlurmConfig.from_text(CPU_GPU))
    sim.run()
    assert sim.records[0].state is JobState.CANCELLED
    with pytest.raises(ValueError, match="node configuration"):
        sim.submit(JobSpec(units=3, limit=60, runtime=10, partition="gpu"))
    with pytest.raises(ConfigError, match="job .*unknown partition 'nope'"):
        sim.submit(JobSpec(units=1, limit=60, runtime=10, partition="nope"))


def test_pools_backfill_matches_the_compiled_core_on_one_partition():
    # Jobs of one partition of 8 (of 10) nodes, or 32 (of 40) CPUs, schedule exactly as on a
    # cluster of that partition alone: the per-segment map (sim/pools.py) against the
    # compiled single-pool core (whole-node reservations on the CPU-counted one).
    for extra, per in (("", 1), ("SelectTypeParameters=CR_CPU\n", 4)):
        cpus = f" CPUs={per}" if per > 1 else ""
        pools = SlurmConfig.from_text(
            f"{extra}NodeName=n[1-10]{cpus}\nPartitionName=p Nodes=n[1-8] Default=YES\n"
            "PartitionName=q Nodes=n[9-10]\n"
        )
        alone = SlurmConfig.from_text(f"{extra}NodeName=n[1-8]{cpus}\n")
        tr = generate(400, 8 * per, seed=2, load=0.95)
        a = Simulator(replace(tr, total_units=8 * per), alone, total_units=8 * per)
        b = Simulator(replace(tr, total_units=10 * per), pools, total_units=10 * per)
        for sim in (a, b):
            sim.advance(40000.0)
        pend = [j for j in a.state.pending if a.reason(j) != "Dependency"][:20]
        assert pend and [a.estimate_start(j) for j in pend] == [b.estimate_start(j) for j in pend]
        a.run()
        b.run()
        assert b.n_backfilled > 100
        got = {r.job_id: (r.start, r.end, r.backfill) for r in b.records}
        assert {r.job_id: (r.start, r.end, r.backfill) for r in a.records} == got


def test_max_jobs_per_user_holds_jobs_without_blocking_others():
    # 10 nodes, MaxJobsPerUser=1. Job 1 (user 0, 8 nodes) runs until 100. Job 2 (user 1, 10
    # nodes) is reserved for t=120. Job 3 (user 0, 2 nodes, limit 60) would be backfilled
    # at t=30 but its user already runs a job: held (QOSMaxJobsPerUserLimit), no
    # reservation; job 4 (user 2, same shape) is backfilled in its place.
    rows = [(0, 100, 100, 8, 0), (1, 10, 100, 10, 1), (2, 50, 60, 2, 0), (2, 50, 60, 2, 2)]
    lim = QosLimits(max_jobs_per_user=1)
    sim = Simulator(make_trace(rows), limits=lim)
    sim.advance(40)
    assert sim.reason(3) == "QOSMaxJobsPerUserLimit" and sim.reason(2) == "Resources"
    sim.run()
    s = starts(sim)
    assert s[4] == 30.0 and s[2] == 100.0 and s[3] == 110.0
    free = Simulator(make_trace(rows))
    free.run()
    assert starts(free)[3] == 30.0


def test_max_jobs_per_user_in_the_main_scheduler():
    # MaxJobsPerUser=2, no backfill: user 0's three 1-node jobs run two at a time; user 1's
    # job, last in the queue, is not blocked by the held one.
    rows = [(0, 100, 100, 1, 0), (0, 100, 100, 1, 0), (0, 100, 100, 1, 0), (0, 100, 100, 1, 1)]
    cfg = SlurmConfig(batch_sched_delay=0, scheduler_type="sched/builtin")
    sim = Simulator(make_trace(rows), cfg, limits=QosLimits(max_jobs_per_user=2))
    sim.run()
    assert starts(sim) == {1: 0.0, 2: 0.0, 4: 0.0, 3: 100.0}


def test_max_tres_per_user_nodes_and_cpus():
    # node=4: user 0's two 3-node jobs run one after the other.
    rows = [(0, 100, 100, 3, 0), (0, 100, 100, 3, 0), (0, 100, 100, 3, 1)]
    cfg = SlurmConfig(batch_sched_delay=0)
    sim = Simulator(make_trace(rows), cfg, limits=QosLimits.from_text("MaxTRESPerUser=node=4"))
    sim.advance(1)
    assert sim.reason(2) == "QOSMaxNodePerUserLimit"
    sim.run()
    assert starts(sim) == {1: 0.0, 3: 0.0, 2: 100.0}
    # cpu=64 on a CPU-counted cluster of 4 nodes x 32 CPUs: 40 + 30 CPUs exceed it
    conf = SlurmConfig.from_text("SchedulerParameters=batch_sched_delay=0\nNodeName=n[1-4] CPUs=32")
    rows = [(0, 100, 100, 40, 0), (0, 100, 100, 30, 0), (0, 100, 100, 20, 0)]
    sim = Simulator(
        make_trace(rows, total=128, unit="procs"), conf, limits=QosLimits(max_cpus_per_user=64)
    )
    sim.advance(1)
    assert sim.reason(2) == "QOSMaxCpuPerUserLimit"
    sim.run()
    assert starts(sim) == {1: 0.0, 3: 0.0, 2: 100.0}


def test_max_submit_jobs_per_user_rejects_at_submission():
    rows = [(0, 100, 100, 1, 0), (0, 100, 100, 1, 0), (0, 100, 100, 1, 0), (150, 10, 100, 1, 0)]
    sim = Simulator(make_trace(rows), limits=QosLimits(max_submit_jobs_per_user=2))
    sim.run()
    assert sim.job(3).state is JobState.CANCELLED
    assert sim.reason(3) == "QOSMaxSubmitJobPerUserLimit"
    assert starts(sim)[4] == 150.0  # after jobs 1 and 2 ended
    sim2 = Simulator(make_trace(rows[:2]), limits=QosLimits(max_submit_jobs_per_user=2))
    sim2.advance(0)
    with pytest.raises(ValueError, match="QOSMaxSubmitJobPerUserLimit"):
        sim2.submit(JobSpec(units=1, limit=60, runtime=10))


def test_snapshot_restore_with_pools_and_limits():
    cfg = SlurmConfig.from_text(CPU_GPU)
    rows = [(i * 7, 50 + (i * 37) % 400, 500, 1 + (i * 5) % 2, i % 3) for i in range(200)]
    parts = ["gpu" if i % 4 == 0 else "cpu" for i in range(200)]
    sim = Simulator(parted(rows, parts), cfg, limits=QosLimits(max_jobs_per_user=2))
    sim.advance(900.0)
    blob = sim.snapshot()
    sim.run()
    first = [(r.job_id, r.start, r.end) for r in sim.records]
    assert len(first) == 200
    sim.restore(blob)
    sim.run()
    assert [(r.job_id, r.start, r.end) for r in sim.records] == first


def test_limits_file_errors_name_file_and_line(tmp_path):
    path = tmp_path / "qos.conf"
    path.write_text("# normal\nMaxJobsPerUser=4 MaxTRESPerUser=node=8,cpu=-1\n")
    lim = QosLimits.from_file(path)
    assert lim == QosLimits(max_jobs_per_user=4, max_nodes_per_user=8)
    for bad, needle in (
        ("MaxJobs=x", "qos.conf:2: unknown limit"),
        ("MaxJobsPerUser=x", "qos.conf:2: MaxJobsPerUser"),
        ("MaxTRESPerUser=gres/gpu=2", "qos.conf:2: MaxTRESPerUser"),
    ):
        path.write_text("# normal\n" + bad + "\n")
        with pytest.raises(ConfigError, match=needle):
            QosLimits.from_file(path)


def test_partition_nodes_must_be_known():
    # as in Slurm, the NodeName lines may come after the partitions
    cfg = SlurmConfig.from_text("PartitionName=p Nodes=x[1-2] Default=YES\nNodeName=x[1-3]\n")
    assert cfg.partitions["p"].nodes == ("x1", "x2")
    with pytest.raises(
        ConfigError, match="<slurm.conf>:2: PartitionName=p: Nodes: x3 is on no NodeName"
    ):
        SlurmConfig.from_text("NodeName=x[1-2]\nPartitionName=p Nodes=x[1-9]\n")


def test_traces_carry_each_jobs_partition(tmp_path):
    # SWF field 15, the queue number, names the partition; a config of two disjoint pools
    # runs each job on its own (jobs 1 and 2 both want 2 nodes, in different partitions).
    swf = tmp_path / "log.swf"
    swf.write_text(
        "; MaxProcs: 4\n"
        "1 0 0 100 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 -1 -1\n"
        "2 0 0 100 2 -1 -1 2 100 -1 1 2 1 -1 2 -1 -1 -1\n"
        "3 0 0 100 2 -1 -1 2 100 -1 1 3 1 -1 1 -1 -1 -1\n"
    )
    trace = read_trace(swf, cache=False)
    assert trace.partitions == ["1", "2", "1"]
    cfg = SlurmConfig.from_text(
        PROMPT + "NodeName=n[1-4]\nPartitionName=1 Nodes=n[1-2] Default=YES\n"
        "PartitionName=2 Nodes=n[3-4]\n"
    )
    sim = Simulator(trace, cfg)
    sim.run()
    assert starts(sim) == {1: 0.0, 2: 0.0, 3: 100.0}
    # without partitions in the config, the trace's are ignored (one pool of 4)
    sim = Simulator(trace, SlurmConfig.from_text(PROMPT))
    sim.run()
    assert starts(sim)[3] == 100.0 and sim.trace is trace


def test_sacct_and_csv_traces_carry_partitions_and_the_cache_keeps_them(tmp_path):
    from tests.sim.test_traces_sacct import PARSABLE

    path = tmp_path / "sacct.txt"
    path.write_text(PARSABLE.replace("|gpu|2024-03-01T11:40", "|big,gpu|2024-03-01T11:40"))
    trace = read_trace(path, cache=False)
    assert set(trace.partitions) == {"gpu", "big"}  # the first of several partitions
    csv = tmp_path / "jobs.csv"
    csv.write_text(
        "job_id,user,submit,start,end,nodes,limit,partition\n"
        "1,u,0,0,60,1,600,cpu\n2,u,10,10,70,1,600,gpu\n"
    )
    assert read_trace(csv, cache=False).partitions == ["cpu", "gpu"]
    pytest.importorskip("pyarrow")
    first = read_trace(csv, cache=True)
    again = read_trace(csv, cache=True)
    assert first.partitions == again.partitions == ["cpu", "gpu"]


def test_replay_cli_with_node_pools_and_qos_limits(tmp_path):
    import subprocess
    import sys

    conf = tmp_path / "slurm.conf"
    conf.write_text(
        "NodeName=n[1-4]\nNodeName=g[1-2]\n"
        "PartitionName=1 Nodes=n[1-4] Default=YES MaxTime=30\nPartitionName=2 Nodes=g[1-2]\n"
    )
    swf = tmp_path / "log.swf"
    swf.write_text(
        "; MaxProcs: 6\n"
        "1 0 0 100 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 -1 -1\n"
        "2 0 0 100 2 -1 -1 2 100 -1 1 2 1 -1 2 -1 -1 -1\n"
        "3 0 0 100 2 -1 -1 2 3600 -1 1 3 1 -1 1 -1 -1 -1\n"
        "4 0 0 100 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 -1 -1\n"
    )
    out = tmp_path / "s.csv"
    res = subprocess.run(
        [sys.executable, "-m", "sim.cli", "replay", str(swf), "--slurm-conf", str(conf)]
        + ["--qos-limits", "MaxJobsPerUser=1", "--no-cache", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert "cluster size from the partitions' Nodes=" in res.stderr
    assert "1 jobs never started: PartitionTimeLimit" in res.stderr
    lines = out.read_text().splitlines()[1:]
    got = {int(r.split(",")[0]): float(r.split(",")[6]) for r in lines}
    assert got == {1: 0.0, 2: 0.0, 4: 100.0}  # job 4: same user as job 1 (MaxJobsPerUser=1)


@pytest.mark.parametrize("pools", [False, True])
def test_backfill_counts_the_jobs_it_starts_in_the_same_pass(pools):
    # MaxJobsPerUser=1, nobody running: the backfill pass at t=0 (before the delayed main
    # scheduler run at t=3) may start job 1 of user 0 but not also job 2, which waits for
    # job 1's end; job 3 (user 1) starts with job 1. Both the compiled plan and the
    # node-pool walk.
    rows = [(0, 100, 100, 1, 0), (0, 100, 100, 1, 0), (0, 100, 100, 1, 1)]
    cfg = SlurmConfig()
    trace = make_trace(rows, total=6)
    if pools:
        cfg = SlurmConfig.from_text(CPU_GPU.replace(PROMPT, ""))
        trace = replace(trace, partitions=["cpu"] * 3)
    sim = Simulator(trace, cfg, limits=QosLimits(max_jobs_per_user=1))
    sim.run()
    assert starts(sim) == {1: 0.0, 3: 0.0, 2: 100.0}
    assert all(r.backfill for r in sim.records if r.job_id != 2)


@pytest.mark.parametrize("pools", [False, True])
def test_backfill_depth_passes_over_jobs_the_running_jobs_limit_holds(pools):
    # 4 nodes, MaxJobsPerUser=1, bf_max_job_test=2. Job 1 (user 0, 3 nodes) runs until 100;
    # job 2 (user 1, 4 nodes) is reserved for t=100; user 0's jobs 3 and 4 are held by the
    # running-jobs limit. Slurm 22.05's backfill passes those over before they count
    # towards the depth (acct_policy_job_runnable_pre_select comes before the will-run test
    # that bf_max_job_test counts), so job 5 (user 2, 1 node, limit 60) is the second job
    # tested and starts at the first pass, t=30. With a depth of 1 it is not reached.
    rows = [(0, 100, 100, 3, 0), (1, 10, 100, 4, 1)]
    rows += [(2, 50, 60, 1, 0), (2, 50, 60, 1, 0), (2, 50, 60, 1, 2)]
    lim = QosLimits(max_jobs_per_user=1)
    got = {}
    for depth in (1, 2):
        if pools:
            cfg = SlurmConfig.from_text(
                f"SchedulerParameters=bf_max_job_test={depth}\n" + CPU_GPU.replace(PROMPT, "")
            )
            trace = replace(make_trace(rows, total=6), partitions=["cpu"] * 5)
        else:
            cfg, trace = SlurmConfig(bf_max_job_test=depth), make_trace(rows, total=4)
        sim = Simulator(trace, cfg, limits=lim)
        sim.run()
        got[depth] = starts(sim)
        assert got[depth][2] == 100.0
    assert got[2][5] == 30.0 and got[1][5] > 100.0


@pytest.mark.parametrize("pools", [False, True])
def test_backfill_depth_passes_over_jobs_held_by_a_start_in_the_same_pass(pools):
    # 4 nodes, MaxJobsPerUser=1, bf_max_job_test=3. Job 1 (user 1, 2 nodes) runs until 100;
    # job 2 (user 3, 4 nodes) waits for its end, reserved, and counts first. At the first pass
    # (t=30) job 3 (user 0) starts and counts second; job 4 (user 0) is then held by the
    # running-jobs limit at its turn, so Slurm passes it over uncounted and job 5 (user 2)
    # is the third job tested: it starts in the same pass, in both walks (the node-pool
    # walk took its depth from the holds at the pass's start before session 37, and
    # started job 5 a pass later).
    rows = [(0, 100, 100, 2, 1), (1, 10, 100, 4, 3)]
    rows += [(2, 50, 60, 1, 0), (2, 50, 60, 1, 0), (2, 50, 60, 1, 2)]
    if pools:
        cfg = SlurmConfig.from_text(
            "SchedulerParameters=bf_max_job_test=3\n" + CPU_GPU.replace(PROMPT, "")
        )
        trace = replace(make_trace(rows, total=6), partitions=["cpu"] * 5)
    else:
        cfg, trace = SlurmConfig(bf_max_job_test=3), make_trace(rows, total=4)
    sim = Simulator(trace, cfg, limits=QosLimits(max_jobs_per_user=1))
    sim.run()
    got = starts(sim)
    assert got[3] == got[5] == 30.0 and got[4] > 30.0


@pytest.mark.parametrize("pools", [False, True])
def test_limits_hold_on_a_random_workload(pools):
    # Never more than 2 running jobs or 5 nodes per user, never more nodes than a partition
    # has.
    tr = generate(500, 8, seed=4, load=0.9)
    tr = replace(tr, unit="nodes", total_units=10, user=tr.user % 4)
    cfg = SlurmConfig()
    if pools:
        cfg = SlurmConfig.from_text(
            "NodeName=n[1-10]\nPartitionName=a Nodes=n[1-8] Default=YES\n"
            "PartitionName=b Nodes=n[5-10]\n"
        )
        tr = replace(tr, partitions=["b" if i % 3 == 0 else "a" for i in range(len(tr))])
    sim = Simulator(tr, cfg, limits=QosLimits(max_jobs_per_user=2, max_nodes_per_user=5))
    sim.run()
    part = {int(j): (tr.partitions[i] if pools else "") for i, j in enumerate(tr.job_id)}

    def part_of(r):  # noqa: ANN001, ANN202
        return part[r.job_id]

    # a job of more than 5 nodes waits for ever (its user's limit), one larger than its
    # partition is rejected; all others end
    held = list(sim.state.pending)
    assert len(sim.records) + len(held) == len(tr)
    assert held and all(sim.reason(j) == "QOSMaxNodePerUserLimit" for j in held)
    assert all(sim.job(j).units > 5 for j in held)
    assert all(r.units <= 6 or part_of(r) == "a" for r in sim.records if r.start == r.start)
    events = [(r.start, 1, r) for r in sim.records if r.start == r.start]  # not rejected
    events = sorted(events + [(r.end, 0, r) for _, _, r in events], key=lambda e: (e[0], e[1]))
    jobs: dict[int, int] = {}
    nodes: dict[int, int] = {}
    used: dict[str, int] = {}
    for _, up, r in events:
        d = 1 if up else -1
        jobs[r.user] = jobs.get(r.user, 0) + d
        nodes[r.user] = nodes.get(r.user, 0) + d * r.units
        used[part_of(r)] = used.get(part_of(r), 0) + d * r.units
        assert jobs[r.user] <= 2 and nodes[r.user] <= 5
        assert used.get("", 0) <= 10 and used.get("a", 0) + used.get("b", 0) <= 10
        assert used.get("a", 0) <= 8 and used.get("b", 0) <= 6
