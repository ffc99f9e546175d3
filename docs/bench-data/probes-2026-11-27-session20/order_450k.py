"""bench/sim_speed.py's 450k recorded workload: the start order's inference, its time and
what it says (ARGV[1]: the checkout to import)."""
import sys, time
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, "/work/main/bench")
from dataclasses import replace
import numpy as np
from sim.generate import generate
from sim.config import SlurmConfig
from sim.engine import Simulator
from sim.fit import simulated_waits
from sim.log_inference import infer_limits
from sim.start_order import infer_order
from sim_speed import MULTIFACTOR_CONF
tr = generate(450_000, 8192, seed=1, load=0.85)
sim = Simulator(tr, SlurmConfig.from_text(MULTIFACTOR_CONF, "mf"), total_units=8192)
tr = replace(tr, recorded_start=tr.submit + simulated_waits(sim, len(tr)))
t0 = time.process_time()
lim = infer_limits(tr, np.isfinite(tr.recorded_start))
o = infer_order(tr, 8192, lim)
print(f"{time.process_time() - t0:.1f} CPU-s:", o.describe() if o else None)
