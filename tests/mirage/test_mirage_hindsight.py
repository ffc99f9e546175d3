"""Hindsight data and learning: labels equal ``what_if``, exact offline evaluation of
stopping rules, reproducible training, and a gate that routes."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th

from mirage import dataset as ds
from mirage.agents import load_policy
from mirage.agents.common.hindsight import (
    GapStats,
    first_fire_gaps,
    oracle_labels,
    tune_threshold,
)
from mirage.agents.common.model_io import save_model
from mirage.agents.common.policy import Decision
from mirage.envs import ChainEpisode, ChainSpec, play
from mirage.observation import N_FEATURES

H = 3600.0


def hand_data(gaps_per_episode: list[list[float]], end_gaps: list[float]) -> ds.HindsightData:
    """A dataset with given gaps and a one-row window (observations are not looked at)."""
    recs = []
    for gaps, end in zip(gaps_per_episode, end_gaps, strict=True):
        n = len(gaps)
        recs.append(
            {
                "t0": 0.0,
                "units": 1,
                "pred_end": 0.0,
                "end_gap": end,
                "now": list(range(n)),
                "gap": gaps,
                "hist_end": list(range(1, n + 1)),
                "hist": np.zeros((n, N_FEATURES)).tolist(),
                "ctx": np.zeros((n, N_FEATURES)).tolist(),
            }
        )
    return ds.from_records(recs, {"window": 1, "feature_version": 0})


def test_first_fire_gives_the_gap_of_the_first_firing_decision():
    d = hand_data([[-5 * H, -2 * H, 1 * H], [-3 * H, 0.0]], [4 * H, 2 * H])
    fire = np.array([False, True, True, False, False])
    assert list(first_fire_gaps(d, fire)) == [-2 * H, 2 * H]  # 2nd never fires: its end gap
    st = GapStats.of(first_fire_gaps(d, fire))
    assert st.abs_gap == pytest.approx(2.0) and st.uninterrupted == pytest.approx(0.5)


def test_oracle_labels_submit_where_no_later_time_is_better():
    d = hand_data([[-5 * H, -1 * H, 0.5 * H, 3 * H]], [6 * H])
    assert list(oracle_labels(d)) == [0, 0, 1, 1]
    # weighing interruption 3x: -1 h (cost 1) beats +0.5 h (cost 1.5)
    assert list(oracle_labels(d, interruption_weight=3.0)) == [0, 1, 1, 1]


def test_threshold_tuning_finds_the_best_rule():
    d = hand_data([[-5 * H, -1 * H, 2 * H], [-4 * H, -0.2 * H, 5 * H]], [3 * H, 6 * H])
    score = np.array([0.0, 1.0, 2.0, 0.0, 1.0, 2.0])  # the decision index, as a score
    t, st = tune_threshold(d, score)
    assert 0.0 < t <= 1.0  # submit at the 2nd decision: gaps -1 h and -0.2 h
    assert st.abs_gap == pytest.approx(0.6)
    t, st = tune_threshold(d, score, "uninterrupted", max_overlap=0.1)
    assert st.overlap <= 0.1 + 1e-9  # within the budget: never submit early
    assert st.uninterrupted == 0.0


@pytest.fixture(scope="module")
def tiny_data(small_world):
    starts = ds.sample_starts(small_world, "train", 6, [1, 2], seed=5)
    recs = ds.collect(small_world, starts, 3600.0)
    return ds.from_records(recs, ds.dataset_meta(small_world, "train", 6, 5, 3600.0, [1, 2]))


def test_labels_equal_what_if_at_sampled_decisions(small_world, tiny_data):
    rng = np.random.default_rng(0)
    for e in rng.choice(tiny_data.episodes, 3, replace=False):
        a, b = tiny_data.ep_first[e], tiny_data.ep_first[e + 1]
        k = int(rng.integers(b - a))
        chain = ChainSpec(units=int(tiny_data.ep_units[e])).resolved(small_world.max_limit)
        ep = ChainEpisode(small_world, chain, float(tiny_data.ep_t0[e]), 3600.0)
        for _ in range(k):
            ep.step(Decision.WAIT)
        assert ep.what_if(0) == tiny_data.gap[a + k]
        assert np.array_equal(ep.observe(), tiny_data.obs(np.array([a + k]))[0])
        while not ep.done:
            ep.step(Decision.WAIT)
        assert ep.outcome.gap == tiny_data.ep_end_gap[e]


def test_dataset_round_trip_and_version_check(tiny_data, tmp_path):
    path = ds.save(tiny_data, tmp_path / "d.parquet")
    back = ds.load(path)
    assert np.array_equal(back.obs(), tiny_data.obs())
    assert np.array_equal(back.gap, tiny_data.gap)
    assert back.meta == tiny_data.meta
    stale = tiny_data
    stale.meta = {**tiny_data.meta, "feature_version": 1}
    ds.save(stale, tmp_path / "old.parquet")
    stale.meta = back.meta
    with pytest.raises(ds.DatasetError, match="feature version 1"):
        ds.load(tmp_path / "old.parquet")
    (tmp_path / "x.parquet").write_text("not parquet")
    with pytest.raises(ds.DatasetError, match="x"):
        ds.load(tmp_path / "x.parquet")


def test_concatenated_datasets_keep_every_observation_and_label(tiny_data):
    both = ds.concat([tiny_data, tiny_data])
    n = len(tiny_data)
    assert len(both) == 2 * n and both.episodes == 2 * tiny_data.episodes
    assert np.array_equal(both.obs(np.arange(n, 2 * n)), tiny_data.obs())
    assert np.array_equal(both.gap[n:], tiny_data.gap)
    assert np.array_equal(both.episode[n:], tiny_data.episode + tiny_data.episodes)
    first = first_fire_gaps(both, both.gap >= 0)
    assert np.array_equal(first[: tiny_data.episodes], first[tiny_data.episodes :])
    other = hand_data([[1.0]], [2.0])
    with pytest.raises(ds.DatasetError, match="observation shape"):
        ds.concat([tiny_data, other])


def params(module: th.nn.Module) -> np.ndarray:
    return th.cat([p.detach().flatten() for p in module.parameters()]).numpy()


def _net(agent, model):
    return model.net if agent == "gap-regressor" else model.policy


@pytest.mark.parametrize("agent", ["dqn", "pg", "gap-regressor"])
def test_hindsight_training_is_reproducible_from_a_seed(tiny_data, agent):
    from mirage.train import train_hindsight

    a, ma = train_hindsight(agent, tiny_data, tiny_data, seed=3)
    b, mb = train_hindsight(agent, tiny_data, tiny_data, seed=3)
    c, _ = train_hindsight(agent, tiny_data, tiny_data, seed=4)
    assert np.array_equal(params(_net(agent, a)), params(_net(agent, b)))
    assert not np.array_equal(params(_net(agent, a)), params(_net(agent, c)))
    assert ma["threshold"] == mb["threshold"]


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["dqn", "moe-dqn", "pg", "transformer-pg", "gap-regressor"])
def test_every_agent_learns_from_hindsight_saves_loads_and_decides(
    small_world, tiny_data, tmp_path, agent
):
    from mirage.train import train_hindsight

    model, meta = train_hindsight(agent, tiny_data, tiny_data, seed=0)
    assert np.isfinite(meta["threshold"]) or meta["threshold"] == np.inf
    path = save_model(model, tmp_path / f"{agent}.zip", agent, meta)
    policy = load_policy(str(path))
    obs = tiny_data.obs(np.arange(8))
    # the loaded model's decisions follow its score and threshold
    scores = policy.score(obs)
    assert scores.shape == (8,)
    t0 = small_world.sample_start("validation", np.random.default_rng(0))
    out = play(ChainEpisode(small_world, ChainSpec().resolved(small_world.max_limit), t0), policy)
    assert np.isfinite(out.gap)


def test_load_levels_cut_the_reactive_gap():
    from mirage.agents import moe_dqn

    d = hand_data([[0.0]] * 5, [0.0, 0.4 * H, 2 * H, 6 * H, 30 * H])
    assert list(moe_dqn.load_levels(d, 4)) == [0, 0, 1, 2, 3]
    assert list(moe_dqn.expert_groups(d, 4, "load")) == [0, 0, 1, 2, 3]
    with pytest.raises(ValueError, match="routing"):
        moe_dqn.expert_groups(d, 4, "weather")


@pytest.mark.parametrize("routing", ["time", "load"])
def test_moe_gate_routes_and_a_collapsed_gate_is_caught(tiny_data, routing):
    from mirage.agents import moe_dqn
    from mirage.train import train_hindsight

    data = tiny_data
    if routing == "load":  # six chains of one short slice: give them four load levels
        from dataclasses import replace

        levels = np.array([0.1, 1.0, 5.0, 20.0, 0.2, 8.0])[: data.episodes] * H
        data = replace(data, ep_end_gap=levels)
        assert len(set(moe_dqn.load_levels(data, 4))) == 4
    # 288 decisions are few for four 128x128 experts: more passes than the default's 12
    model, _ = train_hindsight("moe-dqn", data, data, seed=0, iterations=30, routing=routing)
    slices = moe_dqn.expert_groups(data, 4, routing)
    usage = moe_dqn.gate_usage(model, data, groups=slices)
    assert not moe_dqn.collapsed(usage), usage
    # experts specialise: the slices are not all routed to the same expert
    dominant = {int(np.argmax(w)) for w in usage["by_group"].values()}
    assert len(dominant) >= 2, usage
    with th.no_grad():  # force the gate onto expert 0: the check must say so
        gate = moe_dqn.gate_of(model.policy).gate
        gate.weight.zero_()
        gate.bias.copy_(th.tensor([50.0, 0.0, 0.0, 0.0]))
    assert moe_dqn.collapsed(moe_dqn.gate_usage(model, data))
