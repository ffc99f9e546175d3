"""Node pools inferred from the partitions a log names (``hpcsim fit``), checked on logs the
simulator recorded itself on a cluster with known pools."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from sim.config import SlurmConfig
from sim.engine import Simulator
from sim.fit import fit, starting_profile
from sim.log_inference import (
    MAX_POOLS,
    major_pools,
    nested_pools,
    partition_pools,
    pool_candidates,
    stated_pools,
    tier_candidates,
)
from sim.profile import UNNAMED, SiteProfile, load, scale_pools, store
from tests.sim.simhelpers import make_trace

POOLS = {"cpu": 24, "gpu": 8}
SPLIT = """NodeName=c[1-24]
NodeName=g[1-8]
PartitionName=cpu Nodes=c[1-24] Default=YES
PartitionName=gpu Nodes=g[1-8]
"""
SHARED = """NodeName=c[1-32]
PartitionName=cpu Nodes=ALL Default=YES
PartitionName=gpu Nodes=ALL
"""


NESTED = """NodeName=c[1-24]
NodeName=g[1-8]
PartitionName=cpu Nodes=c[1-24] Default=YES
PartitionName=gpu Nodes=g[1-8]
PartitionName=dev Nodes=c[1-4]
"""


def recorded_parted(conf: str, n: int = 400, seed: int = 11, dev: float = 0.0, whole: bool = False):
    """A loaded workload of 8 users in two partitions (gpu: a quarter of the jobs, larger
    ones; a share ``dev`` of 1-node jobs in a third, dev), its schedule recorded on the
    cluster ``conf`` describes (``whole``: submitted at whole seconds, as a SWF log keeps
    them)."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.uniform(0, 6 * 86400, n))
    submit = submit.round() if whole else submit
    runtime = rng.uniform(600, 6 * 3600, n).round()
    draw = rng.random(n)
    gpu = draw < 0.25
    units = np.where(gpu, rng.choice([2, 4, 8], n), rng.choice([1, 2, 4], n))
    units = np.where(draw > 1 - dev, 1, units)
    users = rng.integers(0, 8, n)
    rows = [
        (float(s), float(r), float(2 * r), int(u), int(us))
        for s, r, u, us in zip(submit, runtime, units, users, strict=True)
    ]
    parts = np.where(gpu, "gpu", np.where(draw > 1 - dev, "dev", "cpu"))
    trace = replace(make_trace(rows, total=32), partitions=[str(p) for p in parts])
    sim = Simulator(trace, SlurmConfig.from_text(conf), total_units=32)
    sim.run()
    start = {r.trace_index: r.start for r in sim.records}
    trace.recorded_start = np.array([start[i] for i in range(n)])
    trace.total_units = None  # a log without a header
    return trace


def test_the_pools_are_the_partitions_recorded_peaks():
    trace = recorded_parted(SPLIT)
    assert partition_pools(trace) == POOLS
    # one partition, none named, or a name a slurm.conf cannot hold: no pools
    assert partition_pools(replace(trace, partitions=["cpu"] * len(trace))) == {}
    assert partition_pools(replace(trace, partitions=[])) == {}
    odd = ["a b" if p == "gpu" else p for p in trace.partitions]
    assert partition_pools(replace(trace, partitions=odd)) == {}
    # jobs naming none get a pool of their own, the default partition
    blank = ["" if p == "gpu" else p for p in trace.partitions]
    assert partition_pools(replace(trace, partitions=blank)) == {"cpu": 24, UNNAMED: 8}


def test_the_worlds_tried():
    trace = recorded_parted(SPLIT)
    assert pool_candidates(trace) == [({}, {}, []), ({}, {}, ["cpu", "gpu"]), (POOLS, {}, [])]
    assert pool_candidates(replace(trace, partitions=[])) == [({}, {}, [])]
    many = [str(i % (MAX_POOLS + 1)) for i in range(len(trace))]  # shared nodes only
    worlds = pool_candidates(replace(trace, partitions=many))
    assert len(worlds) == 2 and len(worlds[1][2]) == MAX_POOLS + 1
    # a partition of under 1 % of the jobs beside one of all the rest: shared nodes only
    few = ["gpu" if i < len(trace) // 200 else "cpu" for i in range(len(trace))]
    assert pool_candidates(replace(trace, partitions=few)) == [
        ({}, {}, []),
        ({}, {}, ["cpu", "gpu"]),
    ]


def test_fit_recovers_the_pools_of_a_log_recorded_on_them(tmp_path):
    trace = recorded_parted(SPLIT)
    trace.source = str(tmp_path / "parted.swf")
    trace.digest = "9a" * 32
    prof = fit(trace, jitters=1)  # an exact replay recovers the recording exactly
    assert prof.pools == POOLS and prof.units == 32, prof.describe()
    assert prof.fit["spearman"] > 0.95 and prof.fit["ks"] < 0.05
    assert "pools cpu 24, gpu 8" in prof.describe()
    assert any("pools" not in str(s["setting"]) for s in prof.steps)  # one pool was tried
    store(prof, trace.source)
    again = load(trace)
    assert again is not None and again.pools == POOLS
    # the stored world replays the log as recorded (a per-user jobs wall that ties on the
    # fit part may hold a few of the last third's jobs back)
    sim = again.simulator(trace)
    sim.run()
    start = {r.trace_index: r.start for r in sim.records}
    same = sum(start[i] == trace.recorded_start[i] for i in range(len(trace)))
    assert same >= 0.99 * len(trace)


def test_fit_recovers_partitions_that_share_their_nodes():
    """Two partitions on every node: one pool, but Slurm's main scheduler blocks only the
    partition of a job that does not fit, which one pool without partitions cannot show."""
    trace = recorded_parted(SHARED)
    assert sum(partition_pools(trace).values()) > 32  # the peaks overlap
    trace.digest = "9b" * 32
    prof = fit(trace, jitters=1)
    assert prof.pools == {} and prof.shared_partitions == ["cpu", "gpu"], prof.describe()
    assert prof.fit["spearman"] > 0.95 and prof.fit["ks"] < 0.05
    cfg = prof.config()
    assert cfg.nodes == 32 and set(cfg.partitions) == {"cpu", "gpu"}
    one = [s for s in prof.steps if "partitions" not in str(s["setting"])]
    assert one and min(float(s["loss"]) for s in one) > 0.1  # one pool alone fits worse
    again = SiteProfile.from_json(prof.to_json())
    assert again.shared_partitions == ["cpu", "gpu"]


def test_fit_recovers_a_partition_nested_in_another():
    trace = recorded_parted(NESTED, dev=0.15)
    own = partition_pools(trace)
    assert own == {"cpu": 24, "dev": 4, "gpu": 8}
    assert nested_pools(trace, own) == {"dev": "cpu"}
    assert nested_pools(recorded_parted(SPLIT), POOLS) == {}  # gpu and cpu together > 24
    trace.digest = "9c" * 32
    prof = fit(trace, jitters=1)
    assert prof.nested == {"dev": "cpu"} and prof.units == 32, prof.describe()
    assert "dev 4 in cpu" in prof.describe()
    assert prof.fit["spearman"] > 0.95 and prof.fit["ks"] < 0.05
    cfg = prof.config(64)  # scaled: dev stays inside cpu
    assert cfg.nodes == 64 and len(cfg.partitions["dev"].nodes) == 8
    assert set(cfg.partitions["dev"].nodes) <= set(cfg.partitions["cpu"].nodes)
    again = SiteProfile.from_json(prof.to_json())
    assert again.nested == {"dev": "cpu"}
    with pytest.raises(ValueError, match="nested"):
        SiteProfile.from_json(prof.to_json().replace('"dev": "cpu"', '"dev": "nothere"'))


def test_a_profile_with_pools_scales_and_checks_them():
    prof = replace(starting_profile(recorded_parted(SPLIT)), pools=dict(POOLS), units=32)
    assert scale_pools(POOLS, 64) == {"cpu": 48, "gpu": 16}
    assert sum(scale_pools({"a": 5, "b": 3, "c": 1}, 20).values()) == 20
    cfg = prof.config(64)
    assert cfg.nodes == 64 and cfg.partition("").name == "cpu"
    trace = recorded_parted(SPLIT)
    assert prof.availability(trace) is None  # no window
    per_pool = replace(prof, window_s=3600.0, clamp=(0.0, 0.0)).availability(trace, 64)
    assert isinstance(per_pool, dict) and set(per_pool) == {"cpu", "gpu"}
    assert max(per_pool["cpu"].units) == 48 and max(per_pool["gpu"].units) == 16
    for total in (None, 64):  # a timeline for each pool, scaled with the cluster
        sim = replace(prof, window_s=3600.0).simulator(trace, total_units=total)
        sim.run()
        assert sim.never_started() == {} and sim.total_units == (total or 32)
    # outages without a window: each pool's own, from its partition's jobs alone
    shut = replace(prof, outage_s=1800.0).availability(trace)
    assert isinstance(shut, dict) and set(shut) == {"cpu", "gpu"}
    sim = replace(prof, outage_s=1800.0).simulator(trace)
    sim.run()
    assert sim.never_started() == {}
    bad = prof.to_json().replace('"gpu": 8', '"gpu": 9')
    with pytest.raises(ValueError, match="pools sum to 33"):
        SiteProfile.from_json(bad)
    with pytest.raises(ValueError, match="partition names"):
        SiteProfile.from_json(prof.to_json().replace('"gpu": 8', '"g u": 8'))
    both = prof.to_json().replace('"shared_partitions": []', '"shared_partitions": ["cpu"]')
    with pytest.raises(ValueError, match="not both"):
        SiteProfile.from_json(both)


def test_a_sacct_export_names_its_partitions(tmp_path):
    """The pools come from any dialect's partition field: here sacct's ``Partition``."""
    from datetime import UTC, datetime

    from sim.traces.read import read_trace

    trace = recorded_parted(NESTED, dev=0.15)

    def stamp(t: float) -> str:
        return datetime.fromtimestamp(1.7e9 + t, UTC).strftime("%Y-%m-%dT%H:%M:%S")

    lines = ["JobID|User|Partition|Submit|Start|End|Timelimit|NNodes"]
    for i in range(len(trace)):
        s, b, r = trace.submit[i], trace.recorded_start[i], trace.runtime[i]
        lines.append(
            f"{i + 1}|u{trace.user[i]}|{trace.partitions[i]}|{stamp(s)}|{stamp(b)}|"
            f"{stamp(b + r)}|{int(trace.limit[i]) // 60}|{trace.units[i]}"
        )
    path = tmp_path / "sacct.txt"
    path.write_text("\n".join(lines) + "\n")
    log = read_trace(path)
    assert sorted(set(log.partitions)) == ["cpu", "dev", "gpu"]
    own = partition_pools(log)
    assert own == {"cpu": 24, "dev": 4, "gpu": 8}
    assert pool_candidates(log)[-1] == (own, {"dev": "cpu"}, [])


TIERED = """NodeName=c[1-32]
PartitionName=cpu Nodes=ALL Default=YES
PartitionName=gpu Nodes=ALL PriorityTier=2
PartitionName=dev Nodes=ALL
"""


def test_the_tiers_tried_rank_the_partitions_by_their_waits_for_their_size():
    """The express partition's jobs are larger than the others': they wait less than jobs
    of their size elsewhere, and the tier goes to it."""
    trace = recorded_parted(TIERED, dev=0.2)
    mask = np.ones(len(trace), bool)
    tried = tier_candidates(trace, mask)
    assert tried[:2] == [{}, {"cpu": 1, "dev": 1, "gpu": 2}]
    assert len(tried) == 3 and sorted(tried[2].values()) == [2, 3, 4] and tried[2]["gpu"] == 4
    assert tier_candidates(replace(trace, partitions=[]), mask) == [{}]
    # a partition with under 1 % of the jobs keeps the lowest tier
    few = ["x" if i == 0 else p for i, p in enumerate(trace.partitions)]
    assert all(c.get("x", 1) == 1 for c in tier_candidates(replace(trace, partitions=few), mask))


def test_fit_recovers_an_express_partitions_priority_tier():
    trace = recorded_parted(TIERED)
    prof = fit(trace, jitters=1)  # an exact replay recovers the recording exactly
    assert prof.tiers == {"cpu": 1, "gpu": 2}
    assert "PartitionName=gpu Nodes=ALL PriorityTier=2" in prof.slurm_conf()
    assert "tiers gpu 2" in prof.describe()
    assert prof.fit["spearman"] == pytest.approx(1.0)
    back = SiteProfile.from_json(prof.to_json())
    assert back.tiers == prof.tiers and back.slurm_conf() == prof.slurm_conf()


def test_a_profile_with_bad_tiers_is_refused():
    prof = replace(starting_profile(recorded_parted(SHARED)), tiers={"cpu": 1, "gpu": 2})
    text = prof.to_json().replace('"gpu": 2', '"gpu": -3')
    with pytest.raises(ValueError, match="tiers"):
        SiteProfile.from_json(text)
    assert SiteProfile.from_json(prof.to_json()).tiers == {"cpu": 1, "gpu": 2}


def with_minor_partitions(trace):  # type: ignore[no-untyped-def]
    """``trace`` with 3 of its cpu jobs named ``debug`` and 3 gpu jobs ``viz``: partitions of
    under 1 % of the jobs whose jobs ran on the larger ones' nodes."""
    parts = list(trace.partitions)
    for name, pool in (("debug", "cpu"), ("viz", "gpu")):
        for i in [i for i, p in enumerate(parts) if p == pool][:3]:
            parts[i] = name
    return replace(trace, partitions=parts)


def test_small_partitions_run_on_the_large_ones_pools():
    trace = with_minor_partitions(recorded_parted(SPLIT))
    split = major_pools(trace)
    assert split is not None
    pools, aliases = split
    assert set(aliases) == {"debug", "viz"} and set(aliases.values()) <= {"cpu", "gpu"}
    own = {k: v for k, v in pools.items() if k not in aliases}
    assert own == POOLS  # the recorded peaks, the small partitions' jobs counted in
    assert all(pools[k] == pools[v] for k, v in aliases.items())
    # a world the fit tries beside the others (the small partitions keep theirs out)
    assert (pools, aliases, []) in pool_candidates(trace)
    # the flag-free world takes them only where the log states a size they fit in
    assert stated_pools(trace) is None  # headerless
    assert stated_pools(replace(trace, total_units=32)) == split
    assert stated_pools(replace(trace, total_units=31)) is None  # they would share nodes
    assert stated_pools(recorded_parted(SHARED)) is None
    # a profile of them: an alias has its pool's nodes, and its jobs count in its pool's
    # availability timeline
    prof = replace(starting_profile(trace), pools=pools, nested=aliases, units=32, window_s=3600.0)
    cfg = prof.config(64)
    for k, v in aliases.items():
        assert cfg.partitions[k].nodes == cfg.partitions[v].nodes
    per_pool = prof.availability(trace, 64)
    assert isinstance(per_pool, dict) and set(per_pool) == {"cpu", "gpu"}
    sim = prof.simulator(trace, total_units=64)
    sim.run()
    assert sim.never_started() == {}
    assert "debug 24 in cpu" in prof.describe()
    again = SiteProfile.from_json(prof.to_json())  # stored and loaded as they are
    assert again.pools == pools and again.nested == aliases


def test_the_flag_free_replay_runs_disjoint_partitions_as_pools(tmp_path, capsys):
    """A log whose partitions' peaks fit the size it states replays, with no flags, on a
    pool per partition: the recording of a split cluster comes back close to recorded,
    where one pool (the same log without its partitions) makes its jobs wait a tenth."""
    from sim.fidelity import fidelity
    from sim.replay_cli import main as replay_main
    from sim.traces import write_swf

    trace = with_minor_partitions(recorded_parted(SPLIT, whole=True))
    trace.total_units = 32
    names = {"cpu": "1", "gpu": "2", "debug": "3", "viz": "4"}
    got = {}
    for world, parts in (("pools", [names[p] for p in trace.partitions]), ("one", [])):
        log, out = tmp_path / f"{world}.swf", tmp_path / f"{world}.csv"
        write_swf(replace(trace, partitions=parts), log)
        assert replay_main([str(log), "--no-cache", "--no-progress", "--out", str(out)]) == 0
        err = capsys.readouterr().err
        assert ("node pools: partitions 1, 2 used at most 24 + 8" in err) == (world == "pools")
        sched = pd.read_csv(out)
        got[world] = fidelity(
            (sched["start"] - sched["submit"]).to_numpy(),
            (sched["recorded_start"] - sched["submit"]).to_numpy(),
        )
    pools, one = got["pools"], got["one"]
    assert abs(pools.sim_mean_h / pools.rec_mean_h - 1) < 0.1 and pools.spearman > 0.8, pools
    assert one.sim_mean_h < 0.2 * one.rec_mean_h and one.spearman < 0.5, one
