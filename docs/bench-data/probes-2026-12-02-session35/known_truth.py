"""Held-out fidelity of fitted profiles on logs the simulator recorded under known settings.

Kinds (each a loaded log of 8 users, recorded by the simulator itself):
- ``outages``: no limits, two maintenance windows (tests/sim/test_outages.py's log);
- ``limits``: MaxJobsPerUser=3 MaxTRESPerUser=node=8 for everyone (tests/sim/test_profile.py);
- ``own``: the same limits, but user 7 under their own (6 jobs, 20 nodes).

    # make the logs once (with the code that has QosLimits.user_limits), as pickles:
    PYTHONPATH=. python known_truth.py own 7,8 --make DIR
    # fit each on its first two thirds and judge the last third, in the tree to measure:
    PYTHONPATH=. python known_truth.py own 7,8 --load DIR

Prints one line per log: held-out Spearman, KS, mean simulated / recorded, the fitted limits.
"""

import pickle
import sys

from sim.fidelity import fidelity
from sim.fit import fit, replay_waits, split
from sim.limits import QosLimits
from tests.sim.test_outages import recorded as outage_log
from tests.sim.test_profile import recorded_log

kind, seeds, mode, folder = sys.argv[1], [int(s) for s in sys.argv[2].split(",")], *sys.argv[3:5]
for s in seeds:
    path = f"{folder}/{kind}-{s}.pkl"
    if mode == "--load":
        with open(path, "rb") as fh:
            trace = pickle.load(fh)
    elif kind == "outages":
        trace = outage_log(seed=s)
    elif kind == "limits":
        limits = QosLimits(max_jobs_per_user=3, max_nodes_per_user=8)
        trace = recorded_log(limits, total=32, seed=s, n=1500)
    else:
        own = ((7, 6, 20, None),)
        limits = QosLimits(max_jobs_per_user=3, max_nodes_per_user=8, user_limits=own)
        trace = recorded_log(limits, total=64, seed=s)
    if mode == "--make":
        with open(path, "wb") as fh:
            pickle.dump(trace, fh)
        continue
    prof = fit(trace)
    _, held, _ = split(trace)
    rec = trace.recorded_start - trace.submit
    f = fidelity(replay_waits(trace, prof)[held], rec[held])
    own_limits = getattr(prof, "user_limits", getattr(prof, "exempt_users", None))
    print(
        kind, s, f"spearman {f.spearman:.3f} ks {f.ks:.3f}",
        f"mean {f.sim_mean_h:.2f}/{f.rec_mean_h:.2f}", prof.limits or "none", own_limits,
        flush=True,
    )  # fmt: skip
