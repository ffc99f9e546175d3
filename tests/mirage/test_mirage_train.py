"""Training, saving and loading agents (tiny step counts)."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
import torch as th

from mirage.agents import default_model_path, load_policy
from mirage.agents.common.model_io import META_NAME, ModelError, read_meta, save_model
from mirage.envs import ChainEpisode, ChainSpec, play
from mirage.observation import FEATURE_VERSION
from mirage.train import train

TINY = {
    "dqn": dict(learning_starts=50, target_update_interval=50, batch_size=16),
    "moe-dqn": dict(learning_starts=50, target_update_interval=50, batch_size=16),
    "pg": dict(n_steps=64, batch_size=32, n_epochs=1),
    "transformer-pg": dict(n_steps=64, batch_size=32, n_epochs=1),
}


def params(model) -> np.ndarray:
    return th.cat([p.detach().flatten() for p in model.policy.parameters()]).numpy()


def test_training_is_reproducible_from_a_seed(small_world):
    a, meta = train(small_world, "dqn", 200, seed=3, **TINY["dqn"])
    b, _ = train(small_world, "dqn", 200, seed=3, **TINY["dqn"])
    c, _ = train(small_world, "dqn", 200, seed=4, **TINY["dqn"])
    assert np.array_equal(params(a), params(b))
    assert not np.array_equal(params(a), params(c))
    assert meta["seed"] == 3 and meta["steps"] == 200 and meta["episodes"] >= 1


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["dqn", "moe-dqn", "pg", "transformer-pg"])
def test_every_agent_trains_saves_loads_and_decides(small_world, tmp_path, agent):
    model, meta = train(small_world, agent, 128, seed=0, **TINY[agent])
    path = save_model(model, tmp_path / f"{agent}.zip", agent, meta)
    assert read_meta(path)["feature_version"] == FEATURE_VERSION
    policy = load_policy(str(path))
    t0 = small_world.sample_start("validation", np.random.default_rng(0))
    ep = ChainEpisode(small_world, ChainSpec().resolved(small_world.max_limit), t0)
    out = play(ep, policy)
    assert np.isfinite(out.gap)
    # the loaded model acts like the trained one
    o = ep.observe()
    assert int(model.predict(o, deterministic=True)[0]) == int(
        policy.model.predict(o, deterministic=True)[0]
    )


def test_feature_version_mismatch_is_refused(small_world, tmp_path):
    model, meta = train(small_world, "dqn", 60, seed=0, **TINY["dqn"])
    path = save_model(model, tmp_path / "m.zip", "dqn", meta)
    bad = tmp_path / "old.zip"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == META_NAME:
                data = json.dumps({**json.loads(data), "feature_version": -1}).encode()
            dst.writestr(item, data)
    with pytest.raises(ModelError, match="feature version"):
        load_policy(str(bad))
    with pytest.raises(ModelError, match="no such model"):
        load_policy(str(tmp_path / "missing.zip"))
    (tmp_path / "junk.zip").write_text("not a zip")
    with pytest.raises(ModelError, match="not a Mirage model"):
        load_policy(str(tmp_path / "junk.zip"))


def test_a_model_of_an_older_feature_version_still_runs(small_world, tmp_path):
    """The shipped default (FEATURE_VERSION 4, rows 31 wide) runs on today's observations:
    the queue column and the chain-row columns that version did not have cannot change what
    it decides; today's models read them."""
    from mirage.agents.common.model_io import load_model
    from mirage.observation import CONTEXT_COLUMNS, N_FEATURES, QUEUE_COLUMNS, for_version

    old = load_model(default_model_path())
    assert old.feature_version == 4 < FEATURE_VERSION
    assert old.obs_shape[1] == QUEUE_COLUMNS[4] < N_FEATURES
    obs = np.random.default_rng(0).random((16, old.obs_shape[0], N_FEATURES), dtype=np.float32)
    other = obs.copy()
    other[:, :, QUEUE_COLUMNS[4] :] = 0.0
    other[:, -1, CONTEXT_COLUMNS[4] :] = 0.0
    assert for_version(obs, 4).shape == (16, *old.obs_shape)
    assert np.array_equal(old.score(obs), old.score(other))
    model, meta = train(small_world, "dqn", 60, seed=0, **TINY["dqn"])
    path = save_model(model, tmp_path / "m.zip", "dqn", {**meta, "threshold": 0.0})
    current = load_model(path)  # today's version reads those columns
    assert current.obs_shape[1] == N_FEATURES
    obs = np.random.default_rng(1).random((16, *current.obs_shape), dtype=np.float32)
    other = obs.copy()
    other[:, :, QUEUE_COLUMNS[4] :] = 0.0
    assert not np.array_equal(current.score(obs), current.score(other))


def test_a_model_trained_without_some_queue_features_never_sees_them(small_data, tmp_path):
    from mirage.observation import QUEUE_FEATURES
    from mirage.train import main as train_main
    from mirage.train import train_hindsight

    drop = ["pend_wait_p50", "pend_wait_max"]
    model, meta = train_hindsight("gap-regressor", small_data, small_data, 0, drop_features=drop)
    path = save_model(model, tmp_path / "gr.zip", "gap-regressor", meta)
    assert read_meta(path)["dropped_features"] == drop
    policy = load_policy(str(path))
    obs = small_data.obs(np.arange(40))
    base = policy.score(obs)
    cols = [QUEUE_FEATURES.index(n) for n in drop]
    moved = obs.copy()
    moved[:, :-1, cols] = 7.0  # anything in the dropped columns: the same scores
    np.testing.assert_array_equal(policy.score(moved), base)
    other = obs.copy()
    other[:, :-1, QUEUE_FEATURES.index("pend_units")] += 0.5  # a kept column still counts
    assert not np.array_equal(policy.score(other), base)
    with pytest.raises(ValueError, match="not queue features: pend_age"):
        train_hindsight("gap-regressor", small_data, small_data, 0, drop_features=["pend_age"])
    with pytest.raises(SystemExit):
        train_main(
            [
                "--agent",
                "dqn",
                "--dataset",
                "x.parquet",
                "--validation",
                "y.parquet",
                "--drop-features",
                "nope",
                "--out",
                str(tmp_path / "m.zip"),
            ]
        )


def test_training_without_a_log_directory_leaves_nothing_in_tmp(small_world, tmp_path, monkeypatch):
    """stable-baselines3's default logger makes an empty ``$TMPDIR/SB3-<time>`` per learn."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("SB3_LOGDIR", raising=False)
    train(small_world, "dqn", 60, seed=0, **TINY["dqn"])
    assert [p.name for p in tmp_path.glob("SB3-*")] == []
