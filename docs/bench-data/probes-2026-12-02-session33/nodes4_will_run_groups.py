"""The three 4-node saved runs with Slurm's will-run groups taken away (window 0: each
running job freed on its own), against the shipped replay (exploratory; the runs are seen).

On a CPU-counted cluster of several nodes, Slurm's ``_will_run_test`` groups only the
running jobs on the nodes the job could use (``overlap == 0: skip it``); the replay counts
units and groups every running job. On seed 13 at t = 140, Slurm reserved vm-[1-3] for f26
from f9's end (t = 180) and backfilled f12 beside chain2 on vm-4.

    PYTHONPATH=. .venv/bin/python docs/bench-data/probes-2026-12-02-session33/nodes4_will_run_groups.py \
        docs/bench-data/sim_fidelity_real_nodes4_*.json
"""

import sys

sys.path.insert(0, "bench")
import sim.engine as engine  # noqa: E402

engine.WILL_RUN_WINDOW = 0.0
import sim_fidelity  # noqa: E402

sys.argv = ["sim_fidelity.py", "--load", *sys.argv[1:]]
sys.exit(sim_fidelity.main())
