import numpy as np, sys
ROOT = __import__('pathlib').Path(__file__).resolve().parents[3]; sys.path.insert(0, str(ROOT))
from sim.traces import read_trace
tr = read_trace(str(ROOT.parent / 'shared/traces/ls6-a100.log'))
sub=tr.submit.astype(float); st=tr.recorded_start.astype(float); rt=tr.runtime.astype(float); u=tr.units; us=np.asarray(tr.user)
end=st+rt
n=len(sub); print("jobs", n)
wait=st-sub
t0=sub.min(); span=sub.max()-t0
# for each job, the latest end of a same-user job that ended in (sub, st]; gap start - that end
order=np.argsort(end)
from collections import defaultdict
ends_by_user=defaultdict(list)
for j in order: ends_by_user[us[j]].append((end[j], j))
import bisect
def nearest_gap(i, tol):
    L=ends_by_user[us[i]]
    ts=[e for e,_ in L]
    k=bisect.bisect_right(ts, st[i])
    # ends in [st-tol, st], after submit
    while k>0 and ts[k-1]>=st[i]-tol:
        e,j=L[k-1]
        if j!=i and e>sub[i]:
            return st[i]-e, j
        k-=1
    return None
for thr in [3600, 6*3600]:
    for tol in [5, 30, 120]:
        sel=np.where(wait>=thr)[0]
        hit=sum(1 for i in sel if nearest_gap(i,tol) is not None)
        # baseline: shift start by random offset within wait
        rng=np.random.default_rng(0)
        base=0
        for i in sel:
            fake=sub[i]+rng.uniform(0,wait[i])
            L=ends_by_user[us[i]]; ts=[e for e,_ in L]
            k=bisect.bisect_right(ts,fake)
            if k>0 and ts[k-1]>=fake-tol and ts[k-1]>sub[i]: base+=1
        print(f"wait>={thr/3600:.0f}h tol {tol}s: {hit}/{len(sel)} start within tol after a same-user end; chance {base}")
# also: any job end (any user) near start
# classify the tol=120 hits for wait>=1h
sel=np.where(wait>=3600)[0]
cats=defaultdict(int)
sorted_st=np.argsort(st)
for i in sel:
    g=nearest_gap(i,120)
    if g is None: continue
    gap,j=g
    t=end[j]-1  # just before the predecessor ended
    run=(st<=t)&(end>t)
    mine=run&(us==us[i])
    busy=u[run].sum()
    if mine.sum()>=8: cats['user at 8 jobs']+=1
    elif u[mine].sum()+u[i]>16 and u[i]<=16: cats['user at 16 nodes']+=1
    elif 80-busy < u[i]: cats['cluster full (80)']+=1
    elif 76-busy < u[i]: cats['cluster full (76)']+=1
    else: cats['free & under limits -> dependency?']+=1
print(dict(cats))
# same name? chained job names
names=tr.names
if names:
    same=sum(1 for i in sel if (g:=nearest_gap(i,120)) is not None and names[g[1]]==names[i])
    print("same job name as predecessor:", same)
