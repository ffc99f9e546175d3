"""LS6: the start order in the record and in the shipped profile's replay, by third."""
import sys
sys.path.insert(0, "/work/main")
from dataclasses import replace
import numpy as np
from sim.traces import read_trace
from sim.profile import load
from sim.fit import replay_waits, split
from sim.limits import QosLimits
from sim.start_order import start_ranks

t = read_trace("/work/shared/traces/ls6-a100.log")
prof = load(t)
print(prof.describe())
w = replay_waits(t, prof)
sim = replace(t, recorded_start=t.submit + w)
lim = prof.qos()
_, _, cut = split(t)
for name, tr in (("record", t), ("replay", sim)):
    ranks, q = start_ranks(tr, prof.units, lim, sample=20000)
    # start times of the sampled starts with a queue: recompute the same sample to split by time
    r = ranks[prof.priority]
    st = np.sort(tr.recorded_start[np.isfinite(tr.recorded_start)])
    print(name, "starts ranked", r.size)
    n = r.size
    for k, (a, b) in enumerate([(0, n // 3), (n // 3, 2 * n // 3), (2 * n // 3, n)]):
        rr, qq = r[a:b], q[a:b]
        print(f"  part {k}: queue median {np.median(qq):.0f} p90 {np.percentile(qq, 90):.0f} | rank 0: {np.mean(rr == 0):.2f}, p50 {np.percentile(rr, 50):.0f} p90 {np.percentile(rr, 90):.0f} p98 {np.percentile(rr, 98):.0f} | rank share {np.mean(rr / qq):.2f}")
