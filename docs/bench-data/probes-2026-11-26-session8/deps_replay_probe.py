import sys, numpy as np, time
ROOT = __import__('pathlib').Path(__file__).resolve().parents[3]; sys.path.insert(0, str(ROOT))
from collections import defaultdict
import bisect
from sim.traces import read_trace
from sim.profile import SiteProfile, split, replay_waits
from sim.fidelity import fidelity
from sim.dependency import Dependency
import sim.profile as P
import sim.job_mgr as JM
path = sys.argv[1]; prof_path = sys.argv[2]
tr = read_trace(path)
prof = SiteProfile.from_json(open(prof_path).read())
fitm, held, cut = split(tr)
rec = tr.recorded_start - tr.submit

def infer(tr, tol, same_name=False):
    sub = tr.submit.astype(float); st = tr.recorded_start.astype(float)
    end = st + np.maximum(tr.runtime.astype(float), 0); us = np.asarray(tr.user)
    names = tr.names or [''] * len(sub)
    pred = np.full(len(sub), -1, dtype=np.int64)
    by_user = defaultdict(list)
    for j in np.argsort(end, kind='stable'):
        if np.isfinite(end[j]): by_user[us[j]].append(j)
    ends = {u: [end[j] for j in L] for u, L in by_user.items()}
    for i in range(len(sub)):
        if not np.isfinite(st[i]): continue
        L = by_user[us[i]]; E = ends[us[i]]
        k = bisect.bisect_right(E, st[i])
        while k > 0 and E[k-1] >= st[i] - tol:
            j = L[k-1]
            if j < i and E[k-1] > sub[i] and (not same_name or names[j] == names[i]):
                pred[i] = j; break
            k -= 1
    return pred

orig = JM.JobManager._trace_job
for variant in sys.argv[3:]:
    tol, _, sn = variant.partition(':')
    tol = float(tol)
    pred = infer(tr, tol, sn == 'name') if tol > 0 else np.full(len(tr), -1)
    ids = tr.job_id.astype(np.int64)
    def _trace_job(self, i, pred=pred, ids=ids):
        job = orig(self, i)
        p = pred[i]
        if p >= 0:
            job.deps = [Dependency('afterany', int(ids[p]))]
        return job
    JM.JobManager._trace_job = _trace_job
    res = []
    t = time.time()
    for s in range(3):
        w = replay_waits(tr, prof, jitter=0.02, seed=s)
        res.append((fidelity(w[fitm], rec[fitm]), fidelity(w[held], rec[held])))
    print(f"variant {variant}: {int((pred>=0).sum())} inferred deps, {time.time()-t:.0f}s")
    for name, k in (("fit", 0), ("held", 1)):
        fs = [r[k] for r in res]
        print(f"  {name}: sp={np.mean([f.spearman for f in fs]):.3f}±{np.std([f.spearman for f in fs]):.3f} ks={np.mean([f.ks for f in fs]):.3f} med={np.mean([f.sim_median_h for f in fs]):.2f}/{fs[0].rec_median_h:.2f} mean={np.mean([f.sim_mean_h for f in fs]):.2f}/{fs[0].rec_mean_h:.2f} p90={np.mean([f.sim_p90_h for f in fs]):.2f}/{fs[0].rec_p90_h:.2f} loss={np.mean([P.loss(f) for f in fs]):.3f}", flush=True)
