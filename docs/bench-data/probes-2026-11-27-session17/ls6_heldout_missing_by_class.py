import numpy as np, pandas as pd
from sim.traces.read import read_trace
tr=read_trace('/work/shared/traces/ls6-a100.log')
st=np.load('/tmp/ls6-heldout-simstart.npy')
sub0,sub1=tr.submit[0],tr.submit[-1]
m=(tr.submit>=sub0+2/3*(sub1-sub0))&np.isfinite(tr.recorded_start)
df=pd.DataFrame(dict(rec=(tr.recorded_start-tr.submit)[m]/3600, sim=(st-tr.submit)[m]/3600, lim=tr.limit[m]/3600, nn=tr.units[m], rt=tr.runtime[m]/3600, user=tr.user[m]))
df['lc']=pd.cut(df.lim,[0,2,12,47.9,48.1]); df['nc']=pd.cut(df.nn,[0,1,4,16,64])
g=df.groupby(['lc','nc'],observed=True).agg(n=('rec','size'),rec=('rec','mean'),sim=('sim','mean'))
g['miss_h_total']=(g.rec-g.sim)*g.n
print(g.round(2).to_string()); print("total missing job-hours", ((df.rec-df.sim).sum()).round(0))
from scipy.stats import spearmanr
print("spearman", spearmanr(df.rec,df.sim).correlation)
for c,gg in df.groupby('lc',observed=True): print(c, len(gg), "sp within", round(spearmanr(gg.rec,gg.sim).correlation,3))
print()
s=df[(df.lim>2)&(df.lim<=12)&(df.nn==1)]
u=s.groupby('user').agg(n=('rec','size'),rec=('rec','mean'),sim=('sim','mean'))
u['miss']=(u.rec-u.sim)*u.n
print(u.sort_values('miss',ascending=False).head(12).round(2).to_string())
