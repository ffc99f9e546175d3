"""Probe (session 13, past only): the fit with and without its last step, the polish
(pairs of window, outages and depth), fitted on the first two thirds of the fit period
(recency as the shipped profile chose) and judged on the fit period's last third (4/9-6/9
of the span), 3 jitters."""
import sys, warnings; sys.path.insert(0,'.'); warnings.simplefilter('ignore')
import numpy as np
import sim.profile as P
from sim.traces.read import read_trace
from sim.fidelity import fidelity
TR=sys.argv[1]
RECENT=float(sys.argv[2]) if len(sys.argv)>2 and sys.argv[2]!="none" else None
tr=read_trace("/work/shared/traces/"+TR)
t0,t1=float(tr.submit[0]),float(tr.submit[-1]); inner=P.FIT_FRACTION*P.FIT_FRACTION
a,b=t0+inner*(t1-t0),t0+P.FIT_FRACTION*(t1-t0)
judged=np.isfinite(tr.recorded_start)&(tr.submit>=a)&(tr.submit<b)
rec=(tr.recorded_start-tr.submit)[judged]
polish=P._polish
for name,fn in (("without polish",lambda p,*a,**k: p),("with polish",polish)):
  P._polish=fn
  prof=P.fit(tr,fraction=inner,recent=RECENT)
  fit_loss=min(s["loss"] for s in prof.steps if s["setting"]==prof.describe()) if any(s["setting"]==prof.describe() for s in prof.steps) else float("nan")
  fs=[fidelity(P.replay_waits(tr,prof,jitter=P.JITTER,seed=s)[judged],rec) for s in range(3)]
  L=[P.loss(f) for f in fs]
  print(f"{TR} {name}: {prof.describe()} (fit loss {fit_loss:.3f})\n  inner held-out loss {np.mean(L):.3f}±{np.std(L):.3f} spearman {np.mean([f.spearman for f in fs]):.3f} ks {np.mean([f.ks for f in fs]):.3f} mean {np.mean([f.sim_mean_h for f in fs]):.2f}/{fs[0].rec_mean_h:.2f} p90 {np.mean([f.sim_p90_h for f in fs]):.2f}/{fs[0].rec_p90_h:.2f}", flush=True)
