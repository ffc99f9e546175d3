"""bench/sim_twin.py on LS6 with the fit's depths floored at what the fit part's start
order allows (>= 27: Slurm's default, 100, 50, 30); fitted with 2 processes."""
import functools
import sys

sys.path.insert(0, "/work/main")
import bench.sim_twin as twin  # noqa: E402
import sim.fit  # noqa: E402

sim.fit.BACKFILL_DEPTHS = (None, 100, 50, 30)
twin.fit = functools.partial(sim.fit.fit, workers=2)
sys.exit(twin.main(["/work/shared/traces/ls6-a100.log"]))
