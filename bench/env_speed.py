"""Decision steps per second of ``mirage/Chain-v0`` on one core, against raw simulator stepping.

The env runs whole episodes (resets included) with the reactive policy (always wait, the
longest episodes) at the default 600 s decision interval; the baseline advances the same
simulator by 600 s per step from the same checkpoints, with no snapshot, observation or
episode logic. Usage::

    .venv/bin/python bench/env_speed.py [--trace ../shared/traces/ls6-a100.log]
        [--total-units 72] [--split validation] [--episodes 30] [--profile]

``--profile``: the world replays in the trace's stored site profile (``hpcsim fit``; for LS6:
fair share, per-user limits, an availability timeline and outages), as ``mirage study``,
``backtest`` and ``retrain`` do by default, at the profile's size.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mirage.envs import ChainEnv, ChainWorld  # noqa: E402
from mirage.envs.twin import site_twin  # noqa: E402
from sim.traces.read import read_trace  # noqa: E402

DEFAULT_TRACE = ROOT.parent / "shared" / "traces" / "ls6-a100.log"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trace", default=str(DEFAULT_TRACE))
    p.add_argument("--total-units", type=int, default=72)
    p.add_argument("--split", default="validation")
    p.add_argument("--episodes", type=int, default=30)
    p.add_argument("--profile", action="store_true", help="the trace's stored site profile")
    args = p.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    t = time.perf_counter()
    trace = read_trace(args.trace)
    if args.profile:
        twin = site_twin(trace)
        if twin.profile is None:
            raise SystemExit(f"{args.trace}: no stored site profile ({twin.why_not})")
        world = ChainWorld(
            trace,
            total_units=twin.units(args.total_units),
            make_simulator=twin.make_simulator,
            progress=True,
        )
        print(twin.describe(world.total_units, trace.unit), flush=True)
    else:
        world = ChainWorld(trace, total_units=args.total_units, progress=True)
    print(
        f"world prepared in {time.perf_counter() - t:.1f} s ({len(world.checkpoints)} checkpoints)",
        flush=True,
    )
    env = ChainEnv(world, args.split)
    rng = np.random.default_rng(0)
    starts = [world.sample_start(args.split, rng) for _ in range(args.episodes)]

    steps, t, c = 0, time.perf_counter(), time.process_time()
    for i, t0 in enumerate(starts):
        env.reset(options={"t0": t0})
        done = False
        while not done:
            _, _, done, _, _ = env.step(0)
            steps += 1
        print(f"\renv episodes {i + 1}/{len(starts)}", end="", flush=True)
    env_time = time.perf_counter() - t
    env_cpu = time.process_time() - c
    env_rate = steps / env_time
    print(
        f"\nenv: {steps} decision steps in {env_time:.2f} s wall ({env_cpu:.2f} s CPU) "
        f"= {env_rate:.0f} steps/s wall, {steps / env_cpu:.0f} per CPU-second"
    )

    sim = world.sim
    per_episode = max(steps // len(starts), 1)
    raw_steps, raw_time, raw_cpu = 0, 0.0, 0.0
    for t0 in starts:
        world.restore(world.checkpoint_before(t0))
        sim.advance(t0)
        t, c = time.perf_counter(), time.process_time()
        now = t0
        for _ in range(per_episode):
            now += 600.0
            sim.advance(now)
        raw_time += time.perf_counter() - t
        raw_cpu += time.process_time() - c
        raw_steps += per_episode
    raw_rate = raw_steps / raw_time
    print(
        f"raw simulator: {raw_steps} advances of 600 s in {raw_time:.2f} s wall "
        f"({raw_cpu:.2f} s CPU) = {raw_rate:.0f} steps/s wall, "
        f"{raw_steps / raw_cpu:.0f} per CPU-second"
    )
    cpu_rate = steps / env_cpu
    print(
        f"RESULT env_steps_per_s={env_rate:.0f} env_steps_per_cpu_s={cpu_rate:.0f} "
        f"raw_sim_steps_per_s={raw_rate:.0f} raw_sim_steps_per_cpu_s={raw_steps / raw_cpu:.0f} "
        f"ratio={env_cpu and (steps / env_cpu) / (raw_steps / raw_cpu):.3f} "
        f"target_steps_per_cpu_s=5000 meets_target_per_cpu_s={cpu_rate >= 5000} "
        f"split={args.split} episodes={len(starts)} profile={bool(args.profile)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
