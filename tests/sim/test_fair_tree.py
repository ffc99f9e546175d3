"""Fair Tree, Slurm's default fair-share algorithm (since 19.05): the Python model against
Slurm's ranking rule, the compiled refresh, the quiet ticks and the compiled life cycle
against it, and which configs use it; and the decay thread's phase (when priorities are
recomputed), as read from slurmctld's log."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcbase.slurm.ctldlog import unix_time
from sim import _backfill
from sim.config import SlurmConfig
from sim.engine import BackfillCycle, Simulator
from sim.priority import FairShare
from sim.profile import priority_lines, weight_lines
from sim.realcheck import measure_timing
from sim.realslurm import WorkloadJob
from tests.sim.simhelpers import make_trace
from tests.sim.test_backfill_core import NOW, make_job
from tests.sim.test_quiet_ticks import FAIRSHARE, job, schedule

TREE = replace(FAIRSHARE, fair_tree=True)


def slurm_rank_factors(usage: list[float]) -> list[float]:
    """Slurm's _calc_tree_fs on a flat tree of equal shares: users sorted by level
    fair share (S / U, the least used first), the rank counting down from the number of
    users and decremented for every user, a tied user keeping the rank of the first of its
    tie; factor = rank / users."""
    n = len(usage)
    total = sum(usage)
    level = [np.inf if u == 0 else (1 / n) / (u / total) for u in usage]
    order = sorted(range(n), key=lambda u: -level[u])
    out = [0.0] * n
    rank = rnt = n
    prev = None
    for u in order:
        if prev is None or level[u] != prev:
            rank = rnt
        out[u] = rank / n
        rnt -= 1
        prev = level[u]
    return out


def slurm_tree_with_root(usage: list[float], associations: int) -> list[float]:
    """Slurm's _calc_tree_fs on the local cluster's tree: root's own user association
    (no usage) beside one account that holds the users, ``associations`` user associations
    in all. While the account has usage, root's association sorts first and takes the top
    rank, and the account's users are ranked below it (:func:`slurm_rank_factors`'s rule),
    each rank divided by all the associations; with no usage anywhere, all tie at the top."""
    n = len(usage)
    if sum(usage) == 0:
        return [1.0] * n
    ranks = [f * n for f in slurm_rank_factors(usage)]  # n down to 1 within the account
    return [r / associations for r in ranks]


def share_with(usage: list[float], tree: bool = True, associations: int = 0) -> FairShare:
    share = FairShare(half_life=3600.0, n_users=len(usage), tree=tree)
    share.usage[:] = usage
    share.total, share.scale = float(share.usage.sum()), float(len(usage))
    share.associations = associations
    return share


def test_ranks_as_slurm_does_with_ties():
    share = share_with([0.0, 5.0, 5.0, 10.0])
    assert share.factors().tolist() == [1.0, 0.75, 0.75, 0.25]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1.0, 2.5, 7.0, 1e6]), min_size=1, max_size=12))
def test_the_model_is_slurms_rule(usage):
    if sum(usage) == 0:
        assert share_with(usage).factors().tolist() == [1.0] * len(usage)
    else:
        assert share_with(usage).factors().tolist() == slurm_rank_factors(usage)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, 1.0, 2.5, 7.0, 1e6]), min_size=1, max_size=12),
    st.integers(0, 3),
)
def test_the_divisor_counts_every_association(usage, others):
    """With associations beyond the ranked users (root's own, on the local cluster), the
    ranks are divided by all of them, as Slurm divides by g_user_assoc_count; root's, running
    nothing, ranks above the account's users. 0 means the users themselves."""
    n = len(usage)
    got = share_with(usage, associations=n + others if others else 0).factors().tolist()
    assert got == slurm_tree_with_root(usage, n + others)


def test_the_local_clusters_factors_as_slurm_logged_them():
    """Four users ranked under root's association, five in all: Slurm 22.05 logged the
    factors 0.8, 0.6, 0.4 and 0.2 (session 31's run at PriorityWeightFairshare=1000)."""
    share = share_with([30.0, 10.0, 0.5, 20.0], associations=5)
    assert share.factors().tolist() == [0.2, 0.6, 0.8, 0.4]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 5000), st.integers(0, 7)), max_size=30),
    st.lists(st.sampled_from([0.0, 3.0, 3.0, 8.0, 1e7]), min_size=6, max_size=6),
    st.sampled_from([0, 6, 7, 9]),
)
def test_refresh_computes_fair_tree_as_the_model(rows, usage, associations):
    """The compiled refresh from (usage, total, scale, tree, associations) gives every
    queued job the model's factor (users past the array: 1.0), as with the factors passed
    in full."""
    share = share_with(usage, associations=associations)
    fs = share.factors()
    jobs = [make_job(1, 60.0, seq=i, static=s, user=u) for i, (s, u) in enumerate(rows)]
    twins = [make_job(1, 60.0, seq=i, static=s, user=u) for i, (s, u) in enumerate(rows)]
    _backfill.refresh(jobs, NOW, 0.0, 604800.0, 1e5, share.lazy_factors())
    _backfill.refresh(twins, NOW, 0.0, 604800.0, 1e5, fs)
    assert [(j.seq, j.prio) for j in jobs] == [(j.seq, j.prio) for j in twins]


def test_advance_ticks_folds_and_ranks_each_tick():
    """Ticks run at once rank the users anew at every tick, as FairShare.tick and refresh
    tick by tick do."""

    def world():  # type: ignore[no-untyped-def]
        share = FairShare(half_life=600.0, n_users=4, tree=True)
        for u in range(4):
            share.change(u, 4 - u, NOW - 50.0 * u)
        jobs = [make_job(1, 60.0, seq=i, static=100.0 * i, user=i % 4) for i in range(8)]
        return share, jobs

    share, jobs = world()
    tick, changed = NOW, False
    for k in range(6):
        tick = NOW + 60.0 * k
        share.tick(tick, 4)
        changed = _backfill.refresh(jobs, tick, 0.0, 86400.0, 1e5, share.lazy_factors())
        if changed:
            break
    share2, jobs2 = world()
    got = _backfill.advance_ticks(
        jobs2,
        NOW,
        60.0,
        NOW + 5.5 * 60.0,
        0.0,
        86400.0,
        1e5,
        (*(share2.usage, share2.run_units, share2.accrued, share2.stamp), 600.0, 4, 0.0, 0.0, True),
    )
    assert got[:2] == (tick, changed)
    assert [(j.seq, j.prio) for j in jobs2] == [(j.seq, j.prio) for j in jobs]


@settings(max_examples=60, deadline=None)
@given(st.lists(job, min_size=1, max_size=50), st.sampled_from([60.0, 300.0]))
def test_compiled_paths_give_the_python_schedule(rows, period):
    """Under Fair Tree the compiled life cycle and quiet ticks give the schedule the Python
    event loop gives."""
    rows.sort(key=lambda r: r[0])
    cfg = replace(TREE, calc_period=period)

    def make() -> Simulator:
        return Simulator(make_trace(rows, total=16), cfg)

    fast, slow = make(), make()
    slow.compiled_quiet_ticks = False
    slow.compiled_life_cycle = False
    assert schedule(fast) == schedule(slow)


def test_fair_tree_changes_the_order_classic_gives():
    """Two users a little apart in usage: classic fair share gives them nearly the same
    factor, so a larger job of the heavier user goes first; Fair Tree puts a whole rank
    between them."""
    usage = [0.0, 0.0, 100.0, 110.0]  # classic: 0.267 against 0.234; Fair Tree: 0.5, 0.25
    for tree, heavier_first in ((False, True), (True, False)):
        share = share_with(usage, tree=tree)
        lighter = make_job(1, 60.0, seq=0, static=0.0, user=2)
        heavier = make_job(8, 60.0, seq=1, static=5000.0, user=3)
        jobs = [lighter, heavier]
        _backfill.refresh(jobs, NOW, 0.0, 604800.0, 1e5, share.lazy_factors())
        assert jobs[0] is (heavier if heavier_first else lighter)


def test_which_configs_use_it(tmp_path):
    """Slurm's default from a file; NO_FAIR_TREE turns it off; a config built in code and a
    site profile (fitted as classic) keep classic."""
    assert not SlurmConfig().fair_tree
    assert SlurmConfig.from_text("PriorityType=priority/multifactor\n").fair_tree
    off = SlurmConfig.from_text("PriorityFlags=ACCRUE_ALWAYS,NO_FAIR_TREE\n")
    assert not off.fair_tree and off.accrue_always
    for lines in (priority_lines("fairshare-3.5d"), weight_lines(3.5, 0.001, 0.0, 7.0)):
        assert not SlurmConfig.from_text("\n".join(lines) + "\n").fair_tree
    path = tmp_path / "slurm.conf"
    path.write_text("PriorityWeightFairshare=1000\n")
    assert SlurmConfig.from_file(path).fair_tree


@pytest.mark.parametrize("tree", [False, True])
def test_users_sets_how_many_share(tree):
    """Simulator(users=n) ranks among n users where no trace says how many, and
    associations=A divides Fair Tree's ranks by A."""
    sim = Simulator(None, replace(FAIRSHARE, fair_tree=tree), total_units=16, users=5)
    assert sim.prio.n_users == 5 and sim.prio.fairshare.tree == tree
    assert sim.prio.fairshare.associations == 0
    sim = Simulator(None, replace(FAIRSHARE, fair_tree=tree), total_units=16, associations=6)
    assert sim.prio.fairshare.associations == 6


@pytest.mark.parametrize("compiled", [True, False])
def test_an_arrival_between_ticks_is_divided_too(compiled):
    """A job that arrives after a refresh gets its factor at arrival, divided by the
    associations, in the compiled life cycle as in Python: user 2 has no usage (rank 3 of
    the 3 users, 3 / 9), user 0 the most (1 / 9)."""
    cfg = replace(TREE, weight_fairshare=1000)  # size factor 1.0 for 16 of 16 units
    rows = [(0, 100, 600, 16, 0), (5, 300, 600, 16, 1)]  # user 0 runs, user 1 waits
    rows += [(130, 100, 600, 16, 2), (135, 100, 600, 16, 0)]  # after the refresh at 100
    sim = Simulator(make_trace(rows, total=16), cfg, associations=9)
    sim.compiled_life_cycle = compiled
    sim.advance(140)
    assert sorted((j.id, j.prio) for j in sim.state.pending.values()) == [(3, 1333), (4, 1111)]


@settings(max_examples=40, deadline=None)
@given(st.lists(job, min_size=1, max_size=40), st.sampled_from([6, 9]))
def test_compiled_paths_divide_as_the_python_loop(rows, associations):
    """With a divisor beyond the users, the compiled life cycle (arrivals) and quiet ticks
    give the schedule the Python event loop gives."""
    rows.sort(key=lambda r: r[0])

    cfg = replace(TREE, weight_fairshare=1000)  # as age and size: the values count

    def make() -> Simulator:
        return Simulator(make_trace(rows, total=16), cfg, associations=associations)

    fast, slow = make(), make()
    slow.compiled_quiet_ticks = False
    slow.compiled_life_cycle = False
    assert schedule(fast) == schedule(slow)


def test_the_decay_threads_phase_shifts_the_calc_ticks():
    """Under BackfillCycle(calc_phase=p) the priorities are recomputed at p + k * period,
    as slurmctld's decay thread runs every period from its own start."""
    cfg = replace(TREE, calc_period=60.0)
    plain = Simulator(None, cfg, total_units=16)
    phased = Simulator(None, cfg, total_units=16, cycle=BackfillCycle(calc_phase=59.25))
    assert plain._calc_tick(130.0) == 120.0
    assert phased._calc_tick(130.0) == 119.25
    assert phased._calc_tick(119.0) == 59.25
    assert phased._calc_tick(10.0) == -0.75


def test_the_decay_phase_is_read_from_slurmctlds_log(tmp_path):
    """The decay thread's runs, as Slurm 22.05 logs them with DebugFlags=Priority (its first
    run before the first submission), give the phase within PriorityCalcPeriod."""
    log = tmp_path / "slurmctld.log"
    log.write_text(
        "[2026-11-29T10:39:04.277] priority/multifactor: _apply_priority_fs: PRIO: Fair Tree "
        "fairshare algorithm, starting at root:\n"
        "[2026-11-29T10:39:06.550] _slurm_rpc_submit_batch_job: JobId=1 InitPrio=625 usec=9\n"
        "[2026-11-29T10:40:04.277] priority/multifactor: _decay_thread: PRIO: Decay factor "
        "over 60 seconds goes from 0.999998854166667 -> 0.999931252323842\n"
    )
    t0 = unix_time("2026-11-29T10:39:06")
    rows = [{"job_id": 1, "name": "a", "submit": t0}]
    timing = measure_timing(log, rows, [WorkloadJob("a", 1, 60, 5)], 1.0, 60.0)
    assert timing.calc_phase == pytest.approx(58.277)
    assert "decay thread" in timing.source
    assert timing.cycle().calc_phase == timing.calc_phase


def test_a_change_past_a_decay_run_folds_at_that_run_first():
    """With decay_runs (BackfillCycle) a job's end after a decay run folds the usage at
    that run first, so the run counts only what ran until then; without, a refresh after the
    end folds the end's whole run at the earlier tick (its last seconds one tick early)."""
    for runs, want in ((None, 240.0), ((60.0, 0.0, 2, 0.0), 200.0)):
        share = FairShare(half_life=0.0, n_users=2)
        share.decay_runs = runs
        share.change(0, 4, 10.0)
        share.change(0, -4, 70.0)
        share.tick(60.0, 2)
        assert share.usage[0] == want
        share.tick(120.0, 2)
        assert share.usage[0] == 240.0  # everything it ran, by the next run


def test_decay_runs_count_whole_seconds_as_slurm_does():
    """Under decay_runs a start, an end and a decay run count in whole seconds of Unix
    time (Slurm's time_t): a job from 10.6 to 70.9 (t = 0 at epoch 1000.5, so 1011.1 to
    1071.4 in Unix time) ran 1011 to 1071 as Slurm counts it, 60 seconds; the decay run at
    59.9 (Unix 1060.4) folds at 1060, so 49 of them by then."""
    share = FairShare(half_life=0.0, n_users=1)
    share.decay_runs = (60.0, 59.9, 1, 1000.5)
    share.change(0, 2, 10.6)
    share.change(0, -2, 70.9)  # past the run at 59.9: folded there first
    assert share.usage[0] == 2 * 49.0
    share.tick(119.9, 1)
    assert share.usage[0] == 2 * 60.0


def test_the_simulator_folds_at_decay_runs_under_backfill_cycle():
    sim = Simulator(None, TREE, total_units=16, cycle=BackfillCycle(calc_phase=12.5), users=3)
    assert sim.prio.fairshare.decay_runs == (TREE.calc_period, 12.5, 3, 0.0)
    assert Simulator(None, TREE, total_units=16).prio.fairshare.decay_runs is None
