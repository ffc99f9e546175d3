"""The shipped LS6 model loads and runs on other clusters' traces without retraining."""

from __future__ import annotations

import numpy as np
import pytest

from mirage.agents import default_model_path, load_policy
from mirage.agents.common.model_io import read_meta
from mirage.envs import ChainEpisode, ChainSpec, ChainWorld, play
from mirage.observation import CONTEXT_COLUMNS, FEATURE_VERSION, for_version


def test_default_model_is_shipped_small_and_readable():
    """The shipped model is small, and this code builds its observations: its feature
    version is today's or an older one that today's features only append to (version 4:
    FEATURE_VERSION 5 fixed a queue feature as a new column, see mirage/observation.py)."""
    path = default_model_path()
    assert path.exists(), f"{path} missing: train it (docs/mirage-agents.md)"
    assert path.stat().st_size < 4 * 2**20
    meta = read_meta(path)
    assert meta["feature_version"] in CONTEXT_COLUMNS
    assert FEATURE_VERSION - meta["feature_version"] <= 1
    assert meta["trace"].startswith("ls6")


@pytest.mark.parametrize("name", ["hpc2n-excerpt.swf", "lublin_256.swf"])
def test_ls6_model_runs_on_another_trace(name, trace_path):
    from sim.traces.read import read_trace

    trace = read_trace(trace_path(name))
    if name.startswith("lublin"):  # a heavily loaded synthetic log: a slice keeps it quick
        trace = trace.window(0, float(np.quantile(trace.submit, 0.3)))
    world = ChainWorld(trace)
    policy = load_policy("default")
    meta = policy.meta
    assert world.total_units != meta["total_units"] or world.max_limit != meta["max_limit"]
    chain = ChainSpec().resolved(world.max_limit)
    rng = np.random.default_rng(0)
    decisions = []
    for _ in range(2):
        ep = ChainEpisode(world, chain, world.sample_start("validation", rng))
        assert for_version(ep.observe(), meta["feature_version"]).shape == tuple(meta["obs_shape"])
        out = play(ep, policy)
        assert np.isfinite(out.gap) and out.pred_end > out.pred_start
        decisions.append(out.decisions)
    assert all(d >= 1 for d in decisions)


def test_live_path_without_the_simulator():
    """What the live-cluster code does: squeue snapshots on Unix time -> builder -> policy."""
    from hpcbase.snapshot import QueueSnapshot
    from mirage.agents import Decision, DecisionContext, observation_builder_for
    from mirage.observation import ChainState

    policy = load_policy("default")
    builder = observation_builder_for(policy, total_units=84, max_limit=48 * 3600)
    now = 1.7e9
    for i in range(6):
        t = now + 600 * i
        builder.push(
            QueueSnapshot.from_rows(
                t,
                84,
                pending=[
                    (100 + j, 2, 48 * 3600.0, t - 3600 * (j + 1), t - 3600 * (j + 1))
                    for j in range(20 - i)
                ],
                running=[(j, 4, 48 * 3600.0, t - 3600 * j) for j in range(20)],
            )
        )
    decisions = set()
    for remaining_h in (47.0, 10.0, 1.0, 0.2):
        start = now + 3000 - (48 - remaining_h) * 3600
        chain = ChainState(now + 3000, 4, 48 * 3600.0, start - 600, start, 4, 48 * 3600.0)
        ctx = DecisionContext.from_builder(builder, chain, decision_interval=600)
        seen = for_version(ctx.obs, policy.meta["feature_version"])
        assert seen.shape == tuple(policy.meta["obs_shape"])
        decisions.add(policy.decide(ctx))
    assert decisions <= {Decision.WAIT, Decision.SUBMIT}
    assert Decision.WAIT in decisions  # 47 h before the end nothing should be submitted
