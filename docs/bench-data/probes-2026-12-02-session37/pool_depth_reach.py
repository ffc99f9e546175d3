"""Exploratory (session 37): how often the node-pool walk under limits, counting its depth
at each job's turn (the code), starts other jobs than a walk that took its depth from the
holds at the pass's start (the rule before), over test_pools_core's random worlds
(pooled_worlds) or its blocked queues (blocked_queues), 600 per hypothesis seed:
python pool_depth_reach.py pooled_worlds|blocked_queues SEED..."""

import sys
import warnings
from unittest import mock

from hypothesis import HealthCheck, given, seed, settings

from sim.engine import Simulator
from tests.sim import test_pools_core
from tests.sim.pools_model import walk_pools_model

warnings.filterwarnings("ignore")
count = {"walks": 0, "differ": 0}
compiled = Simulator._walk_pools


def both(sim, stop, start_now, n_test=2**62):  # type: ignore[no-untyped-def]
    got = compiled(sim, stop, start_now, n_test)
    if start_now and sim._run_limits:
        order, tested, old_stop = sim.state.order, 0, len(sim.state.order)
        for i, job in enumerate(order):  # the old rule: the holds at the pass's start
            if tested >= sim.cfg.bf_max_job_test:
                old_stop = i
                break
            tested += not sim._bf_passes_over(job)
        count["walks"] += 1
        count["differ"] += walk_pools_model(sim, old_stop, True) != got
    return got


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(getattr(test_pools_core, sys.argv[1])())
def run(world):  # type: ignore[no-untyped-def]
    trace, cfg, limits = world
    try:
        sim = Simulator(trace, cfg, limits=limits)
    except ValueError:
        return
    with mock.patch.object(Simulator, "_walk_pools", both):
        sim.run()


for s in sys.argv[2:]:
    count.update(walks=0, differ=0)
    seed(int(s))(run)()
    print(
        f"seed {s}: walks under limits {count['walks']}, other starts {count['differ']}", flush=True
    )
