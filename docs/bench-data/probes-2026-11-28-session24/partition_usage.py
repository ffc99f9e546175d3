"""Per-partition recorded usage of a log: jobs, mean wait, peak and mean units in use."""
import sys
import numpy as np
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3]))
from sim.traces import read_trace
from sim.profile import partition_names

t = read_trace(sys.argv[1])
names = partition_names(t)
rec = t.recorded_start - t.submit
ok = np.isfinite(rec)
span = np.nanmax(t.recorded_start + t.runtime) - np.nanmin(t.recorded_start)
def usage(mask):
    s = t.recorded_start[mask]; e = s + np.maximum(t.runtime[mask], 0); u = t.units[mask].astype(np.int64)
    ev = np.concatenate([s, e]); d = np.concatenate([u, -u])
    o = np.lexsort((d, ev)); c = np.cumsum(d[o])
    return c.max(), float((u * (e - s)).sum()) / span
print("stated", t.total_units, "span d", span / 86400)
for p in sorted(set(names.tolist()), key=lambda p: -(names == p).sum()):
    m = ok & (names == p)
    if m.sum() < 100: continue
    pk, mean = usage(m)
    print(f"{p:>12} jobs {m.sum():7d} wait {np.mean(rec[m])/3600:6.2f} h  units med {np.median(t.units[m]):5.0f} peak {pk:6.0f} mean {mean:7.1f} limit med {np.median(t.limit[m])/3600:5.1f} h")
pk, mean = usage(ok); print("all peak", pk, "mean", mean)
