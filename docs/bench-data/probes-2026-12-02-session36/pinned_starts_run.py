"""Exploratory (session 36): for each wall or soft cap the fit would try on a log's first two
thirds, the share of the jobs that waited over 10 min which started within 60 s of the end of
one of their user's own jobs while that user held the wall (pinned_starts.py).

    PYTHONPATH=. python pinned_starts_run.py LOG_OR_PICKLE...
"""
import pickle, sys, time
import numpy as np
sys.path.insert(0, __file__.rsplit("/", 1)[0])
from pinned_starts import pinned  # noqa: E402
from sim.fit import split
from sim.log_inference import infer_limits, limit_candidates, cluster_size
from sim.traces.read import read_trace

for path in sys.argv[1:]:
    t1 = time.time()
    tr = pickle.load(open(path, "rb")) if path.endswith(".pkl") else read_trace(path)
    fit_mask, held, cut = split(tr)
    m = tr.submit < cut
    units, _ = cluster_size(tr)
    wait = tr.recorded_start - tr.submit
    waited = m & (wait > 600)
    cands = limit_candidates(tr, m, units)
    line = [path.split("/")[-1][:28], f"waited {waited.sum()}"]
    seen = set()
    for c in cands:
        for kind, W in (("jobs", c.max_jobs_per_user), ("nodes", c.max_nodes_per_user)):
            if W is None or (kind, W) in seen: continue
            seen.add((kind, W))
            p = pinned(tr, W, kind)
            line.append(f"{kind}={W}: {(p&waited).sum()} ({(p&waited).sum()/max(1,waited.sum()):.3f})")
    print(" | ".join(line), f"[{time.time()-t1:.0f}s]", flush=True)
