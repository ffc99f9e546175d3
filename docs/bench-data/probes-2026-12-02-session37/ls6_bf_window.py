"""Exploratory (session 37; LS6 seen many times): the stored LS6 profile with backfill's
window (bf_window) and its linear growth (bf_window_linear) changed: the fit part's loss
and the held-out third's figures, 3 jittered replays each."""

import sys

import numpy as np

from sim.fidelity import fidelity
from sim.fit import JITTER, loss, replay_waits, split
from sim.profile import SiteProfile, load
from sim.traces.read import read_trace

tr = read_trace(sys.argv[1])
prof = load(tr)
fit_mask, held, _ = split(tr, recent=prof.recent)
rec = tr.recorded_start - tr.submit
base_config = SiteProfile.config
for window_min, linear in ((1440, 0), (2880, 0), (4320, 0), (1440, 60), (1440, 600), (2880, 600)):

    def config(self, total_units=None, _w=window_min, _l=linear):  # type: ignore[no-untyped-def]
        cfg = base_config(self, total_units)
        cfg.bf_window, cfg.bf_window_linear = _w * 60.0, float(_l)
        return cfg

    SiteProfile.config = config  # type: ignore[method-assign]
    fits, helds = [], []
    for s in range(3):
        w = replay_waits(tr, prof, jitter=JITTER, seed=s)
        fits.append(loss(fidelity(w[fit_mask], rec[fit_mask])))
        helds.append(fidelity(w[held], rec[held]))
    sp = [f.spearman for f in helds]
    print(
        f"bf_window {window_min} min, linear {linear} s: fit-part loss {np.mean(fits):.3f}",
        f"held out Spearman {np.mean(sp):.3f} ± {np.std(sp):.3f}",
        f"KS {np.mean([f.ks for f in helds]):.3f}",
        f"mean {np.mean([f.sim_mean_h for f in helds]):.2f} / {helds[0].rec_mean_h:.2f} h",
        f"p90 {np.mean([f.sim_p90_h for f in helds]):.2f} / {helds[0].rec_p90_h:.2f} h",
        flush=True,
    )
