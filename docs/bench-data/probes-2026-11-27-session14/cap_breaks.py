"""Session 14: does LS6's recorded schedule break the fitted per-user node cap (16) with jobs of <= 16 nodes, period by period? (recorded use only)"""
import sys, warnings; sys.path.insert(0,'.'); warnings.simplefilter('ignore')
import numpy as np
from sim.traces.read import read_trace
from sim.profile import split, user_maxima, wall, SiteProfile
tr=read_trace("../shared/traces/ls6-a100.log")
p=SiteProfile.from_json(open("sim/data/ls6-a100.log.profile.json").read())
print("shipped limits:", p.limits)
fit,held,cut=split(tr)
small=tr.units<=16
t0=float(tr.submit[fit].min()); mid=t0+(cut-t0)/2
for k,m in {"fit-early":fit&(tr.submit<mid),"fit-recent":fit&(tr.submit>=mid),"held":held}.items():
    jobs,nodes=user_maxima(tr,m&small)
    over={u:v for u,v in nodes.items() if v>16}
    print(f"{k}: jobs<=16 nodes: node wall {wall(nodes)}; users over 16: {len(over)} {sorted(over.values())}; large jobs (>16) {int((m&~small).sum())}")
