"""The priority and backfill depth a log's recorded start order shows (sim/start_order.py),
checked on logs the simulator recorded itself under known settings; and the fair-share
factors it ranks by (sim/priority.py's :func:`~sim.priority.fairshare_at`) against the
usage integral written out."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sim import priority
from sim.config import SlurmConfig
from sim.engine import Simulator
from sim.fit import simulated_waits
from sim.generate import generate
from sim.limits import QosLimits
from sim.priority import fairshare_at, recorded_fairshare
from sim.profile import priority_lines
from sim.start_order import Queues, grid_config, infer_order, rank_wall
from tests.sim.simhelpers import make_trace


def recorded(
    priority: str | list[str],
    depth: int,
    max_jobs: int | None,
    units: int,
    load: float,
    n: int = 3000,
):
    """``n`` generated jobs on ``units`` procs, recorded under the priority (a
    ``PRIORITY_SETTINGS`` key, or its lines), the depth and a per-user job limit; with
    those limits."""
    trace = generate(n, units, seed=3, load=load)
    prio = priority_lines(priority) if isinstance(priority, str) else priority
    lines = [f"SchedulerParameters=bf_max_job_test={depth}", *prio]
    cfg = SlurmConfig.from_text("\n".join(lines) + "\n", "recorded under")
    limits = QosLimits(max_jobs_per_user=max_jobs) if max_jobs else None
    sim = Simulator(trace, cfg, total_units=units, limits=limits)
    start = trace.submit + simulated_waits(sim, len(trace))
    return replace(trace, recorded_start=start), limits


@pytest.mark.parametrize(
    ("priority", "depth", "max_jobs", "units"),
    [
        ("fifo", 20, None, 64),
        ("fairshare-1d", 20, 4, 64),  # the limit's held jobs do not count to the depth
        ("fairshare-7d-size10k", 30, None, 128),  # told apart from its size1k sibling
    ],
)
def test_the_start_order_shows_the_priority_and_depth_a_log_was_recorded_under(
    priority, depth, max_jobs, units
):
    trace, limits = recorded(priority, depth, max_jobs, units, 0.9)
    order = infer_order(trace, units, limits)
    assert order is not None and order.bounded
    assert order.priority == priority
    assert order.depth is not None and abs(order.depth - depth) <= 2
    if priority != "fifo":
        assert order.bounds[priority] < order.bounds["fifo"]
    assert f"SchedulerParameters=bf_max_job_test={order.depth}" in order.lines()
    assert f"priority {priority}" in order.describe()


def test_weights_off_the_grid_are_refined_from_the_nearest_setting():
    """A site whose weights are none of the grid's: the nearest setting bounds the ranks
    far above the depth; the refined weights find its half-life and age cap, its age and
    job-size weights relative to fair share (0.4 and 0.5) within 10 %, and its depth."""
    site = [
        "AccountingStorageType=accounting_storage/slurmdbd",
        "PriorityType=priority/multifactor",
        "PriorityFlags=NO_FAIR_TREE",  # classic, the model the inference fits
        "PriorityWeightFairshare=50000",
        "PriorityWeightAge=20000",
        "PriorityWeightJobSize=25000",
        "PriorityMaxAge=3-0",
        "PriorityDecayHalfLife=2-0",
    ]
    trace, _ = recorded(site, 20, None, 64, 0.9)
    order = infer_order(trace, 64, None)
    assert order is not None and order.bounded and order.weights
    assert "PriorityDecayHalfLife=48:00:00" in order.weights
    assert "PriorityMaxAge=72:00:00" in order.weights
    weight = dict(w.split("=") for w in order.weights)  # fair share at 100000
    assert int(weight["PriorityWeightAge"]) / 100000 == pytest.approx(0.4, rel=0.1)
    assert int(weight["PriorityWeightJobSize"]) / 100000 == pytest.approx(0.5, rel=0.1)
    assert order.weights_bound < order.bounds[order.best] / 2
    assert order.depth == (order.wall or order.weights_bound + 1)
    assert abs(order.depth - 20) <= 3
    assert order.lines()[: len(order.weights)] == list(order.weights)


def test_weights_off_the_grid_bound_an_order_the_grid_nearly_bounds():
    """A site whose job-size weight is three times its fair share (no grid setting has
    more than a tenth): under the grid's settings the starts rank hundreds deep, yet the
    queues were deeper still (the order is *nearly* bounded); weights refined from the best
    setting bound it, with the job size's share found."""
    site = [
        "AccountingStorageType=accounting_storage/slurmdbd",
        "PriorityType=priority/multifactor",
        "PriorityFlags=NO_FAIR_TREE",  # classic, the model the inference fits
        "PriorityWeightFairshare=10000",
        "PriorityWeightAge=5000",
        "PriorityWeightJobSize=30000",
        "PriorityMaxAge=6-0",
        "PriorityDecayHalfLife=4-0",
    ]
    trace, _ = recorded(site, 20, None, 64, 0.9)
    order = infer_order(trace, 64, None)
    assert order is not None and order.bounded and order.weights
    assert order.bounds[order.best] > 4 * order.weights_bound
    weight = dict(w.split("=") for w in order.weights)  # fair share at 100000
    assert int(weight["PriorityWeightJobSize"]) / 100000 == pytest.approx(3.0, rel=0.1)


def test_the_depth_is_taken_at_a_clear_wall_in_the_ranks():
    """Ranks spread evenly below a depth of 50, with 4 % of starts strayed past it (as
    under fair-share factors the record gives only roughly): their 98th percentile lies
    well past 50, the wall at 50. Ranks that thin out gradually, or a wall just below the
    bound, leave the bound's depth."""
    rng = np.random.default_rng(0)
    ranks = np.r_[rng.integers(0, 50, 1440), rng.integers(50, 120, 60)]
    bound = int(math.ceil(np.percentile(ranks, 98)))
    assert bound > 60 and rank_wall(ranks, bound) == 50
    smooth = np.minimum(rng.geometric(0.05, 1500), 400)
    assert rank_wall(smooth, int(np.percentile(smooth, 98))) is None
    assert rank_wall(rng.integers(0, 50, 1500), 49) is None


def test_a_deep_backfill_leaves_the_order_saying_nothing():
    """Slurm's default depth reaches every queue this log had: no depth is inferred, and
    the priority stays FIFO whichever setting ranks the starts best."""
    trace, limits = recorded("fifo", 500, None, 64, 0.9)
    order = infer_order(trace, 64, limits)
    assert order is not None and not order.bounded
    assert (order.priority, order.depth, order.lines()) == ("fifo", None, [])
    assert order.describe().startswith("nothing:")


def test_a_replay_with_no_flags_takes_the_order_the_log_shows(tmp_path, capsys):
    """No stored profile, no ``--slurm-conf``: ``hpcsim replay LOG`` replays under the
    priority and depth the start order shows, and says so; a given config is kept."""
    from sim.replay_cli import main as replay_main
    from sim.traces import write_swf

    trace, _ = recorded("fairshare-1d", 20, 4, 64, 0.9)
    log = tmp_path / "rec.swf"
    write_swf(trace, log)
    assert replay_main([str(log), "--no-progress"]) == 0
    err = capsys.readouterr().err
    # the priority and the depth the log was recorded under (weights may be refined)
    assert "from the recorded start order: priority fairshare-1d" in err
    assert "bf_max_job_test=20:" in err
    conf = tmp_path / "slurm.conf"
    conf.write_text("SchedulerParameters=bf_max_job_test=500\n")
    assert replay_main([str(log), "--no-progress", "--slurm-conf", str(conf)]) == 0
    assert "recorded start order" not in capsys.readouterr().err


def test_a_log_without_recorded_starts_shows_no_order():
    trace = make_trace([(0, 60, 120, 1), (10, 60, 120, 2)], total=4)
    assert infer_order(trace, 4, None) is None


def usage_integral(jobs, t: float, half_life: float) -> dict[int, float]:
    """Each user's usage at ``t``: units x the integral of 2^-(t - x)/half_life over the
    part of each job's run before ``t`` (no decay: its length)."""
    out: dict[int, float] = {}
    for s, e, n, u in jobs:
        a, b = s, min(e, t)
        if b <= a:
            continue
        if half_life:
            k = math.log(2) / half_life
            used = n * (math.exp(-k * (t - b)) - math.exp(-k * (t - a))) / k
        else:
            used = n * (b - a)
        out[u] = out.get(u, 0.0) + used
    return out


@settings(max_examples=60, deadline=None)
@given(
    jobs=st.lists(
        st.tuples(
            st.integers(0, 20_000),  # start (s)
            st.integers(0, 20_000),  # run time (s)
            st.integers(1, 8),  # units
            st.integers(0, 3),  # user
        ),
        min_size=1,
        max_size=25,
    ),
    times=st.lists(st.integers(0, 45_000), min_size=1, max_size=8),
    half_life=st.sampled_from([0.0, 3600.0, 86400.0]),
)
@example(jobs=[(0, 0, 1, 0), (1, 0, 1, 0)], times=[2], half_life=86400.0)  # found in CI
def test_the_fair_share_factors_match_the_usage_integral(jobs, times, half_life):
    """``fairshare_at`` (every user at each time) and ``recorded_fairshare`` (one job's
    user at its time) both give ``2^(-U/total x users)`` of the usage integral."""
    rows = [(float(s), float(r), float(r), n, u) for s, r, n, u in jobs]
    trace = make_trace(rows, total=64)
    trace.recorded_start = trace.submit.copy()
    runs = [(s, s + r, n, u) for s, r, n, u in jobs]
    users = max(u for *_, u in jobs) + 1
    at = np.array(times, dtype=np.float64)
    matrix = fairshare_at(trace, half_life, at, users)
    fold = priority.FOLD_VECTOR
    try:  # the same with every gap's events folded in one numpy call
        priority.FOLD_VECTOR = 0
        np.testing.assert_allclose(fairshare_at(trace, half_life, at, users), matrix)
    finally:
        priority.FOLD_VECTOR = fold
    for i, t in enumerate(times):
        use = usage_integral(runs, float(t), half_life)
        total = sum(use.values())
        for u in range(users):
            want = 2.0 ** (-(use.get(u, 0.0) / total) * users) if total > 0 else 1.0
            assert matrix[i, u] == pytest.approx(want, rel=1e-9, abs=1e-12)
    q = np.resize(at, len(trace))  # job j asked at q[j]
    per_job = recorded_fairshare(trace, half_life, users, at=q)
    np.testing.assert_allclose(per_job, matrix[np.arange(len(trace)) % at.size, trace.user])


def test_a_fit_starts_from_the_order_the_fit_part_shows():
    """Where the log records no priorities, ``hpcsim fit`` takes the priority the start
    order of its first two thirds shows and searches the depth from the one it shows; the
    profile says so, and keeps it through its file."""
    from sim.fit import fit
    from sim.profile import SiteProfile

    trace, _ = recorded("fairshare-1d", 20, 4, 64, 0.95, n=2000)
    prof = fit(trace, jitters=1)
    assert prof.priority == "fairshare-1d"
    assert prof.start_order.startswith("priority fairshare-1d, bf_max_job_test=")
    assert "priority fairshare-1d (recorded start order)" in prof.describe()
    assert prof.bf_max_job_test is not None and prof.bf_max_job_test <= 30
    again = SiteProfile.from_json(prof.to_json())
    assert again.start_order == prof.start_order


def test_a_profile_holds_refined_weights_and_refuses_bad_ones():
    """A profile's refined weights replace its setting's lines in its ``slurm.conf``, come
    back from its file, and are described; a stored file with bad weights is refused,
    naming the field."""
    import json

    from sim.profile import SiteProfile, weight_lines
    from tests.sim.test_profile import load_shipped

    prof = load_shipped()
    prof.priority, prof.weights = "fairshare-1d", [1.625, 0.0168, 0.473, 11.5]
    conf = prof.slurm_conf()
    assert "PriorityDecayHalfLife=39:00:00" in conf and "PriorityWeightJobSize=47300" in conf
    assert all(line in conf for line in weight_lines(*prof.weights))
    assert "PriorityDecayHalfLife=24:00:00" not in conf  # the grid setting's own
    again = SiteProfile.from_json(prof.to_json())
    assert again.weights == prof.weights and again.slurm_conf() == conf
    assert "with its weights refined (WeightFairshare=100000" in again.describe()
    good = json.loads(prof.to_json())
    for bad in ([1.0, 0.1], [0.0, 0.1, 0.1, 7.0], [1.0, -0.1, 0.1, 7.0], "1,2,3,4", [1, 0, 0, "7"]):
        with pytest.raises(ValueError, match="weights"):
            SiteProfile.from_json(json.dumps({**good, "weights": bad}))


def ranks_reference(q: Queues, cfg: SlurmConfig) -> np.ndarray:
    """:meth:`Queues.ranks` one recorded start at a time: how many of its queue's pending
    jobs the priority put ahead of the started one (ties: submitted first)."""
    trace = q.trace
    model = priority.PriorityModel(cfg, q.units, trace.unit, q.n_users)
    size = np.array([cfg.weight_job_size * model.size_factor(int(u)) for u in trace.units])
    shares = fairshare_at(trace, cfg.decay_half_life, q.times, q.n_users)
    out = []
    for row, (j, cand) in enumerate(zip(q.started, q.pending, strict=True)):
        jobs = np.r_[cand, j]
        if cfg.multifactor:
            age = np.clip(q.times[row] - trace.submit[jobs], 0.0, cfg.max_age)
            pri = size[jobs] + model.w_age * (age / cfg.max_age)
            if model.w_fairshare:
                pri += model.w_fairshare * shares[row][trace.user[jobs]]
            pri = np.maximum(np.trunc(pri), 1.0)
        else:
            pri = -trace.submit[jobs]
        ahead = (pri[:-1] > pri[-1]) | (
            (pri[:-1] == pri[-1]) & (trace.submit[cand] < trace.submit[j])
        )
        out.append(int(ahead.sum()))
    return np.array(out, np.int64)


@pytest.mark.parametrize(
    "key", ["fifo", "fairshare-1d", "fairshare-3.5d-size1k", "fairshare-7d-size10k"]
)
def test_ranks_equal_the_one_start_at_a_time_reference(key):
    trace, limits = recorded("fairshare-1d", 20, 4, 64, 0.9, n=1500)
    trace = replace(trace, submit=np.floor(trace.submit / 600) * 600)  # ties in submission
    q = Queues(trace, 64, limits)
    cfg = grid_config(key)
    assert q.started and np.array_equal(q.ranks(cfg), ranks_reference(q, cfg))
