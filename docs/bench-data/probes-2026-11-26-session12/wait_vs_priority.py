"""Probe (session 12, analysis only): how much the held-out waits follow the fitted
fair-share order. Spearman of each held-out LS6 job's wait against its priority at
submission (the profile's setting, usage from the recorded schedule; higher priority
should wait less, so a negative value), as recorded and in session 11's and session 12's
profiles (jitter 0), over all held-out jobs and over the 1-node jobs with a limit <= 4 h."""
import sys, warnings
sys.path.insert(0, '.')
warnings.simplefilter('ignore')
import numpy as np
from scipy.stats import spearmanr
from sim.traces.read import read_trace
from sim.profile import SiteProfile, replay_waits, split
from sim.priority import submit_priorities
tr = read_trace('../shared/traces/ls6-a100.log')
profiles = {'session 11': '/tmp/s12/s11_profile.json', 'session 12': 'sim/data/ls6-a100.log.profile.json'}
_, held, _ = split(tr)
rec = tr.recorded_start - tr.submit
small = held & (tr.units == 1) & (tr.limit <= 4 * 3600)
for name, path in profiles.items():
    p = SiteProfile.from_json(open(path).read())
    prio = submit_priorities(tr, p.config(), p.units)
    sim = replay_waits(tr, p)
    for label, m in (('all held-out', held), ('1-node, limit <= 4 h', small)):
        print(f"{name} {label} ({m.sum()} jobs): wait vs priority, recorded {spearmanr(rec[m], prio[m])[0]:.3f}, "
              f"simulated {spearmanr(sim[m], prio[m])[0]:.3f}; sim vs recorded {spearmanr(sim[m], rec[m])[0]:.3f}")
