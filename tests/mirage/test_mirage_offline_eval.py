"""The offline evaluation of a learned stopping rule from hindsight labels gives exactly
the outcome of playing it in the simulator."""

from __future__ import annotations

import numpy as np
import pytest

from mirage import dataset as ds
from mirage.agents.common.model_io import save_model
from mirage.envs import ChainSpec
from mirage.eval import offline
from mirage.eval.runner import evaluate

INTERVAL = 3600.0


@pytest.fixture(scope="module")
def labelled(small_world):
    starts = ds.sample_starts(small_world, "validation", 6, [1], seed=11)
    recs = ds.collect(small_world, starts, INTERVAL)
    meta = ds.dataset_meta(small_world, "validation", 6, 11, INTERVAL, [1])
    return [t0 for t0, _ in starts], ds.from_records(recs, meta)


def test_offline_rows_equal_the_simulated_episodes(small_world, labelled, tmp_path):
    from mirage.agents.common.pretrain import predict
    from mirage.agents.gap_regressor import score
    from mirage.train import train_hindsight

    starts, data = labelled
    model, meta = train_hindsight("gap-regressor", data, data, seed=0)
    # a threshold at the median score: the rule fires in some chains and not in others
    meta["threshold"] = float(np.median(predict(score(model), data)))
    path = str(save_model(model, tmp_path / "gr.zip", "gap-regressor", meta))
    off = {r["t0"]: r for r in offline.evaluate_models(data, [path], ["gr"])}
    chain = ChainSpec(units=1).resolved(small_world.max_limit)
    played = evaluate(small_world, [path], chain, starts, decision_interval=INTERVAL)
    assert {r["forced"] for r in off.values()} == {True, False}
    assert len(off) == len(played) == data.episodes
    for r in played:
        o = off[r["t0"]]
        assert (o["gap"], o["decisions"], o["forced"]) == (r["gap"], r["decisions"], r["forced"])


def test_oracle_is_the_least_gap_of_any_submit_time(labelled):
    _, data = labelled
    best = offline.oracle_gaps(data)
    for e in range(data.episodes):
        g = np.r_[data.gap[data.ep_first[e] : data.ep_first[e + 1]], data.ep_end_gap[e]]
        assert abs(best[e]) == np.abs(g).min()
