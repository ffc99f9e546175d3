"""Each scheduling rule against a hand-worked example."""

from __future__ import annotations

import math

import pytest

from hpcbase.jobs import JobSpec, JobState
from sim.config import SlurmConfig
from sim.engine import BackfillCycle, Simulator
from sim.limits import QosLimits
from tests.sim.simhelpers import make_trace, starts

BUILTIN = SlurmConfig(scheduler_type="sched/builtin")
# Submissions scheduled at once (batch_sched_delay=0), so dependency examples stay simple.
PROMPT = SlurmConfig(batch_sched_delay=0)


def test_backfill_fills_a_hole_but_never_delays_the_reservation():
    # 10 nodes. Job 1 holds 8 until t=100. Job 2 needs all 10 -> reserved for t=120 (the end
    # of job 1 rounded up to bf_resolution=60). Job 3 (2 nodes, limit 60) fits before that
    # and is backfilled at the first backfill tick (t=30). Job 4 (2 nodes, limit 200) would
    # overlap the reservation, so it must wait for job 2.
    sim = Simulator(
        make_trace([(0, 100, 100, 8), (1, 10, 100, 10), (2, 50, 60, 2), (3, 50, 200, 2)])
    )
    sim.run()
    s = starts(sim)
    assert s[1] == 0 and s[3] == 30.0
    assert s[2] == 100.0  # as soon as job 1 ends, not delayed by the backfilled job
    assert s[4] >= 110.0
    bf = {r.job_id: r.backfill for r in sim.records}
    assert bf[3] and not bf[2]


def test_backfill_sees_a_job_end_one_pass_later_the_main_scheduler_at_once():
    # 10 nodes, all busy: job 1 (6 nodes) ends at t=60, a backfill tick; job 2 (4 nodes)
    # holds its share until its limit, 300. Job 3 wants all 10 (reserved for t=300) and
    # blocks the main scheduler; job 4 (6 nodes, limit 100) fits the hole, but the backfill
    # pass of t=60 runs before that second's job ends (as Slurm 22.05's loop does), so job 4
    # starts at the next tick, t=90.
    rows = [(0, 60, 60, 6), (0, 200, 300, 4), (1, 10, 100, 10), (2, 10, 100, 6)]
    sim = Simulator(make_trace(rows))
    sim.run()
    s = starts(sim)
    assert s[4] == 90.0 and s[3] == 200.0  # job 2 ends early, at 200
    # Without job 3 in the way, the main scheduler starts job 4 in the very second job 1 ends.
    sim = Simulator(make_trace([rows[0], rows[1], rows[3]]))
    sim.run()
    assert starts(sim)[3] == 60.0


# The main scheduler waits for batch submissions longer than these examples last, so every
# start below is the backfill loop's (or the main scheduler's at a job end).
CYCLING = SlurmConfig(bf_interval=1.0, batch_sched_delay=100.0)


def test_free_running_backfill_cycle_drifts_by_each_passs_run_time():
    # 10 nodes. Job 1 (7 nodes) runs long; job 2 (10 nodes) waits behind it all along, so
    # every wake-up finds work and runs a pass of 0.125 s: wake-ups at 0.5 (job 1 starts),
    # then 0.5 + 1.125 = 1.625, 2.75, 3.875, 5.0, 6.125. Jobs 3-5 (1 node, limit 10) fit
    # before job 2's reservation and start at the first wake-up after their submission.
    rows = [(0, 500, 1000, 7), (0, 10, 1000, 10), (3, 200, 10, 1), (4, 200, 10, 1), (5, 200, 10, 1)]
    sim = Simulator(make_trace(rows), CYCLING, cycle=BackfillCycle(phase=0.5, cost=0.125))
    sim.run(until=20)
    s = {j: sim.job(j).start for j in range(1, 6) if j != 2}
    assert s == {1: 0.5, 3: 3.875, 4: 5.0, 5: 5.0}  # 5 arrives in the second of a wake-up
    # Off by default: passes on whole multiples of bf_interval.
    sim = Simulator(make_trace(rows), CYCLING)
    sim.run(until=20)
    assert [sim.job(j).start for j in (1, 3, 4, 5)] == [0.0, 3.0, 4.0, 5.0]


def test_idle_backfill_wake_ups_keep_the_phase():
    # Job 1 starts at the wake-up of 0.25 (a pass: next wake-up 1.375); then nothing waits,
    # so the wake-ups of 1.375 ... 4.375 are idle and cost nothing. Job 1's end at 5.25 is
    # work for the wake-up of 5.375 (next: 6.5); those of 6.5 ... 9.5 are idle again, and
    # job 2, submitted at 10, starts at 10.5 (not 10.5 + 8 x 0.125).
    sim = Simulator(
        make_trace([(0, 5, 10, 2), (10, 5, 10, 2)]),
        CYCLING,
        cycle=BackfillCycle(phase=0.25, cost=0.125),
    )
    sim.run()
    assert starts(sim) == {1: 0.25, 2: 10.5}


def test_completion_latency_delays_the_freed_units():
    # Job 1 (10 nodes) starts at 0.5 and runs 5 s; slurmctld processes its end 0.25 s later,
    # at 5.75, when the main scheduler starts job 2 (waiting for all 10 nodes) at once.
    sim = Simulator(
        make_trace([(0, 5, 100, 10), (0, 5, 100, 10)]),
        CYCLING,
        cycle=BackfillCycle(phase=0.5, end_latency=0.25),
    )
    sim.run()
    rec = {r.job_id: r for r in sim.records}
    assert rec[1].start == 0.5 and rec[1].end == 5.75
    assert rec[2].start == 5.75 and not rec[2].backfill


def test_an_epilog_in_progress_holds_every_start_then_runs_the_main_scheduler():
    # As above, but the node stays COMPLETING 0.5 s after job 1's end is processed (5.75):
    # nothing starts before 6.25, when the main scheduler starts job 2, before the wake-up
    # of 6.5.
    rows = [(0, 5, 100, 10), (0, 5, 100, 10)]
    cycle = BackfillCycle(phase=0.5, end_latency=0.25, completing=0.5)
    sim = Simulator(make_trace(rows), CYCLING, cycle=cycle)
    sim.run()
    rec = {r.job_id: r for r in sim.records}
    assert rec[1].end == 5.75 and rec[2].start == 6.25 and not rec[2].backfill


def test_the_completing_pause_blocks_backfill_and_follows_only_ends_near_a_pass():
    # 10 nodes; wake-ups at 0.5, 1.5, ... (cost 0). Job 1 (6 nodes) ends at 5.5, processed
    # at 5.75; job 2 (4 nodes) runs to 40.75; job 3 (10 nodes) waits for both, and blocks
    # the main scheduler. Job 4 (6 nodes, limit 20) fits the hole job 1 leaves: the backfill
    # wake-up of 6.5 starts it.
    rows = [(0, 5, 100, 6), (0, 40, 100, 4), (0, 10, 100, 10), (1, 10, 20, 6)]

    def job4_start(**kw: float) -> float:
        cycle = BackfillCycle(phase=0.5, end_latency=0.25, **kw)
        sim = Simulator(make_trace(rows), CYCLING, cycle=cycle)
        sim.run(until=20)
        assert sim.job(4).backfill
        return sim.job(4).start

    assert job4_start() == 6.5
    # Completing until 6.75: the pass of 6.5 can start nothing, the main scheduler at 6.75
    # stops at job 3, and job 4 waits for the wake-up of 7.5.
    assert job4_start(completing=1.0) == 7.5
    # Job 1's end comes 0.25 s after the pass of 5.5 began: a window of 0.3 s holds it, one
    # of 0.2 s does not.
    assert job4_start(completing=1.0, completing_window=0.3) == 7.5
    assert job4_start(completing=1.0, completing_window=0.2) == 6.5


def test_measured_backfill_wake_ups_are_replayed():
    # Wake-ups measured at 0.3, 1.32, 2.35 and 6.0 (a real run's passes). Between 2.35 and
    # 6.0 the real loop found no work and woke idly each second: at 3.35, 4.35 and 5.35.
    # After the last one it free-runs: the pass of 6.0 puts the next wake-up at 7.125 (cost
    # 0.125), and idle ones keep that phase. Jobs (1 node each, 10 free) start at the first
    # wake-up after their submission; the main scheduler waits 100 s.
    rows = [(0, 100, 200, 1), (4, 100, 200, 1), (5.6, 100, 200, 1), (8.2, 100, 200, 1)]
    cycle = BackfillCycle(phase=0.5, cost=0.125, wakes=(0.3, 1.32, 2.35, 6.0))
    sim = Simulator(make_trace(rows), CYCLING, cycle=cycle)
    sim.run()
    assert starts(sim) == {1: 0.3, 2: 4.35, 3: 6.0, 4: 9.125}
    assert all(r.backfill for r in sim.records)


def test_an_epilog_holds_every_start_briefly_after_each_end():
    # 10 nodes; measured wake-ups at 0.5 ... 4.5, then 5.755, 6.755. Job 1 (6 nodes) starts at
    # 0.5 and its end is processed at 5.75; job 2 (4 nodes) runs long; job 3 (10 nodes)
    # waits and blocks the main scheduler; job 4 (6 nodes, limit 20) fits the hole job 1
    # leaves. The pass of 5.755 comes 5 ms after that end: with a 10-ms epilog (the node
    # COMPLETING) it can start nothing, and job 4 waits for the pass of 6.755.
    rows = [(0, 5, 100, 6), (0, 40, 100, 4), (0, 10, 100, 10), (1, 10, 20, 6)]
    wakes = (0.5, 1.5, 2.5, 3.5, 4.5, 5.755, 6.755, 7.755)

    def job4_start(epilog: float) -> float:
        cycle = BackfillCycle(end_latency=0.25, wakes=wakes, epilog=epilog)
        sim = Simulator(make_trace(rows), CYCLING, cycle=cycle)
        sim.run(until=20)
        assert sim.job(1).end == 5.75 and sim.job(4).backfill
        return sim.job(4).start

    assert job4_start(0.0) == 5.755
    assert job4_start(0.01) == 6.755
    assert job4_start(0.004) == 5.755  # an epilog shorter than the gap holds nothing


def test_a_job_end_may_run_no_main_scheduler():
    # Job 1 (10 nodes) starts at 0.5, its end is processed at 5.75. By default the main
    # scheduler runs at once and starts job 2 (10 nodes) then; after an epilog of 0.5 s, at
    # 6.25. With main_on_end=False (Slurm only queues the main scheduler for its background
    # loop), the backfill wake-up of 6.5 starts it.
    rows = [(0, 5, 100, 10), (0, 5, 100, 10)]

    def job2(**kw: object) -> tuple[float, bool]:
        cycle = BackfillCycle(phase=0.5, end_latency=0.25, **kw)  # type: ignore[arg-type]
        sim = Simulator(make_trace(rows), CYCLING, cycle=cycle)
        sim.run()
        return sim.job(2).start, sim.job(2).backfill

    assert job2() == (5.75, False)
    assert job2(epilog=0.5) == (6.25, False)
    assert job2(main_on_end=False) == (6.5, True)
    assert job2(main_on_end=False, epilog=0.5) == (6.5, True)
    # An epilog still running at a wake-up leaves the pass to the next, even with nothing
    # else to come: here submissions run the main scheduler at once (job 1 at 0), job 1's
    # end (5.25) holds starts until 6.15, past the wake-up of 5.5.
    cycle = BackfillCycle(phase=0.5, end_latency=0.25, epilog=0.9, main_on_end=False)
    sim = Simulator(
        make_trace(rows), SlurmConfig(bf_interval=1.0, batch_sched_delay=0), cycle=cycle
    )
    sim.run()
    assert starts(sim) == {1: 0.0, 2: 6.5}


def test_whole_second_backfill_map_is_closed_at_the_end():
    # 10 nodes, bf_resolution=1; a pass at 0.8 (the main scheduler waits 100 s). Job 1
    # (6 nodes, limit 60) starts; job 2 (10 nodes) is reserved for its end; job 3 (4 nodes,
    # limit 60) would end with it. In Slurm's whole seconds both start at second 0 and end at
    # 60, the second job 2's reservation begins: job 3 would delay it and waits. Job 4 (4
    # nodes, limit 59) ends at 59 (not 59.8) and is backfilled. With fractional times (the
    # default) job 1 ends at 60.8 in the map and job 3 at 60.8 too: it fits, and takes the
    # nodes job 4 would need.
    cfg = SlurmConfig(bf_interval=1.0, batch_sched_delay=100.0, bf_resolution=1)
    rows = [(0, 50, 60, 6), (0, 10, 100, 10), (0, 10, 60, 4), (0, 10, 59, 4)]

    def started_at_first_pass(whole: bool) -> list[int]:
        cycle = BackfillCycle(phase=0.8, whole_seconds=whole)
        sim = Simulator(make_trace(rows), cfg, cycle=cycle)
        sim.run(until=1)
        return sorted(j for j in range(1, 5) if sim.job(j).start == 0.8)

    assert started_at_first_pass(True) == [1, 4]
    assert started_at_first_pass(False) == [1, 3]


def test_whole_second_backfill_map_under_qos_limits_too():
    # The example above with a QOS limit that binds no one (each job its own user): the plan
    # under limits starts one job at a time too, so that job 1's end is in the map at its
    # whole second (60), and job 3 would still delay job 2. A real run under
    # MaxJobsPerUser=2 (tests/sim/test_saved_qos_run.py) met this case.
    cfg = SlurmConfig(bf_interval=1.0, batch_sched_delay=100.0, bf_resolution=1)
    rows = [(0, 50, 60, 6, 1), (0, 10, 100, 10, 2), (0, 10, 60, 4, 3), (0, 10, 59, 4, 4)]
    limits = QosLimits.from_text("MaxJobsPerUser=2")
    cycle = BackfillCycle(phase=0.8, whole_seconds=True)
    sim = Simulator(make_trace(rows), cfg, cycle=cycle, limits=limits)
    sim.run(until=1)
    assert sorted(j for j in range(1, 5) if sim.job(j).start == 0.8) == [1, 4]


def test_measured_main_scheduler_runs_alone_run_it_until_the_last():
    # No backfill; slurmctld's log had main-scheduler runs at 1.785 (default depth, here one
    # job) and 2.79 (the full queue). Jobs 1 and 2 arrive at 0.5: job 1 starts at the first
    # measured run (not at 0.5 + batch_sched_delay), job 2 at the full one. After the last
    # measured run the model resumes: job 3, submitted at 6, waits batch_sched_delay (3 s).
    cfg = SlurmConfig(scheduler_type="sched/builtin", default_queue_depth=1)
    rows = [(0.5, 10, 100, 2), (0.5, 10, 100, 2), (6, 10, 100, 2)]
    cycle = BackfillCycle(main_on_end=False, main_wakes=(1.785, 2.79), main_full=(False, True))
    sim = Simulator(make_trace(rows), cfg, cycle=cycle)
    sim.run()
    assert starts(sim) == {1: 1.785, 2: 2.79, 3: 9.0}


def test_background_loop_ticks_run_the_main_scheduler():
    # slurmctld's background loop (controller.c, _slurmctld_background) ticks at 0.6 + 1.01 k;
    # a full run at second 9 with sched_interval 10 means it started at second -1, both clocks
    # set then. No backfill, one job per default-depth run, 4 units.
    cfg = SlurmConfig(scheduler_type="sched/builtin", default_queue_depth=1, sched_interval=10)
    rows = [(0.2, 3, 100, 2), (0.2, 10, 100, 2), (10.0, 1, 100, 2)]
    cycle = BackfillCycle(main_ticks=(0.6, 0.01, 9.0))
    sim = Simulator(make_trace(rows, total=4), cfg, cycle=cycle)
    sim.run()
    # the submissions' request runs at the first tick 3 whole seconds after -1 (2.62): job 1;
    # job 1's end (5.62) requests the next: the first tick of second 5 on, 5.65: job 2. The
    # full run at 9.69 found nothing pending, yet it set the clocks: job 3, submitted at 10,
    # waits for second 12 (12.72), not second 8 after job 2's run.
    assert starts(sim) == pytest.approx({1: 2.62, 2: 5.65, 3: 12.72})


def test_background_loop_ends_with_a_job_that_can_never_start():
    cycle = BackfillCycle(0.5, 0.125, 0.25, main_ticks=(0.6, 0.002, 9.0))
    sim = Simulator(make_trace([], total=10), CYCLING, cycle=cycle)
    bad = sim.submit(JobSpec(units=1, limit=100, runtime=40, exit_code=1))
    never = sim.submit(JobSpec(units=1, limit=100, runtime=5, dependency=f"afterok:{bad}"))
    sim.run()
    assert sim.job(bad).state is JobState.FAILED
    assert sim.job(never).state is JobState.PENDING and sim.next_event_time() == math.inf


def test_backfill_cycle_ends_with_a_job_that_can_never_start():
    # A job whose dependency can never be met stays pending: the free-running loop must not
    # keep the run going once nothing else is to come.
    sim = Simulator(make_trace([], total=10), CYCLING, cycle=BackfillCycle(0.5, 0.125, 0.25))
    bad = sim.submit(JobSpec(units=1, limit=100, runtime=40, exit_code=1))
    never = sim.submit(JobSpec(units=1, limit=100, runtime=5, dependency=f"afterok:{bad}"))
    sim.run()
    assert sim.job(bad).state is JobState.FAILED and sim.job(bad).end == 40.75
    assert sim.job(never).state is JobState.PENDING and sim.next_event_time() == math.inf


def test_without_backfill_the_main_scheduler_keeps_strict_order():
    sim = Simulator(make_trace([(0, 100, 100, 8), (1, 10, 100, 10), (2, 50, 60, 2)]), BUILTIN)
    sim.run()
    s = starts(sim)
    # job 1 waits for the delayed main-scheduler run (batch_sched_delay=3 s), ends at 103
    assert s[1] == 3.0 and s[3] >= s[2] == 103.0


def test_job_is_killed_at_its_limit():
    sim = Simulator(make_trace([(0, 500, 100, 1), (0, 50, 100, 1)]))
    sim.run()
    recs = {r.job_id: r for r in sim.records}
    assert recs[1].state is JobState.TIMEOUT and recs[1].end == 100.0
    assert recs[2].state is JobState.COMPLETED and recs[2].end == 50.0


def test_age_does_not_accrue_while_dependent():
    cfg = SlurmConfig(
        priority_type="priority/multifactor", weight_age=10000, max_age=1000.0, calc_period=60.0
    )
    # Job 1 occupies the whole cluster until t=600. Job 2 depends on job 1 (submitted at 0);
    # job 3 has no dependency (submitted at 10). Both want the whole cluster afterwards.
    sim = Simulator(make_trace([(0, 600, 700, 4), (10, 100, 200, 4)], total=4), cfg)
    sim.advance(0)
    dep = sim.submit(JobSpec(units=4, limit=200, runtime=100, dependency="afterany:1"))
    sim.advance(599)
    assert math.isnan(sim.job(dep).eligible)
    sim.run()
    view = sim.job(dep)
    assert view.eligible == 600.0
    s = starts(sim)
    # Job 3 accrued ~590 s of age by t=600, the dependent job none: job 3 goes first.
    assert s[2] == 600.0 and s[dep] == 700.0


def test_age_orders_jobs_by_eligibility_when_weighted():
    cfg = SlurmConfig(
        priority_type="priority/multifactor",
        weight_age=10000,
        weight_job_size=0,
        calc_period=60.0,
        max_age=86400.0,
    )
    sim = Simulator(
        make_trace([(0, 1000, 1000, 4), (10, 10, 100, 2), (500, 10, 100, 3)], total=4), cfg
    )
    sim.run()
    s = starts(sim)
    assert s[2] == 1000.0 and s[3] == 1010.0


def test_singleton_runs_one_at_a_time():
    sim = Simulator(make_trace([], total=10), PROMPT)
    a = sim.submit(JobSpec(units=1, limit=100, runtime=50, name="train", dependency="singleton"))
    b = sim.submit(JobSpec(units=1, limit=100, runtime=50, name="train", dependency="singleton"))
    c = sim.submit(JobSpec(units=1, limit=100, runtime=50, name="other", dependency="singleton"))
    sim.run()
    s = starts(sim)
    assert s[a] == 0 and s[c] == 0
    assert s[b] == 50.0


def test_afterok_afternotok_and_after_plus_minutes():
    sim = Simulator(make_trace([], total=10), PROMPT)
    ok = sim.submit(JobSpec(units=1, limit=100, runtime=30))
    bad = sim.submit(JobSpec(units=1, limit=100, runtime=40, exit_code=1))
    j_ok = sim.submit(JobSpec(units=1, limit=100, runtime=5, dependency=f"afterok:{ok}"))
    j_notok = sim.submit(JobSpec(units=1, limit=100, runtime=5, dependency=f"afternotok:{bad}"))
    never = sim.submit(JobSpec(units=1, limit=100, runtime=5, dependency=f"afterok:{bad}"))
    later = sim.submit(JobSpec(units=1, limit=100, runtime=5, dependency=f"after:{ok}+2"))
    sim.run()
    s = starts(sim)
    assert s[j_ok] == 30.0 and s[j_notok] == 40.0 and s[later] == 120.0
    assert never not in s and sim.job(never).state is JobState.PENDING
    assert sim.job(bad).state is JobState.FAILED


def test_begin_time_defers_eligibility():
    sim = Simulator(make_trace([], total=10), PROMPT)
    j = sim.submit(JobSpec(units=1, limit=100, runtime=5, begin=300.0))
    sim.run()
    assert starts(sim)[j] == 300.0


def test_snapshot_restore_replays_the_same_future():
    rows = [(i * 7, 50 + (i * 37) % 400, 500, 1 + (i * 5) % 6) for i in range(300)]
    sim = Simulator(
        make_trace(rows, total=10),
        SlurmConfig(priority_type="priority/multifactor", weight_fairshare=1000, weight_age=100),
    )
    sim.advance(900.0)
    blob = sim.snapshot()
    sim.run()
    first = [(r.job_id, r.start, r.end) for r in sim.records]
    sim.restore(blob)
    assert sim.now == 900.0
    sim.run()
    assert [(r.job_id, r.start, r.end) for r in sim.records] == first


def test_estimate_start_predicts_the_start_without_new_arrivals():
    # bf_resolution=1 so the estimate is not rounded up to the next minute
    sim = Simulator(
        make_trace([(0, 100, 100, 8), (0, 100, 300, 6)], total=10), SlurmConfig(bf_resolution=1.0)
    )
    sim.advance(5)
    j = sim.submit(JobSpec(units=4, limit=100, runtime=100))
    est = sim.estimate_start(j)
    sim.run()
    assert est == starts(sim)[j]


def test_queue_snapshot_reports_pending_and_running():
    sim = Simulator(make_trace([(0, 100, 200, 6), (1, 100, 200, 6)], total=10))
    sim.advance(50)
    snap = sim.queue_snapshot()
    assert list(snap.run_id) == [1] and list(snap.pend_id) == [2]
    assert snap.pend_wait[0] == 49.0 and snap.run_remaining[0] == 150.0


def test_bad_injections_are_rejected_clearly():
    sim = Simulator(make_trace([], total=10))
    with pytest.raises(ValueError, match="cluster has 10"):
        sim.submit(JobSpec(units=11, limit=10, runtime=1))
    with pytest.raises(ValueError, match="unknown job 99"):
        sim.submit(JobSpec(units=1, limit=10, runtime=1, dependency="afterok:99"))
    with pytest.raises(ValueError, match="not supported"):
        sim.submit(JobSpec(units=1, limit=10, runtime=1, dependency="afterok:1?afterok:2"))


def test_without_accounting_age_does_not_accrue():
    # Real Slurm 22.05 without an accounting backend never sets accrue times (measured with
    # bench/sim_fidelity.py): the age factor stays 0 and only job size orders the queue.
    text = (
        "PriorityType=priority/multifactor\nPriorityWeightAge=10000\nPriorityMaxAge=00:10:00\n"
        "PriorityWeightJobSize=1000\n"
    )
    no_acct = SlurmConfig.from_text(text)
    acct = SlurmConfig.from_text(text + "AccountingStorageType=accounting_storage/slurmdbd\n")
    assert not no_acct.accounting and acct.accounting
    rows = [(0, 1000, 1000, 4), (10, 10, 100, 3), (900, 10, 100, 4)]  # 2 and 3 cannot share
    order = {}
    for name, cfg in (("none", no_acct), ("slurmdbd", acct)):
        sim = Simulator(make_trace(rows, total=4), cfg)
        sim.run()
        s = starts(sim)
        order[name] = sorted((2, 3), key=lambda j: s[j])
    assert order["none"] == [3, 2]  # the bigger job first: size is all that counts
    assert order["slurmdbd"] == [2, 3]  # the older job first: it accrued 890 s more age


def test_reservations_hold_whole_nodes_on_a_cpu_counted_cluster():
    # One node of 16 CPUs, 4 busy until t=100. A 16-CPU job waits for t=100; its reservation
    # holds the whole node from then on, so a 1-CPU job with a long limit cannot run beside
    # it even though 15 CPUs would stay free... until the 16-CPU job ends.
    cfg = SlurmConfig.from_text(
        "SelectTypeParameters=CR_CPU\nNodeName=n1 CPUs=16\nSchedulerParameters=bf_resolution=1\n"
    )
    rows = [(0, 100, 100, 4), (1, 50, 60, 16), (2, 20, 300, 1), (3, 20, 60, 1)]
    sim = Simulator(make_trace(rows, total=16, unit="cpus"), cfg)
    sim.run()
    s = starts(sim)
    assert s[4] < 100  # ends before the reservation: backfilled
    assert s[2] == 100.0 and s[3] == 150.0  # the long 1-CPU job waits for the wide one


def test_batch_submissions_wait_for_batch_sched_delay_or_backfill():
    # Real Slurm 22.05 delays scheduling batch submissions by up to batch_sched_delay (3 s);
    # its backfill loop often starts them first (measured: bench/sim_fidelity.py).
    cfg = SlurmConfig(bf_interval=10.0)
    sim = Simulator(make_trace([(1, 50, 100, 2), (12, 50, 100, 2)], total=10), cfg)
    sim.run()
    s = starts(sim)
    bf = {r.job_id: r.backfill for r in sim.records}
    assert s[1] == 4.0 and not bf[1]  # the delayed main run at 1 + 3 s
    assert s[2] == 15.0  # no backfill tick in between: again the main run, 3 s later
    cfg = SlurmConfig(bf_interval=2.0)
    sim = Simulator(make_trace([(1, 50, 100, 2)], total=10), cfg)
    sim.run()
    assert starts(sim)[1] == 2.0 and sim.records[0].backfill  # the backfill tick came first


def test_backfill_estimates_free_running_jobs_in_slurms_will_run_groups():
    # Slurm's will-run test frees running jobs in groups cut at a 30-s-aligned barrier and
    # starts a job at the end of the group's last job (measured on Slurm 22.05: see
    # sim/_backfill.c). One 16-CPU node; A (2 CPUs) may run until 100, B (4) until 115. D (4)
    # would fit at 100, but A and B fall in one group (100 rounds up to the barrier 120, and
    # the group takes in everything ending by 150), so D's reservation starts at 115 -- and E
    # (2 CPUs, limit 60), which cannot end by 100, is backfilled when F's 2 CPUs free up.
    cfg = SlurmConfig.from_text(
        "SelectTypeParameters=CR_CPU\nNodeName=n1 CPUs=16\n"
        "SchedulerParameters=bf_resolution=1,bf_interval=1\n"
    )
    rows = [
        (0, 90, 100, 2),
        (0, 110, 115, 4),
        (0, 290, 300, 8),
        (0, 45, 300, 2),
        (1, 10, 60, 4),
        (1, 10, 60, 2),
    ]
    sim = Simulator(make_trace(rows, total=16, unit="cpus"), cfg)
    sim.run()
    s = starts(sim)
    assert s[6] == 46.0  # F ends at 45; the backfill pass sees it a second later
    assert s[5] == 90.0  # A ends early: the main scheduler starts D at once
