"""A model's training support: it waits wherever a feature lies outside the range it took in
training, so that a model on a cluster unlike its own acts as ``reactive`` there."""

from __future__ import annotations

import numpy as np
import pytest

from mirage import dataset as ds
from mirage.agents import default_model_path, load_policy
from mirage.agents.common.model_io import ModelError, load_model, read_meta, save_model, write_meta
from mirage.agents.common.support import (
    CHECKED,
    WIDEN,
    Support,
    covered_rows,
    feature_names,
)
from mirage.envs import ChainEpisode, ChainSpec, ChainWorld, play
from mirage.observation import FEATURE_VERSION, C
from mirage.support import main


@pytest.fixture(scope="module")
def model_path(small_data, tmp_path_factory):
    from mirage.train import train_hindsight

    model, meta = train_hindsight("gap-regressor", small_data, small_data, seed=0)
    return save_model(model, tmp_path_factory.mktemp("m") / "gr.zip", "gap-regressor", meta)


def test_bounds_are_the_training_range_widened():
    names = feature_names(FEATURE_VERSION)
    rows = np.zeros((3, len(names)))
    rows[:, 0] = [0.0, 1.0, 0.5]  # a range of 1: widened by WIDEN on each side
    rows[:, 1] = 0.25  # constant in training: only float noise allowed
    s = Support.fit(rows, FEATURE_VERSION)
    assert s.lo[0] == pytest.approx(-WIDEN, abs=1e-5) and s.hi[0] == pytest.approx(1 + WIDEN)
    assert s.lo[1] == pytest.approx(0.25, abs=1e-5) and s.hi[1] == pytest.approx(0.25, abs=1e-5)
    assert [n for n, g in zip(names, s.gates) if g] == list(CHECKED)
    with pytest.raises(ValueError, match="do not fit"):
        Support.fit(rows[:, 1:], FEATURE_VERSION)
    again = Support.from_meta(s.to_meta())
    assert again is not None
    np.testing.assert_array_equal(again.lo, s.lo)
    np.testing.assert_array_equal(again.hi, s.hi)


def test_a_trained_model_waits_outside_its_support_and_only_there(small_data, model_path):
    policy = load_model(model_path)
    assert policy.support is not None  # mirage train stores it
    obs = small_data.obs()
    assert policy.inside(obs).all()  # its own training data lies inside
    fire = policy.fires(obs)
    assert fire.any()
    k = int(np.flatnonzero(fire)[0])
    odd = obs[k : k + 1].copy()
    odd[0, -1, C["succ_units"]] = 1.0  # a successor as wide as the whole cluster
    assert not policy.fires(odd)[0]
    assert policy.support.explain(odd[0]) == ["context:succ_units"]
    busy = obs[k : k + 1].copy()
    busy[0, -2, :] = 9.0  # a queue beyond anything in training: clipped, not gated
    assert policy.inside(busy)[0] and "queue:pend_count" in policy.support.explain(busy[0], True)
    assert covered_rows(odd, FEATURE_VERSION).shape == (1, len(feature_names(FEATURE_VERSION)))
    # without the support the same model submits there
    meta = read_meta(model_path)
    meta.pop("support")
    bare = write_meta(model_path, meta, model_path.with_name("bare.zip"))
    assert load_model(bare).fires(odd)[0]


def test_a_bad_support_is_refused_with_the_file_named(model_path, tmp_path):
    meta = read_meta(model_path)
    meta["support"]["features"] = meta["support"]["features"][:-1]
    bad = write_meta(model_path, meta, tmp_path / "bad.zip")
    with pytest.raises(ModelError, match="bad.zip: bad training support"):
        load_model(bad)


def test_mirage_support_adds_it_to_an_older_model(small_data, model_path, tmp_path, capsys):
    meta = read_meta(model_path)
    want = meta.pop("support")
    old = write_meta(model_path, meta, tmp_path / "old.zip")
    train = ds.save(small_data, tmp_path / "train.parquet")
    assert main([str(old), "--data", str(train)]) == 0
    assert "support of" in capsys.readouterr().out
    got = read_meta(old)
    assert got["support"] == want and got["support_data"]["split"] == "train"
    with pytest.raises(SystemExit, match="mirage support: .*missing.parquet"):
        main([str(old), "--data", str(tmp_path / "missing.parquet")])


def test_an_ensemble_keeps_the_union_of_its_members_supports(small_data, model_path, tmp_path):
    from mirage.ensemble import build_ensemble

    meta = read_meta(model_path)
    narrow = Support.from_meta(meta["support"])
    assert narrow is not None
    wide = Support(narrow.version, narrow.lo - 1.0, narrow.hi + 1.0)
    meta["support"] = wide.to_meta()
    other = write_meta(model_path, meta, tmp_path / "other.zip")
    ens = build_ensemble([model_path, other], small_data, tmp_path / "ens.zip")
    np.testing.assert_array_equal(Support.from_meta(ens["support"]).lo, wide.lo)


def test_the_ls6_default_acts_as_reactive_on_a_cluster_unlike_ls6(trace_path, tmp_path):
    """Lublin's model workload has 256 nodes: a one-node chain is 1/256 of it, narrower than
    any chain the LS6 default was trained on, so every decision lies outside its support and
    the default's gaps are ``reactive``'s (before the support it submitted a limit early)."""
    from sim.traces.read import read_trace

    trace = read_trace(trace_path("lublin_256.swf"))
    world = ChainWorld(trace.window(0, float(np.quantile(trace.submit, 0.3))))
    default, reactive = load_policy("default"), load_policy("reactive")
    assert default.support is not None
    meta = read_meta(default_model_path())
    meta.pop("support")
    bare = load_model(write_meta(default_model_path(), meta, tmp_path / "bare.zip"))
    chain = ChainSpec().resolved(world.max_limit)
    rng = np.random.default_rng(0)
    unchecked, gaps = [], []
    for t0 in sorted(world.sample_start("validation", rng) for _ in range(2)):
        ep = ChainEpisode(world, chain, t0)  # one episode at a time: they share the world
        assert "context:succ_units" in default.support.explain(ep.observe())
        gap = play(ep, default).gap
        assert gap == play(ChainEpisode(world, chain, t0), reactive).gap
        unchecked.append(play(ChainEpisode(world, chain, t0), bare).gap)
        gaps.append(gap)
    assert unchecked != gaps  # unchecked, it submits before the end where reactive would not


def test_the_ls6_default_is_inside_its_support_on_ls6(small_world):
    default = load_policy("default")
    chain = ChainSpec().resolved(small_world.max_limit)
    rng = np.random.default_rng(3)
    obs = [ChainEpisode(small_world, chain, small_world.sample_start("train", rng)).observe()]
    assert default.support.inside(np.stack(obs)).all()
