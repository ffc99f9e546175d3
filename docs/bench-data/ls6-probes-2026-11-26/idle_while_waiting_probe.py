import numpy as np, sys
ROOT = __import__('pathlib').Path(__file__).resolve().parents[3]; sys.path.insert(0, str(ROOT))
from sim.traces import read_trace
tr = read_trace(str(ROOT.parent / 'shared/traces/ls6-a100.log'))
sub=tr.submit.astype(float); st=tr.recorded_start.astype(float); rt=tr.runtime.astype(float); u=tr.units; us=np.asarray(tr.user)
end=st+rt; lim=tr.limit
t0=sub.min(); span=sub.max()-t0
held = sub >= t0 + 2*span/3
wait=st-sub
idx=np.where(held & (wait>=3600))[0]
print("held-out jobs", held.sum(), "waited>=1h", len(idx))
# for each, sample 20 points within its wait: user at jobs limit (>=8 running), user at node cap (run nodes + own > 16), cluster free nodes (80 - busy) >= own
cats={'userjobs':0,'usernodes':0,'nofree':0,'free_other':0}
fracs=[]
order=np.argsort(st)
for i in idx:
    ts=np.linspace(sub[i]+60, st[i]-60, 20)
    c={'userjobs':0,'usernodes':0,'nofree':0,'free_other':0}
    for t in ts:
        run=(st<=t)&(end>t)
        mine=run&(us==us[i])
        busy=u[run].sum()
        if mine.sum()>=8: c['userjobs']+=1
        elif u[mine].sum()+u[i]>16 and u[i]<=16: c['usernodes']+=1
        elif 80-busy < u[i]: c['nofree']+=1
        else: c['free_other']+=1
    k=max(c,key=c.get); cats[k]+=1
    fracs.append(c['free_other']/20)
print(cats)
fr=np.array(fracs); print("mean frac of wait with nodes free and no user limit:", fr.mean())
# how many waiting jobs queued (pending) for users at limit
# free nodes relative to 76 and 72 during the waits; and size of pending big jobs
import collections
frees=[]; sizes=u[idx]
for i in idx[::10]:
    ts=np.linspace(sub[i]+60, st[i]-60, 10)
    for t in ts:
        run=(st<=t)&(end>t); frees.append(76-u[run].sum())
frees=np.array(frees)
print("free nodes (76-busy) percentiles 10/25/50/75/90:", np.percentile(frees,[10,25,50,75,90]))
print("sizes of waiting jobs:", collections.Counter(sizes.tolist()).most_common(8))
print("limits h of waiting jobs:", collections.Counter((lim[idx]/3600).round().tolist()).most_common(8))
# recorded pending set at a few times: how many pending, max size pending
for frac in [0.7,0.75,0.8,0.85,0.9,0.95]:
    t=t0+frac*span
    pend=(sub<=t)&(st>t); run=(st<=t)&(end>t)
    print(f"{frac}: pending={pend.sum()} pend_nodes_max={u[pend].max() if pend.any() else 0} busy={u[run].sum()} pend users={len(set(us[pend]))}")
