"""Exploratory (session 36): the paired t of dropping the fitted limits (profile.limits_check).
Args: known-truth pickles."""
import pickle, sys
import numpy as np
from sim.fit import fit
for path in sys.argv[1:]:
    tr = pickle.load(open(path, "rb"))
    prof = fit(tr)
    c = prof.limits_check
    if not c:
        print(path.split("/")[-1], "no limits chosen", flush=True); continue
    (k1, a), (k2, b) = c.items()
    a, b = np.array(a), np.array(b); d = b - a
    print(path.split("/")[-1], k1, f"with {a.mean():.3f}±{a.std():.3f} without {b.mean():.3f}±{b.std():.3f} paired d {d.mean():.3f}±{d.std():.3f} t {d.mean()/max(d.std(),1e-9)*np.sqrt(len(d)-1):.1f} min {d.min():.3f}", flush=True)
