"""Exploratory (session 36): the fit part's loss of each fitted profile with and without its
limits (6 jittered replays), and the held-out Spearman of both. Args: known-truth pickles."""
import pickle, sys
import numpy as np
from sim.fidelity import fidelity
from sim.fit import fit, replay_waits, split, setting_loss, _with_option, loss, JITTER
for path in sys.argv[1:]:
    tr = pickle.load(open(path, "rb"))
    prof = fit(tr)
    fit_mask, held, cut = split(tr)
    rec = tr.recorded_start - tr.submit
    none = _with_option(prof, "limits", ("", False, ()), prof.units)
    out = [path.split("/")[-1], (prof.limits or "none").replace("\n", " ")]
    for name, p in (("fit", prof), ("nolim", none)):
        ls = [loss(fidelity(replay_waits(tr, p, jitter=JITTER, seed=s)[fit_mask], rec[fit_mask])) for s in range(6)]
        h = fidelity(replay_waits(tr, p)[held], rec[held])
        out.append(f"{name} fitloss {np.mean(ls):.3f}±{np.std(ls):.3f} held sp {h.spearman:.3f}")
    print(" | ".join(out), flush=True)
