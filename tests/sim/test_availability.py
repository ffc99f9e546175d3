"""The availability timeline: native drains in the engine, and one fitted to a log."""

from __future__ import annotations

import numpy as np
import pytest

from sim.availability import Availability, fitted, recorded_usage
from sim.config import SlurmConfig
from sim.engine import Simulator
from tests.sim.simhelpers import make_trace, starts

MULTIFACTOR = SlurmConfig.from_text(
    "AccountingStorageType=accounting_storage/slurmdbd\nPriorityType=priority/multifactor\n"
    "PriorityWeightAge=1000\nPriorityWeightFairshare=10000\n"
)


@pytest.mark.parametrize("cfg", [SlurmConfig(), MULTIFACTOR], ids=["basic", "multifactor"])
def test_a_drop_drains_running_jobs_and_holds_new_ones(cfg):
    # 10 nodes; from t=100 only 4 are available, from t=1000 all again
    rows = [(0, 500, 600, 8, 0), (150, 50, 60, 6, 1), (200, 50, 60, 1, 2)]
    av = Availability((100.0, 1000.0), (4, 10))
    sim = Simulator(make_trace(rows, total=10), cfg, availability=av)
    sim.run()
    # job 3 (1 node) waits until job 1 ends (its 8 nodes over the 4 available), then starts
    # by backfill (job 2 blocks the main pass) at the next pass; job 2 (6 nodes) waits until
    # all nodes are back
    assert starts(sim) == {1: 0.0, 2: 1000.0, 3: 510.0}
    assert sim.state.cap == 10 and sim.free == 10


def test_without_a_timeline_the_schedule_is_unchanged():
    rows = [(0, 500, 600, 8, 0), (150, 50, 60, 6, 1), (200, 50, 60, 1, 2)]
    plain = Simulator(make_trace(rows, total=10))
    plain.run()
    empty = Simulator(make_trace(rows, total=10), availability=Availability((), ()))
    empty.run()
    assert starts(plain) == starts(empty) == {1: 0.0, 2: 500.0, 3: 210.0}


def test_snapshot_keeps_the_timeline_position():
    rows = [(0, 500, 600, 8, 0), (150, 50, 60, 6, 1), (200, 50, 60, 1, 2)]
    sim = Simulator(make_trace(rows, total=10), availability=Availability((100.0, 1000.0), (4, 10)))
    sim.advance(300)
    blob = sim.snapshot()
    sim.run()
    first = starts(sim)
    sim.restore(blob)
    sim.run()
    assert starts(sim) == first


def test_availability_is_checked():
    with pytest.raises(ValueError, match="ascending"):
        Availability((5.0, 1.0), (1, 2))
    with pytest.raises(ValueError, match="exceeds the cluster's 10"):
        Simulator(make_trace([(0, 1, 2, 1)], total=10), availability=Availability((0.0,), (11,)))


def test_the_fitted_timeline_is_never_below_the_recorded_use():
    rng = np.random.default_rng(1)
    n = 400
    rows = [
        (float(s), float(r), 2.0 * r, int(u))
        for s, r, u in zip(
            np.sort(rng.uniform(0, 50_000, n)),
            rng.uniform(10, 3000, n),
            rng.integers(1, 9, n),
            strict=True,
        )
    ]
    trace = make_trace(rows, total=64)
    trace.recorded_start = trace.submit + rng.uniform(0, 2000, n)
    use = recorded_usage(trace)
    # brute force: the use just after every change
    for t, u in zip(use.times, use.units, strict=True):
        run = (trace.recorded_start <= t) & (trace.recorded_start + trace.runtime > t)
        assert trace.units[run].sum() == u
    for window in (0.0, 3600.0, 86_400.0):
        av = fitted(use, use.peak, window=window)
        assert max(av.units) <= use.peak
        for t, u in zip(use.times, use.units, strict=True):
            assert av.at(t, use.peak) >= u
    assert fitted(use, use.peak, window=0.0).units != fitted(use, use.peak, window=1e9).units
    # held to the recorded use while jobs waited: tighter, still never below it
    loose = fitted(use, use.peak, window=86_400.0)
    tight = fitted(use, use.peak, window=86_400.0, waiting_trace=trace, waiting_window=0.0)
    assert tight.units != loose.units
    for t, u in zip(use.times, use.units, strict=True):
        assert loose.at(t, use.peak) >= tight.at(t, use.peak) >= u


POOLS = SlurmConfig.from_text(
    "NodeName=n[1-10]\nNodeName=g[1-4]\nNodeName=d[1-2]\n"
    "PartitionName=cpu Nodes=n[1-10] Default=YES\nPartitionName=gpu Nodes=g[1-4]\n"
    "PartitionName=dev Nodes=n[1-2],d[1-2]\n"
)


def test_a_partitions_own_pool_drains_alone():
    from dataclasses import replace

    # gpu (4 nodes) has 1 available from t=100 to 1000; cpu is untouched
    rows = [(0, 500, 600, 3, 0), (150, 50, 60, 2, 1), (200, 50, 60, 1, 2), (210, 50, 60, 6, 3)]
    trace = replace(make_trace(rows, total=16), partitions=["gpu", "gpu", "gpu", "cpu"])
    av = {"gpu": Availability((100.0, 1000.0), (1, 4))}
    sim = Simulator(trace, POOLS, availability=av)
    sim.run()
    # job 1 (3 gpu nodes) keeps running over the drop; job 3 (1 node) waits until it ends
    # (the main pass at its end starts it); job 2 (2 nodes) until all gpu nodes are back;
    # the cpu job (6 nodes) starts as submitted (its pool is free)
    got = starts(sim)
    assert got[1] == 0.0 and got[2] == 1000.0 and got[4] < 215.0 and 500.0 <= got[3] < 600.0
    assert sim.state.seg_cap == list(sim._pools.seg_size) and sim.free == 16
    assert sim.state.seg_debt == [0] * len(sim._pools.seg_size)


def test_availability_per_partition_needs_a_pool_of_its_own():
    trace = make_trace([(0, 10, 20, 1, 0)], total=16)
    av = Availability((100.0,), (1,))
    with pytest.raises(ValueError, match="given per partition"):
        Simulator(trace, POOLS, availability=av)
    with pytest.raises(ValueError, match="'dev' shares its nodes"):
        Simulator(trace, POOLS, availability={"dev": av})
    with pytest.raises(ValueError, match="unknown partition 'x'"):
        Simulator(trace, POOLS, availability={"x": av})
    with pytest.raises(ValueError, match="exceeds partition 'gpu'"):
        Simulator(trace, POOLS, availability={"gpu": Availability((1.0,), (5,))})
    with pytest.raises(ValueError, match="needs node pools"):
        Simulator(make_trace([(0, 10, 20, 1, 0)], total=10), availability={"gpu": av})
