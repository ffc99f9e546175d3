"""The compiled backfill walk on node pools (sim/_poolwalk.c) against its Python model
(tests/sim/pools_model.py): every walk of random simulations on random partitions, with and
without QOS limits, on node- and CPU-counted clusters, gives the same starts, allocations
and start estimates."""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim import _backfill
from sim.config import SlurmConfig
from sim.engine import Simulator
from sim.limits import QosLimits
from tests.sim.pools_model import walk_pools_model
from tests.sim.simhelpers import make_trace


@st.composite
def pooled_worlds(draw):  # type: ignore[no-untyped-def]
    """(trace, config, limits): random partitions over 2-8 nodes (overlapping or not), a
    random queue, backfill parameters and, half the time, per-user limits."""
    n_nodes = draw(st.integers(2, 8))
    cpus = draw(st.sampled_from([1, 1, 4]))  # 1: node-counted
    parts: list[tuple[int, int]] = []
    for _ in range(draw(st.integers(1, 4))):
        lo = draw(st.integers(1, n_nodes))
        parts.append((lo, draw(st.integers(lo, n_nodes))))
    res = draw(st.sampled_from([1, 60]))
    linear = draw(st.sampled_from([0, 0, 60]))
    delay = draw(st.sampled_from([0, 3]))
    conf = (
        f"SchedulerParameters=batch_sched_delay={delay},bf_resolution={res},"
        f"bf_window_linear={linear},bf_max_job_test={draw(st.sampled_from([1, 2, 3, 100]))}\n"
        f"NodeName=n[1-{n_nodes}]" + (f" CPUs={cpus}\n" if cpus > 1 else "\n")
    )
    for k, (lo, hi) in enumerate(parts):
        conf += f"PartitionName=p{k} Nodes=n[{lo}-{hi}]" + (" Default=YES\n" if k == 0 else "\n")
    rows, names = [], []
    for _ in range(draw(st.integers(1, 25))):
        k = draw(st.integers(0, len(parts) - 1))
        size = (parts[k][1] - parts[k][0] + 1) * cpus
        runtime = draw(st.sampled_from([1, 30, 59, 60, 61, 120, 600, 3600]))
        limit = runtime + draw(st.sampled_from([0, 1, 60, 3000]))
        submit = draw(st.sampled_from([0, 0, 1, 30, 100, 700, 4000]))
        rows.append((submit, runtime, limit, draw(st.integers(1, size)), draw(st.integers(0, 3))))
        names.append(f"p{k}")
    unit = "cpus" if cpus > 1 else "nodes"
    trace = replace(make_trace(rows, total=n_nodes * cpus, unit=unit), partitions=names)
    limits = None
    if draw(st.booleans()):
        limits = QosLimits(
            max_jobs_per_user=draw(st.sampled_from([None, 1, 2])),
            max_nodes_per_user=draw(st.sampled_from([None, 1, 3])),
            larger_jobs_exempt=draw(st.booleans()),
            user_limits=tuple(
                (u, *c)
                for u, c in sorted(
                    draw(
                        st.dictionaries(
                            st.integers(0, 3),
                            st.tuples(
                                st.sampled_from([None, 0, 3]),
                                st.sampled_from([None, 2, 6]),
                                st.sampled_from([None, 8]),
                            ),
                            max_size=1,
                        )
                    ).items()
                )
            ),
        )
    return trace, SlurmConfig.from_text(conf), limits


def walk_both(trace, cfg, limits, epoch) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """Simulate ``trace`` with every backfill walk done both ways and compared (a start
    estimate of every pending job at every event too); how many walks of each kind ran."""
    compiled = Simulator._walk_pools
    calls = {"now": 0, "estimate": 0}

    def both(sim, stop, start_now, n_test=sys.maxsize):  # type: ignore[no-untyped-def]
        got = compiled(sim, stop, start_now, n_test)
        assert got == walk_pools_model(sim, stop, start_now, n_test)
        calls["now" if start_now else "estimate"] += 1
        return got

    try:
        sim = Simulator(trace, cfg, limits=limits, epoch=epoch)
    except ValueError:  # a limit no job can meet, refused at submission; not this test's
        return calls
    with mock.patch.object(Simulator, "_walk_pools", both):
        for _ in range(5000):
            for job_id in list(sim.state.pending):
                sim.estimate_start(job_id)
            t = sim.next_event_time()
            if math.isinf(t):
                break
            sim.advance(t)
    return calls


@settings(max_examples=300, deadline=None)
@given(pooled_worlds(), st.sampled_from([0.0, 7.0, 1.7e9]))
def test_the_compiled_walk_matches_the_model(world, epoch):
    walk_both(*world, epoch)


@st.composite
def blocked_queues(draw):  # type: ignore[no-untyped-def]
    """(trace, config, limits): a wide job reserved behind a running one, then small jobs
    of few users under a running-jobs limit, so that a backfill pass's own starts hold
    later jobs at their turn (passed over uncounted) within a shallow depth."""
    n_nodes = draw(st.integers(4, 6))
    conf = (
        f"SchedulerParameters=bf_max_job_test={draw(st.integers(1, 5))}\n"
        f"NodeName=n[1-{n_nodes}]\nPartitionName=all Nodes=n[1-{n_nodes}] Default=YES\n"
        "PartitionName=two Nodes=n[1-2]\n"
    )
    rows = [(0, 100, 100, 2, 9), (1, 10, 100, n_nodes, 8)]
    parts = ["all", "all"]
    for _ in range(draw(st.integers(3, 10))):
        runtime = draw(st.integers(10, 60))
        rows.append((2, runtime, 60, 1, draw(st.integers(0, 2))))
        parts.append(draw(st.sampled_from(["all", "two"])))
    trace = replace(make_trace(rows, total=n_nodes), partitions=parts)
    return trace, SlurmConfig.from_text(conf), QosLimits(max_jobs_per_user=draw(st.integers(1, 2)))


@settings(max_examples=100, deadline=None)
@given(blocked_queues())
def test_the_walk_counts_its_depth_at_each_jobs_turn(world):
    """The compiled walk and its model agree where the depth turns on jobs the same pass
    holds (a case the random worlds above rarely draw)."""
    assert walk_both(*world, 0.0)["now"] > 0


def test_a_busy_world_walks_both_ways():
    """The comparison is not vacuous: on two overlapping partitions under load, with a
    per-user limit, backfill walks start jobs and estimate starts."""
    conf = (
        "SchedulerParameters=batch_sched_delay=0,bf_resolution=60\nNodeName=n[1-6] CPUs=4\n"
        "PartitionName=all Nodes=n[1-6] Default=YES\nPartitionName=small Nodes=n[1-2]\n"
    )
    rows = [(10 * i, 300 + 97 * (i % 7), 4000, 1 + (5 * i) % 16, i % 3) for i in range(40)]
    parts = ["small" if i % 3 == 0 else "all" for i in range(40)]
    for i in range(0, 40, 3):
        rows[i] = (*rows[i][:3], 1 + i % 8, rows[i][4])
    trace = replace(make_trace(rows, total=24, unit="cpus"), partitions=parts)
    calls = walk_both(trace, SlurmConfig.from_text(conf), QosLimits(max_jobs_per_user=4), 0.0)
    assert calls["now"] > 10 and calls["estimate"] > 100


def test_walk_pools_refuses_bad_input():
    """Bad input is an error that names it, not a crash."""
    params = (0.0, 3600.0, 1.0, 30.0, 0.0, 0.0, 1.0, 1)
    with pytest.raises(IndexError, match="stop"):
        _backfill.walk_pools([], 1, False, [1], [1], {}, params, {}, None, 10)
    with pytest.raises(ValueError, match="seg_free"):
        _backfill.walk_pools([], 0, True, [1], [1, 2], {}, params, {}, None, 10)
    with pytest.raises(TypeError, match="dict"):
        _backfill.walk_pools([], 0, True, [1], [1], [], params, {}, None, 10)  # running: a dict
    with pytest.raises(TypeError, match="job"):
        _backfill.walk_pools([], 0, True, [1], [1], {1: "not a job"}, params, {}, None, 10)
