"""Seed ensembles: one model file from several seeds, scored as the mean of their scaled
scores, with its own tuned rule; loaded, evaluated offline and played like any model."""

from __future__ import annotations

import numpy as np
import pytest

from mirage import dataset as ds
from mirage.agents.common.hindsight import first_fire_gaps
from mirage.agents.common.model_io import ModelError, load_model, read_meta, save_model
from mirage.ensemble import build_ensemble, main, scale_of
from mirage.envs import ChainEpisode, ChainSpec, play
from mirage.eval import offline


@pytest.fixture(scope="module")
def members(small_data, tmp_path_factory):
    from mirage.train import train_hindsight

    folder = tmp_path_factory.mktemp("members")
    paths = []
    for seed in (0, 1, 2):
        model, meta = train_hindsight("gap-regressor", small_data, small_data, seed=seed)
        paths.append(save_model(model, folder / f"gr-s{seed}.zip", "gap-regressor", meta))
    return paths


def test_scale_is_the_median_and_the_10_90_range():
    assert scale_of(np.arange(101.0)) == (50.0, 80.0)
    assert scale_of(np.full(5, 3.0)) == (3.0, 1.0)  # flat scores: no division by zero


def test_ensemble_scores_the_mean_of_its_scaled_members(small_data, members, tmp_path):
    out = tmp_path / "ens.zip"
    meta = build_ensemble(members, small_data, out)
    ens = load_model(out)
    assert read_meta(out)["ensemble"]["members"] == [p.name for p in members]
    obs = small_data.obs(np.arange(min(len(small_data), 64)))
    want = np.mean(
        [
            (load_model(p).score(obs) - m) / k
            for p, (m, k) in zip(members, meta["ensemble"]["scales"])
        ],
        axis=0,
    )
    np.testing.assert_allclose(ens.score(obs), want, rtol=1e-5, atol=1e-6)
    # its rule was tuned on the data: the offline outcome is the one recorded
    gaps, _ = offline.rule_gaps(small_data, out)
    assert np.abs(gaps).mean() / 3600 == pytest.approx(meta["validation"]["abs_gap"])
    assert np.array_equal(gaps, first_fire_gaps(small_data, ens.fires(small_data.obs())))


def test_an_ensemble_plays_a_chain_like_its_offline_outcome(
    small_world, small_data, members, tmp_path
):
    out = tmp_path / "ens.zip"
    build_ensemble(members, small_data, out)
    policy = load_model(out)
    e = 0
    t0 = float(small_data.ep_t0[e])
    chain = ChainSpec(units=int(small_data.ep_units[e])).resolved(small_world.max_limit)
    played = play(ChainEpisode(small_world, chain, t0, decision_interval=3600.0), policy)
    a, b = small_data.ep_first[e], small_data.ep_first[e + 1]
    assert played.gap == first_fire_gaps(small_data, policy.fires(small_data.obs()))[e], (a, b)


def test_bad_ensembles_are_refused(small_data, members, tmp_path, capsys):
    with pytest.raises(ModelError, match="at least two"):
        build_ensemble(members[:1], small_data, tmp_path / "x.zip")
    with pytest.raises(ModelError, match="differ"):
        build_ensemble([members[0], members[0]], small_data, tmp_path / "x.zip")
    out = tmp_path / "ens.zip"
    assert (
        main(
            [str(p) for p in members]
            + ["--validation", str(_save(small_data, tmp_path)), "--out", str(out)]
        )
        == 0
    )
    assert "gap-regressor x 3" in capsys.readouterr().out and out.exists()


def _save(small_data, folder):
    path = folder / "v.parquet"
    ds.save(small_data, path)
    return path
