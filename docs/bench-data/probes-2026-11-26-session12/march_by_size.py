"""Probe (session 12): recorded vs simulated waits of LS6 jobs by size, Nov-Feb and March 2023, in
session 11's profile (git show b56c0ba:sim/data/ls6-a100.log.profile.json, saved as
/tmp/s12/s11_profile.json) and the one shipped since session 12 (3 jitters, mean)."""
import sys, json, warnings
sys.path.insert(0, '.')
warnings.simplefilter('ignore')
import numpy as np
from datetime import datetime, timezone
from sim.traces.read import read_trace
from sim.profile import SiteProfile, replay_waits
tr = read_trace('../shared/traces/ls6-a100.log')
ep = tr.start_epoch
def t(s): return datetime.fromisoformat(s).replace(tzinfo=timezone.utc).timestamp() - ep
rec = (tr.recorded_start - tr.submit) / 3600
profiles = {'session 11 (recent half)': '/tmp/s12/s11_profile.json', 'session 12 (depth 10)': 'sim/data/ls6-a100.log.profile.json'}
waits = {k: np.nanmean([replay_waits(tr, SiteProfile.from_json(open(p).read()), jitter=0.02, seed=s) for s in range(3)], axis=0) / 3600 for k, p in profiles.items()}
for name, (a, b) in {'Nov-Feb (training)': ('2022-11-01', '2023-03-01'), 'March': ('2023-03-01', '2023-04-01')}.items():
    m = (tr.submit >= t(a)) & (tr.submit < t(b))
    for lo, hi in ((1, 1), (2, 7), (8, 64)):
        k = m & (tr.units >= lo) & (tr.units <= hi)
        line = f"{name:20s} {lo}-{hi} nodes, {k.sum():5d} jobs: recorded mean {np.nanmean(rec[k]):5.2f} h"
        for w, v in waits.items():
            line += f" | {w} {np.nanmean(v[k]):5.2f} h"
        print(line)
