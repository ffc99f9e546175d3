"""The compiled core (sim/_backfill.c) against plain Python models of the same rules."""

from __future__ import annotations

import bisect
import math

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from sim import _backfill
from sim.mapparams import MapParams
from sim.priority import FairShare
from sim.state import SimJob
from tests.sim.backfill_model import HELD, PASSED, estimate_model, plan_model

NOW = 1000.0


def make_job(
    units: int,
    limit: float,
    *,
    seq: int = 0,
    static: float = 0.0,
    accrue: float = NOW,
    user: int = 0,
    tier: int = 0,
    prio: int = 1,
) -> SimJob:
    job = SimJob()
    job.units, job.limit, job.seq, job.static, job.accrue = units, limit, seq, static, accrue
    job.user, job.tier, job.prio, job.key = user, tier, prio, (-tier, -prio, seq)
    return job


@st.composite
def backfill_cases(draw):
    per_node = draw(st.sampled_from([1, 1, 4]))
    total = per_node * draw(st.integers(1, 16))
    running, used = [], 0
    for seq in range(draw(st.integers(0, 12))):
        units = draw(st.integers(1, total))
        if used + units > total:
            break
        used += units
        end = NOW + draw(st.sampled_from([0.0, 0.5, 30.0, 60.0, 90.0, 600.0, 3600.0, 1e6]))
        running.append((end, seq, units))
    running.sort()
    limits = st.sampled_from([1.0, 30.0, 59.0, 60.0, 61.0, 120.0, 600.0, 3600.0, 7200.0])
    jobs = draw(st.lists(st.tuples(st.integers(1, total), limits), max_size=20))
    horizon = NOW + draw(st.sampled_from([600.0, 3600.0, 86400.0]))
    min_step = draw(st.sampled_from([1.0, 60.0]))
    n_test = draw(st.integers(0, 25))
    group = draw(st.sampled_from([0.0, 30.0, 30.0]))  # Slurm's will-run window, or none
    linear = draw(st.sampled_from([0.0, 0.0, 60.0]))
    epoch = draw(st.sampled_from([0.0, 7.0, 19.5, 1.7e9]))
    res = draw(st.sampled_from([1.0, 60.0]))
    shift = draw(st.sampled_from([0.0, -0.5]))  # Slurm's whole seconds, as the engine puts them
    params = MapParams(
        now=NOW,
        free=total - used,
        ends=[(t + shift, seq, u) for t, seq, u in running],
        horizon=horizon,
        min_step=min_step,
        per_node=per_node,
        total=total,
        window=group,
        linear=linear,
        epoch=epoch,
        resolution=res,
        end_shift=shift,
    )
    return jobs, n_test, params


@settings(max_examples=400, deadline=None)
@given(backfill_cases())
def test_plan_matches_the_model(case):
    jobs, n_test, params = case
    order = [make_job(u, lim, seq=i) for i, (u, lim) in enumerate(jobs)]
    assert _backfill.plan(order, n_test, params) == plan_model(jobs, n_test, params)


@settings(max_examples=300, deadline=None)
@given(backfill_cases(), st.data())
def test_estimate_matches_the_model(case, data):
    jobs, _, params = case
    if not jobs:
        return
    target = data.draw(st.integers(0, len(jobs) - 1))
    order = [make_job(u, lim, seq=i) for i, (u, lim) in enumerate(jobs)]
    assert _backfill.estimate(order, target, params) == estimate_model(jobs, target, params)


def map_args(free, ends, *, group=30.0, epoch=0.0, total=10, per_node=1, shift=0.0) -> MapParams:
    return MapParams(
        now=NOW,
        free=free,
        ends=ends,
        horizon=NOW + 86400,
        min_step=1.0,
        per_node=per_node,
        total=total,
        window=group,
        linear=0.0,
        epoch=epoch,
        resolution=1.0,
        end_shift=shift,
    )


def test_a_hand_worked_pass():
    # 10 units, 8 busy until t=1100. Job 0 wants 10 (reserved at 1100); job 1 (2 units,
    # 100 s) fits before it; job 2 (2 units, 200 s) would overlap the reservation.
    args = map_args(2, [(1100.0, 0, 8)])
    order = [make_job(10, 100.0), make_job(2, 100.0, seq=1), make_job(2, 200.0, seq=2)]
    assert _backfill.plan(order, 500, args) == [1]
    assert _backfill.estimate(order, 0, args) == 1100.0
    assert _backfill.estimate(order, 2, args) == 1200.0


def test_running_jobs_free_their_units_in_slurms_will_run_groups():
    # 16 units, 2 free; running jobs may run until 1100 (2 units), 1145 (4) and 1300 (8).
    # With t = 0 at Unix time 0, the first end rounds up to the barrier 1110 and the first
    # group takes every job ending by 1140: only the first; the window then doubles to 60,
    # taking in 1145 by 1170. A job of 4 units fits once the first group is gone: 1100.
    ends = [(1100.0, 0, 2), (1145.0, 1, 4), (1300.0, 2, 8)]
    job = [make_job(4, 60.0)]
    assert _backfill.estimate(job, 0, map_args(2, ends, total=16, epoch=0.0)) == 1100.0
    # Shift t = 0 to Unix time 10: 1100 lies on a 30-s multiple (1110), which moves the
    # barrier a whole window on, to 1140; the first group takes in 1145 (by 1170) and frees
    # both at once, at 1145.
    assert _backfill.estimate(job, 0, map_args(2, ends, total=16, epoch=10.0)) == 1145.0
    # In Slurm's whole seconds the engine puts each end half a second early; the barrier is
    # still cut from Slurm's own end, 1100 (Unix 1110, a 30-s multiple): a whole window on,
    # Unix 1140, and the first group takes in 1145, freed at its map end 1144.5. (Cut from
    # 1099.5 the barrier would be Unix 1110 and 1145 would be left to the next group.)
    ends_whole = [(1099.5, 0, 2), (1144.5, 1, 4), (1299.5, 2, 8)]
    shifted = map_args(2, ends_whole, total=16, epoch=10.0, shift=-0.5)
    assert _backfill.estimate(job, 0, shifted) == 1144.5
    # Without groups the job starts at the first end that frees enough units.
    assert _backfill.estimate(job, 0, map_args(2, ends, total=16, group=0.0, epoch=10.0)) == 1100.0
    # A job started by the pass joins the running jobs and can regroup them for the next:
    # here job 1 starts now (2 units, ends by 1030), which becomes the first end (barrier
    # 1050, cut 1080), so job 2's 4 units come free at 1100 instead of at 1145.
    order = [make_job(2, 30.0), make_job(4, 60.0, seq=1)]
    args = map_args(2, ends, total=16, epoch=10.0)
    assert _backfill.plan(order, 500, args) == [0]
    # (squeue --start starts nothing: job 0 only reserves, and job 1 still waits for 1145)
    assert (
        _backfill.estimate(order, 1, args)
        == estimate_model([(2, 30.0), (4, 60.0)], 1, args)
        == 1145.0
    )


def refresh_model(jobs, tick, w_age, max_age, w_fs, fs):
    out = []
    for job in jobs:
        p = job.static
        age = tick - job.accrue
        if w_age and age > 0:
            p += w_age * (age / max_age if age < max_age else 1.0)
        if w_fs:
            p += w_fs * (fs[job.user] if job.user < len(fs) else 1.0)
        prio = max(int(p), 1)
        out.append(((-job.tier, -prio, job.seq), prio, job))
    out.sort(key=lambda x: x[0])
    return [(job, prio, key) for key, prio, job in out]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0, 5000), st.floats(0, 2000), st.integers(0, 6), st.integers(0, 2)),
        max_size=40,
    ),
    st.sampled_from([0.0, 1000.0]),
    st.sampled_from([0.0, 10000.0]),
)
def test_refresh_matches_the_formula(rows, w_age, w_fs):
    jobs = [
        make_job(1, 60.0, seq=i, static=s, accrue=NOW - a, user=u, tier=t)
        for i, (s, a, u, t) in enumerate(rows)
    ]
    fs = np.linspace(0.1, 1.0, 5)  # users 5 and 6 have no entry: factor 1.0
    tick = NOW + 300.0
    want = refresh_model(jobs, tick, w_age, 604800.0, w_fs, fs)
    before = list(jobs)
    changed = _backfill.refresh(jobs, tick, w_age, 604800.0, w_fs, fs)
    assert [(j, j.prio, j.sort_key()) for j in jobs] == want
    assert changed == (before != jobs)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 5000), st.integers(0, 6)), max_size=30),
    st.lists(st.floats(0, 1e7), min_size=5, max_size=5),
    st.sampled_from([0.0, 1e-300, 1.0]),
)
def test_refresh_computes_the_queued_users_factors_as_fairshare_does(rows, usage, zero):
    """Given the folded usage, refresh computes each queued job's factor exactly as
    FairShare.factor and FairShare.factors do (users past the array: 1.0; no usage: 1.0)."""
    share = FairShare(half_life=86400.0, n_users=5)
    share.usage[:] = np.array(usage) * zero
    share.total, share.scale = float(share.usage.sum()), 5.0
    fs = share.factors()
    assert [share.factor(u) for u in range(7)] == [*fs.tolist(), 1.0, 1.0]
    jobs = [make_job(1, 60.0, seq=i, static=s, user=u) for i, (s, u) in enumerate(rows)]
    twins = [make_job(1, 60.0, seq=i, static=s, user=u) for i, (s, u) in enumerate(rows)]
    _backfill.refresh(jobs, NOW, 0.0, 604800.0, 1e5, share.lazy_factors())
    _backfill.refresh(twins, NOW, 0.0, 604800.0, 1e5, fs)
    assert [(j.seq, j.prio) for j in jobs] == [(j.seq, j.prio) for j in twins]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(1, 5), st.integers(0, 8)), max_size=30),
    st.tuples(st.integers(0, 2), st.integers(1, 5), st.integers(0, 8)),
    st.booleans(),
)
def test_insort_is_bisect_insort_by_sort_key(rows, new, stale):
    """The compiled insort puts a job where bisect.insort by SimJob.sort_key does (after equal
    keys), whether a job's key is stored or left to its fields (None after a refresh)."""
    jobs = [make_job(1, 60.0, tier=t, prio=p, seq=q) for t, p, q in rows]
    if stale:
        for j in jobs[::2]:
            j.key = None
    jobs.sort(key=SimJob.sort_key)
    t, p, q = new
    job = make_job(1, 60.0, tier=t, prio=p, seq=q)
    want = list(jobs)
    bisect.insort(want, job, key=SimJob.sort_key)
    _backfill.insort(jobs, job)
    assert [id(j) for j in jobs] == [id(j) for j in want]


def test_insort_refuses_what_is_not_a_job():
    with pytest.raises(TypeError):
        _backfill.insort([make_job(1, 1.0)], object())
    with pytest.raises(AttributeError):
        _backfill.insort([SimJob()], make_job(1, 1.0))  # fields unset
    with pytest.raises(TypeError):
        _backfill.insort((), make_job(1, 1.0))  # not a list


def test_fairshare_tick_matches_numpy():
    rng = np.random.default_rng(3)
    fs = FairShare(half_life=7 * 86400.0, n_users=50)
    fs.usage[:] = rng.uniform(0, 1e6, 50)
    for user in range(0, 50, 3):
        fs.change(user, int(rng.integers(1, 64)), now=10.0 * user)
    usage, run, acc, stamp = (
        fs.usage.copy(),
        fs.run_units.copy(),
        fs.accrued.copy(),
        fs.stamp.copy(),
    )
    fs.tick(3600.0, 50)
    out = fs.factors()
    decay = 0.5 ** (3600.0 / fs.half_life)
    want_usage = usage * decay + (acc + run * (3600.0 - stamp))
    np.testing.assert_allclose(fs.usage, want_usage, rtol=1e-15)
    np.testing.assert_allclose(out, np.exp2(-(want_usage / want_usage.sum()) * 50), rtol=1e-12)
    assert not fs.accrued.any() and (fs.stamp == 3600.0).all()


class _Partial:
    """A parameter record without ``epoch``."""

    def __init__(self, p: MapParams) -> None:
        for name in MapParams.__slots__:
            if name != "epoch":
                setattr(self, name, getattr(p, name))


def test_rejects_what_is_not_a_job():
    with pytest.raises(TypeError):
        _backfill.plan([object()], 10, map_args(1, []))
    job = SimJob()  # fields unset
    with pytest.raises(AttributeError):
        _backfill.plan([job], 10, map_args(1, []))
    with pytest.raises(TypeError):
        _backfill.plan([make_job(1, 1.0)], 10, NOW, 1, [])  # positional map arguments
    with pytest.raises(AttributeError, match="epoch"):
        _backfill.plan([make_job(1, 1.0)], 10, _Partial(map_args(1, [])))  # a field missing
    bad = map_args(1, [])
    bad.free = 1.5
    with pytest.raises(TypeError, match="free must be an int"):
        _backfill.plan([make_job(1, 1.0)], 10, bad)
    with pytest.raises(TypeError):
        _backfill.refresh([make_job(1, 1.0)], NOW, 1.0, 1.0, 1.0, [1.0])  # not an array
    assert math.isfinite(_backfill.estimate([make_job(1, 1.0)], 0, map_args(1, [])))


def test_will_run_start_is_the_estimate_of_one_job():
    from sim.engine import will_run_start

    ends = [(1100.0, 0, 2), (1145.0, 1, 4), (1300.0, 2, 8)]
    assert will_run_start(4, 60.0, NOW, 2, ends, 10.0) == 1145.0  # grouped, as above
    assert will_run_start(4, 60.0, NOW, 2, ends, 10.0, window=0.0) == 1100.0
    assert will_run_start(2, 60.0, NOW, 2, ends, 10.0) == NOW


def _snapshot_by_lists(sim) -> list[np.ndarray]:
    """Simulator.queue_snapshot's arrays as the plain Python version built them."""
    pend, run = list(sim.state.pending.values()), list(sim.state.running.values())
    i64, f64 = np.int64, np.float64
    return [
        np.array([j.id for j in pend], i64),
        np.array([j.units for j in pend], i64),
        np.array([j.limit for j in pend], f64),
        np.array([j.submit for j in pend], f64),
        np.array([j.eligible for j in pend], f64),
        np.array([j.id for j in run], i64),
        np.array([j.units for j in run], i64),
        np.array([j.limit for j in run], f64),
        np.array([j.start for j in run], f64),
    ]


def test_queue_snapshot_equals_the_plain_python_arrays():
    # the compiled queue_arrays against list comprehensions, on a busy generated workload
    # with dependencies (NaN eligibility) and every queue size from empty up
    from hpcbase.jobs import JobSpec
    from sim.config import SlurmConfig
    from sim.engine import Simulator
    from sim.generate import generate

    trace = generate(400, 32, seed=5, load=1.6)
    sim = Simulator(trace, SlurmConfig(), total_units=32)
    busy = 0
    t = 0.0
    while sim.state.cursor < len(trace) or sim.state.pending or sim.state.running:
        t += 300.0
        sim.advance(t)
        if t == 3000.0:  # a dependent job: pending with NaN eligibility
            first = sim.submit(JobSpec(units=4, limit=7200.0, runtime=3000.0))
            sim.submit(JobSpec(units=2, limit=600.0, runtime=60.0, dependency=f"afterany:{first}"))
        snap = sim.queue_snapshot()
        got = [getattr(snap, f) for f in ("pend_id", "pend_units", "pend_limit", "pend_submit")]
        got += [getattr(snap, f) for f in ("pend_eligible", "run_id", "run_units", "run_limit")]
        got.append(snap.run_start)
        for a, b in zip(got, _snapshot_by_lists(sim), strict=True):
            assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True), t
        busy += len(snap.pend_id) > 5 and len(snap.run_id) > 5
    assert busy > 20


def test_queue_arrays_refuses_wrong_arrays():
    job = make_job(2, 60.0)
    job.id, job.submit, job.eligible = 1, 0.0, 0.0
    arrays = [np.empty(1, np.int64), np.empty(1, np.int64)] + [np.empty(1) for _ in range(3)]
    run = [np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0), np.empty(0)]
    _backfill.queue_arrays({1: job}, {}, *arrays, *run)
    assert arrays[0][0] == 1 and arrays[1][0] == 2 and arrays[2][0] == 60.0
    with pytest.raises(TypeError, match="pend_units: expected a writable 1-d int64"):
        _backfill.queue_arrays({1: job}, {}, arrays[0], np.empty(1), *arrays[2:], *run)
    with pytest.raises(TypeError, match="pend_id: expected .* of length 2"):
        _backfill.queue_arrays({1: job, 2: job}, {}, *arrays, *run)
    with pytest.raises(AttributeError, match="unset"):
        _backfill.queue_arrays(
            {},
            {1: job},
            *[a[:0] for a in arrays],
            *[np.empty(1, np.int64), np.empty(1, np.int64), np.empty(1), np.empty(1)],
        )


LIMITED_CASES = (
    st.lists(st.tuples(st.integers(1, 40), st.integers(0, 4)), max_size=30),
    st.dictionaries(
        st.integers(0, 4), st.tuples(st.integers(0, 5), st.integers(0, 40)), max_size=5
    ),
    st.sampled_from([None, 1, 3]),
    st.sampled_from([None, 4, 16]),
    st.sampled_from([None, 8, 64]),
    st.tuples(
        st.booleans(),
        st.dictionaries(
            st.integers(0, 4),
            st.tuples(
                st.sampled_from([None, 0, 2, 5]),
                st.sampled_from([None, 2, 12, 30]),
                st.sampled_from([None, 6, 100]),
            ),
            max_size=2,
        ),
    ),
    st.sampled_from([("nodes", ""), ("cpus", "NodeName=n[1-10] CPUs=4\n")]),
    st.integers(0, 35),
)


def limited_world(rows, use, max_jobs, max_nodes, max_cpus, exempt, world):  # type: ignore[no-untyped-def]
    """A simulator under these QOS limits (``exempt``: whether larger jobs are exempt from
    the node cap, and users' own limits: user -> jobs, nodes, CPUs), its users already
    running ``use`` (jobs, nodes), and a queue of ``rows`` (units, user)."""
    from sim.config import SlurmConfig
    from sim.engine import Simulator
    from sim.limits import QosLimits
    from tests.sim.simhelpers import make_trace

    unit, conf = world
    limits = QosLimits(
        max_jobs_per_user=max_jobs,
        max_nodes_per_user=max_nodes,
        max_cpus_per_user=max_cpus,
        larger_jobs_exempt=exempt[0],
        user_limits=tuple((u, *c) for u, c in sorted(exempt[1].items())),
    )
    trace = make_trace([(0, 60, 60, 1)], total=40, unit=unit)
    sim = Simulator(trace, SlurmConfig.from_text(conf), limits=limits)
    sim.state.user_use.update({u: [j, n, n * 4, j] for u, (j, n) in use.items()})
    order = [make_job(units, 60.0, seq=i, user=user) for i, (units, user) in enumerate(rows)]
    return sim, order


@settings(max_examples=200, deadline=None)
@given(*LIMITED_CASES)
def test_limit_filter_matches_the_limit_checks(
    rows, use, max_jobs, max_nodes, max_cpus, exempt, world, stop
):
    """The compiled QOS filter keeps exactly the jobs ``_limit_reason`` lets through."""
    sim, order = limited_world(rows, use, max_jobs, max_nodes, max_cpus, exempt, world)
    want = [i for i, job in enumerate(order[:stop]) if sim._limit_reason(job) is None]
    got = sim._unheld(order, stop)
    if got is None:  # none held
        got = list(range(min(stop, len(order)))), order[:stop]
    idx, jobs = got
    assert idx == want
    assert jobs == [order[i] for i in idx]


@settings(max_examples=200, deadline=None)
@given(*LIMITED_CASES, st.integers(0, 120))
def test_limited_picks_match_the_limit_checks(
    rows, use, max_jobs, max_nodes, max_cpus, exempt, world, depth, free
):
    """The compiled main pass under limits (one pool) starts what the Python rules
    (``_limit_reason``, ``_count_start``) start, with the same counts."""
    sim, order = limited_world(rows, use, max_jobs, max_nodes, max_cpus, exempt, world)
    assume(sim.limits is not None)
    want, want_extra = [], {}
    left = free
    for i, job in enumerate(order[:depth]):  # _general_picks on one partition, no pools
        if sim._limit_reason(job, want_extra) is not None:
            continue
        if job.units > left:
            break
        left -= job.units
        want.append(i)
        sim._count_start(job, want_extra)
    extra: dict[int, list[int]] = {}
    params = sim._limit_params()
    assert _backfill.limited_picks(order, depth, free, sim.state.user_use, extra, params) == want
    assert extra == want_extra


def plan_limited_model(sim, order, n_test, params):  # type: ignore[no-untyped-def]
    """The backfill plan under QOS limits by the Python rules and :func:`plan_model`:
    Slurm's walk in priority order, each job's limits checked at its turn, counting the
    jobs the walk started before it (``_count_start``): passed over uncounted where
    ``_bf_passes_over`` says so, else counted and, where ``_limit_reason`` holds it,
    neither started nor reserved. Indices into ``order`` of the jobs started now. (Until
    session 36 the model classified the jobs held at the pass's start once, so a job held
    then by a counted limit, and at its turn by one passed over, counted: hypothesis found
    it, with the compiled walk right.)"""
    extra: dict[int, list[int]] = {}

    def turn(i: int) -> str | None:
        if sim._bf_passes_over(order[i], extra):
            return PASSED
        return HELD if sim._limit_reason(order[i], extra) is not None else None

    def started(i: int) -> None:
        sim._count_start(order[i], extra)

    jobs = [(job.units, job.limit) for job in order]
    return plan_model(jobs, n_test, params, turn, started)


@settings(max_examples=300, deadline=None)
@given(
    *LIMITED_CASES,
    st.lists(st.tuples(st.sampled_from([0.0, 30.0, 60.0, 600.0, 3600.0]), st.integers(1, 12))),
    st.lists(st.sampled_from([30.0, 60.0, 61.0, 600.0, 3600.0]), min_size=1, max_size=5),
)
# held at the pass's start by the CPU cap (counted), at its turn by the jobs limit (passed)
@example(
    rows=[(1, 0), (1, 2), (9, 0), (1, 1)],
    use={},
    max_jobs=1,
    max_nodes=None,
    max_cpus=8,
    exempt=(False, {}),
    world=("nodes", ""),
    n_test=3,
    running=[],
    limits=[30.0],
)
def test_plan_limited_matches_the_model(
    rows, use, max_jobs, max_nodes, max_cpus, exempt, world, n_test, running, limits
):
    """The compiled backfill plan under QOS limits starts what the Python rules start."""
    sim, order = limited_world(rows, use, max_jobs, max_nodes, max_cpus, exempt, world)
    assume(sim.limits is not None)
    for i, job in enumerate(order):
        job.limit = limits[i % len(limits)]
    ends, used = [], 0
    for seq, (dt, units) in enumerate(running):
        if used + units > 40:
            break
        used += units
        ends.append((NOW + dt, seq, units))
    ends.sort()
    params = MapParams(
        now=NOW,
        free=40 - used,
        ends=ends,
        horizon=NOW + 86400.0,
        min_step=60.0,
        per_node=sim._cpus_per_node,
        total=40,
        window=30.0,
        linear=0.0,
        epoch=0.0,
        resolution=60.0,
    )
    want = plan_limited_model(sim, order, n_test, params)
    got = _backfill.plan_limited(order, n_test, params, sim.state.user_use, sim._limit_params())
    assert got == want


def test_a_fairshare_copy_is_equal_and_independent():
    """``FairShare.copy`` (what a start estimate under fair share works on) equals a deep
    copy, and changing it leaves the original as it was."""
    import copy

    share = FairShare(3600.0, 3)
    share.change(1, 4, 100.0)
    share.change(4, 2, 150.0)  # grows the arrays
    share.tick(300.0, 5)
    mine, deep = share.copy(), copy.deepcopy(share)
    for a, b in ((mine, deep), (mine, share)):
        assert a.__getstate__().keys() == b.__getstate__().keys()
        assert np.array_equal(a.usage, b.usage) and np.array_equal(a.stamp, b.stamp)
    mine.change(1, -4, 400.0)
    mine.tick(900.0, 5)
    deep.change(1, -4, 400.0)
    deep.tick(900.0, 5)
    assert np.array_equal(mine.usage, deep.usage) and mine.total == deep.total
    assert share.last == 300.0 and share.run_units[1] == 4 and share.usage[1] != mine.usage[1]
