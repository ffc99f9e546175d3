"""Flag-free-like world (FIFO, 6-h window, inferred per-user limits) on one pool, and on pools of the
partitions holding >=1 % of the jobs (the rest nested in the one they fit, else the largest); whole log."""
import sys, time
from dataclasses import replace
import numpy as np
import tqdm
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3]))
from sim.traces import read_trace
from sim.fit import starting_profile, replay_waits
from sim.fidelity import fidelity
from sim.log_inference import infer_limits, log_partitions, nested_pools, partition_pools, MIN_PARTITION_SHARE
from sim.profile import partition_names
from sim.availability import recorded_usage

path = sys.argv[1]
window = float(sys.argv[2]) * 3600 if len(sys.argv) > 2 else 6 * 3600.0
t = read_trace(path)
rec = t.recorded_start - t.submit
known = np.isfinite(rec)
use = recorded_usage(t)
total = max(t.total_units or 0, use.peak)
lim = infer_limits(t, known)
base = replace(starting_profile(t, 1.0), units=total, recorded_peak=use.peak, window_s=window,
               limits=lim.to_text() if lim else "", larger_jobs_exempt=bool(lim))
names = partition_names(t)
parts = log_partitions(t)
own = partition_pools(t)
major = {p: u for p, u in own.items() if (names == p).sum() >= MIN_PARTITION_SHARE * len(t)}
print("major", major, "sum", sum(major.values()), "total", total)
nested = {}
for p, u in own.items():
    if p in major:
        continue
    fits = [b for b in sorted(major, key=major.get, reverse=True)
            if recorded_usage(t.select((names == p) | (names == b))).peak <= major[b]]
    nested[p] = fits[0] if fits else max(major, key=major.get)
print("nested", nested)
# minor partitions' jobs named as the major partition they fit in: three pools, no nesting
mapped = [nested.get(p or "", p) for p in t.partitions]
t = replace(t, partitions=mapped)
names = partition_names(t)
print("partitions now", sorted(set(names.tolist())))
n = int(sys.argv[3]) if len(sys.argv) > 3 else len(t)
if n < len(t):  # the first n jobs only
    t = t.select(np.arange(len(t)) < n)
    rec = t.recorded_start - t.submit
    known = np.isfinite(rec)
    names = partition_names(t)
    base = replace(base, units=total)
print("jobs", len(t))
worlds = {"one pool": base, "pools": replace(base, pools=dict(major))}
for name, prof in worlds.items():
    t0 = time.time()
    try:
        w = replay_waits(t, prof)
    except Exception as e:
        print(name, "failed:", repr(e)); continue
    f = fidelity(w[known], rec[known])
    print(f"{path.split('/')[-1]} {name}: mean {f.sim_mean_h:.2f}/{f.rec_mean_h:.2f} h x{f.sim_mean_h/f.rec_mean_h:.2f} "
          f"KS {f.ks:.3f} Sp {f.spearman:.3f} ({time.time()-t0:.0f} s)", flush=True)
    for p in list(major)[:4]:
        m = known & (names == p)
        print(f"   partition {p}: {np.nanmean(w[m])/3600:.2f} / {np.mean(rec[m])/3600:.2f} h")
