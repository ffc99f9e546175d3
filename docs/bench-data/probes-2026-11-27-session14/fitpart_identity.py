"""Session 14: the fit part's simulated waits under the shipped profiles, with and without the limit steps (jitter 0.02, seeds 0-2): identical where the steps come after the fit part."""
import sys, warnings; sys.path.insert(0,'.'); warnings.simplefilter('ignore')
from unittest import mock
import numpy as np
import sim.profile as sp
from sim.traces.read import read_trace
from sim.profile import SiteProfile, replay_waits, split
for name in ("ls6-a100.log","hpc2n-excerpt.swf"):
    tr=read_trace("../shared/traces/"+name); p=SiteProfile.from_json(open(f"sim/data/{name}.profile.json").read())
    fit,held,cut=split(tr)
    print(name, "steps:", [(round((t-cut)/86400,2), l.to_text()) for t,l in sp.limit_steps(tr,p.qos())])
    for s in range(3):
        a=replay_waits(tr,p,jitter=0.02,seed=s)
        with mock.patch.object(sp,"limit_steps",lambda *a,**k: []):
            b=replay_waits(tr,p,jitter=0.02,seed=s)
        same_fit=np.array_equal(a[fit],b[fit],equal_nan=True)
        print(f"  seed {s}: fit part identical {same_fit}; held-out jobs whose wait moved {int((~np.isclose(a[held],b[held],equal_nan=True)).sum())} of {int(held.sum())}")
