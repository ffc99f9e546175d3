#!/usr/bin/env python
"""LS6's shipped profile with Slurm's bf_window_linear: the fit part's loss (what a fit
would choose by), and the 17-64-node jobs' waits over the whole log."""
import numpy as np
from sim.traces import read_trace
from sim.profile import load, SiteProfile
from sim.fit import split, setting_loss, replay_waits
tr = read_trace("../shared/traces/ls6-a100.log")
prof = load(tr)
rec = tr.recorded_start - tr.submit
fit_recent, held, _ = split(tr, recent=0.5)
fit_whole, _, _ = split(tr)
big = tr.units > 16
orig = SiteProfile.config
for lin in (0, 30, 60, 300):
    def cfg(self, total_units=None, _lin=lin):
        c = orig(self, total_units); c.bf_window_linear = float(_lin); return c
    SiteProfile.config = cfg
    lr, _ = setting_loss(tr, prof, fit_recent, rec, 2)
    lw, _ = setting_loss(tr, prof, fit_whole, rec, 2)
    w = replay_waits(tr, prof)
    print(f"bf_window_linear {lin:4d} s: fit-part loss, recent half {lr:.3f}, whole {lw:.3f}; whole log 17-64-node jobs mean {np.nanmean(w[big])/3600:.1f} h max {np.nanmax(w[big])/3600:.0f} h (recorded {rec[big].mean()/3600:.1f}); all jobs mean {np.nanmean(w)/3600:.2f} h", flush=True)
