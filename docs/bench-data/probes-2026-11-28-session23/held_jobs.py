"""Jobs that could have run to their limit in the nodes the record left idle, at some moment
of their recorded wait: per log, their count, their share of all wait."""
import sys, numpy as np
sys.path.insert(0, "/work/main")
from sim.traces import read_trace
from sim.availability import recorded_usage
BIN = 300.0
WINDOW = float(sys.argv[1]) * 3600
def held(path, total=None):
    t = read_trace(path)
    use = recorded_usage(t)
    total = total or max(t.total_units or 0, use.peak)
    t0 = np.floor(use.times[0] / BIN) * BIN
    n = int(np.ceil((use.times[-1] - t0) / BIN)) + 2
    busy = use.binned_max(t0, BIN, n)
    from sim.availability import fitted
    av = fitted(use, total, window=WINDOW)
    edges = t0 + BIN * np.arange(n)
    at = np.searchsorted(np.asarray(av.times), edges, side="right") - 1
    cap = np.where(at >= 0, np.asarray(av.units)[np.maximum(at, 0)], total)
    idle = cap - busy
    # sparse table for range min
    lg = [idle]
    k = 1
    while (1 << k) <= n:
        prev = lg[-1]; h = 1 << (k - 1)
        lg.append(np.minimum(prev[:-h], prev[h:])); k += 1
    def rmin(a, L):  # min of idle[a:a+L] for arrays a, scalar L>=1
        if L >= len(lg[0]):
            return np.full(a.shape, -1, dtype=np.int64)
        j = int(np.floor(np.log2(L)))
        x = lg[j]
        b = a + L - (1 << j)
        ok = b < len(x)
        out = np.full(a.shape, -1, dtype=np.int64)
        out[ok] = np.minimum(x[a[ok]], x[b[ok]])
        return out
    w = t.recorded_start - t.submit
    cand = np.flatnonzero(np.isfinite(w) & (w > 2 * BIN))
    hit = np.zeros(len(t), bool)
    for i in cand:
        a0 = int(np.ceil((t.submit[i] - t0) / BIN)); a1 = int(np.floor((t.recorded_start[i] - t0) / BIN)) - 1
        if a1 <= a0: continue
        L = max(1, int(np.ceil(t.limit[i] / BIN)) + 1)
        m = rmin(np.arange(a0, a1), L)
        # the job itself is not in busy before its start; idle >= units through its whole limit
        if (m >= t.units[i]).any(): hit[i] = True
    print(f"{path.split('/')[-1]}: {hit.sum()} of {len(t)} jobs ({hit.mean():.1%}) could have run to their limit in idle nodes while waiting; "
          f"their share of all recorded wait {np.nansum(w[hit]) / np.nansum(w):.0%}; their mean wait {np.nanmean(w[hit])/3600 if hit.any() else 0:.1f} h")
    return hit
if __name__ == "__main__":
    for p in sys.argv[2:]:
        held(p)
