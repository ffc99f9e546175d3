"""mirage/Chain-v0 and chain episodes on the real simulator and a real trace slice."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from mirage.agents import load_policy
from mirage.agents.common.policy import Decision
from mirage.envs import ENV_ID, ChainEnv, ChainEpisode, play


@pytest.fixture
def env(small_world):
    return ChainEnv(small_world, "train")


def rollout(env, seed, actions):
    obs, _ = env.reset(seed=seed)
    first = obs.copy()
    for i in range(10_000):
        obs, reward, done, trunc, info = env.step(actions(i))
        if done:
            return first, reward, info, i + 1
    raise AssertionError("episode did not end")


def test_gymnasium_and_sb3_env_checkers(small_world):
    from gymnasium.utils.env_checker import check_env as gym_check
    from stable_baselines3.common.env_checker import check_env as sb3_check

    gym_check(ChainEnv(small_world, "train"), skip_render_check=True)
    sb3_check(ChainEnv(small_world, "validation"), warn=True)


def test_registered_id(small_world):
    env = gym.make(ENV_ID, trace=small_world, split="validation")
    obs, _ = env.reset(seed=1)
    assert obs.shape == small_world.new_builder().shape


def test_seeded_episodes_repeat(env):
    a = rollout(env, 5, lambda i: int(i == 30))
    b = rollout(env, 5, lambda i: int(i == 30))
    c = rollout(env, 6, lambda i: int(i == 30))
    assert np.array_equal(a[0], b[0]) and a[1:] == b[1:]
    assert a[2]["t0"] != c[2]["t0"]


def test_never_submitting_is_reactive(env, small_world):
    _, reward, info, steps = rollout(env, 3, lambda i: 0)
    assert info["forced"] and info["gap"] >= 0
    assert reward == pytest.approx(-info["interruption_hours"])
    # the same start played by the reactive baseline gives the same gap
    out = play(ChainEpisode(small_world, env.chain, info["t0"]), load_policy("reactive"))
    assert out.gap == pytest.approx(info["gap"])
    assert steps == out.decisions


def test_early_submit_overlaps_and_is_weighted(small_world):
    env = ChainEnv(small_world, "train", overlap_weight=2.0, reward_scale=0.5)
    _, reward, info, _ = rollout(env, 3, lambda i: 1)  # submit at the first decision
    assert info["gap"] < 0 and not info["forced"]
    assert reward == pytest.approx(-2.0 * info["overlap_node_hours"] * 0.5)


def test_what_if_matches_playing_it(small_world, env):
    env.reset(seed=11)
    t0 = env.episode.t0
    ep = ChainEpisode(small_world, env.chain, t0)
    predicted = {k: ep.what_if(k) for k in (0, 40, 10_000)}
    for k, gap in predicted.items():
        again = ChainEpisode(small_world, env.chain, t0)
        while again.outcome is None:
            again.step(Decision.SUBMIT if again.decisions == k else Decision.WAIT)
        assert again.outcome.gap == pytest.approx(gap), k


def test_oracle_is_a_lower_bound(small_world):
    rng = np.random.default_rng(0)
    chain = ChainEnv(small_world, "validation").chain
    for _ in range(3):
        t0 = small_world.sample_start("validation", rng)
        costs = {
            name: play(ChainEpisode(small_world, chain, t0), load_policy(name)).cost()
            for name in ("reactive", "average", "oracle", "dependency")
        }
        assert costs["oracle"] <= min(costs["reactive"], costs["average"]) + 1e-9
        dep = play(ChainEpisode(small_world, chain, t0), load_policy("dependency"))
        assert dep.gap >= 0  # afterany: never before the predecessor ends


def test_start_estimate_uses_the_simulator(small_world):
    rng = np.random.default_rng(1)
    chain = ChainEnv(small_world, "validation").chain
    t0 = small_world.sample_start("validation", rng)
    ep = ChainEpisode(small_world, chain, t0)
    est = ep.estimate_start()
    assert est is None or est >= ep.now
    out = play(ep, load_policy("start-estimate"))
    assert out.pred_end == pytest.approx(out.pred_start + chain.runtime)


def test_several_worlds_are_sampled(small_world, ls6_trace, small_splits):
    from mirage.envs import ChainWorld

    other = ChainWorld(ls6_trace, total_units=80, splits=small_splits)
    env = ChainEnv([small_world, other], "train")
    seen = set()
    for seed in range(8):
        env.reset(seed=seed)
        seen.add(env.world.total_units)
    assert seen == {72, 80}


def test_cluster_size_and_limit_defaults(ls6_trace, trace_path):
    from dataclasses import replace

    from mirage.envs.world import estimate_total_units, max_limit_of
    from sim.calibration import stored_units
    from sim.traces.read import read_trace

    assert estimate_total_units(ls6_trace) == stored_units(ls6_trace) == 74
    assert max_limit_of(ls6_trace) == 48 * 3600  # a single 120 h exception is set aside
    anonymous = replace(ls6_trace, source="", total_units=None, digest="")
    peak = estimate_total_units(anonymous)  # peak use of the recorded schedule
    assert int(ls6_trace.units.max()) <= peak < 200
    # a log without a header (sacct, jobcomp) takes its largest job as its size: the recorded
    # schedule ran on more, and the world is never smaller than that
    headless = replace(anonymous, total_units=int(ls6_trace.units.max()))
    assert int(ls6_trace.units.max()) < peak == estimate_total_units(headless)
    assert estimate_total_units(read_trace(trace_path("hpc2n-excerpt.swf"))) == 240


def test_default_splits_hold_out_every_fifth_day(ls6_trace):
    from mirage.envs.world import VALIDATION_EVERY, split_ranges

    s = split_ranges(
        ls6_trace, {"train": ("2022-12-01", "2022-12-31"), "test": ("2023-01-05", "2023-01-12")}
    )

    def days(iv):
        epoch = ls6_trace.start_epoch
        return {int((t + epoch) // 86400) for a, b in iv for t in np.arange(a, b, 3600)}

    train, val = days(s["train"]), days(s["validation"])
    assert train and val and not train & val
    assert all(d % VALIDATION_EVERY == VALIDATION_EVERY - 1 for d in val)
    assert len(train | val) == 30 and len(val) == 6
    assert s["test"][0][0] > s["train"][-1][1]


def _probe(ep: ChainEpisode) -> float | None:
    """The start estimate as the env computed it before ``Simulator.estimate_start_for``: a
    probe job submitted, estimated and taken back by a snapshot and restore."""
    from hpcbase.jobs import JobState

    sim = ep.sim
    saved = sim.snapshot()
    try:
        jid = sim.submit(ep._succ_spec())
        view = sim.job(jid)
        if view.state != JobState.PENDING:
            return float(view.start)
        est = sim.estimate_start(jid)
        return None if est is None else float(est)
    finally:
        sim.restore(saved)


def test_start_estimate_equals_the_probe_at_every_decision(small_world):
    # Mirage's models read the estimate as a feature: it must be the probe's, exactly, at
    # every decision of episodes of several chain sizes in both splits (>= 300 points), and
    # leave the simulator as it was.
    from mirage.envs.world import ChainSpec

    rng = np.random.default_rng(7)
    points = 0
    for k in range(8):
        units = int(rng.choice([1, 2, 4, 8, 16]))
        spec = ChainSpec(units=units, runtime_fraction=float(rng.uniform(0.05, 0.6)))
        t0 = small_world.sample_start("train" if k % 2 else "validation", rng)
        ep = ChainEpisode(small_world, spec.resolved(small_world.max_limit), t0)
        sim = ep.sim
        while not ep.done:
            before = sim.snapshot(), len(sim.records)
            got = ep.estimate_start()
            assert (sim.snapshot(), len(sim.records)) == before
            want = _probe(ep)
            assert got == want, (t0, ep.now, got, want)
            points += 1
            ep.step(Decision.WAIT)
    assert points >= 300, points
    print(f"{points} decision points")


def test_env_outputs_equal_those_of_the_probe(small_world, monkeypatch):
    # The env's observations, rewards and outcomes with estimate_start_for are those of the
    # snapshot/submit/estimate/restore probe, step for step.
    def run() -> list:
        env = ChainEnv(small_world, "validation")
        out = []
        for seed in range(3):
            obs, _ = env.reset(seed=seed)
            out.append(obs)
            done, i = False, 0
            while not done:
                obs, reward, done, _, info = env.step(int(i == 40 * seed + 20))
                out += [obs, reward]
                i += 1
            out.append(sorted(info.items()))
        return out

    fast = run()
    monkeypatch.setattr(ChainEpisode, "estimate_start", _probe)
    slow = run()
    assert len(fast) == len(slow)
    for a, b in zip(fast, slow, strict=True):
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b
