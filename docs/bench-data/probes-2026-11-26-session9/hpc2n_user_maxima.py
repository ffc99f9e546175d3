import numpy as np
from sim.traces.read import read_trace
from sim.profile import split, user_maxima
t = read_trace("/work/shared/traces/hpc2n-excerpt.swf")
fitm, held, cut = split(t)
print(len(t), fitm.sum(), held.sum(), t.total_units)
jf, nf = user_maxima(t, fitm)
jh, nh = user_maxima(t, held)
top = sorted(nh.items(), key=lambda kv: -kv[1])[:12]
print("held-out top per-user procs:", top)
print("fit top per-user procs:", sorted(nf.items(), key=lambda kv: -kv[1])[:12])
print("users over 112 in held:", sum(v > 112 for v in nh.values()), "in fit:", sum(v > 112 for v in nf.values()))
for name, mask, mx in (("fit", fitm, nf), ("held", held, nh)):
    for u, v in mx.items():
        if v > 112:
            m = mask & (t.user == u) & np.isfinite(t.recorded_start)
            print(name, "user", u, "max concurrent", v, "largest job", int(t.units[m].max()), "jobs", int(m.sum()))
