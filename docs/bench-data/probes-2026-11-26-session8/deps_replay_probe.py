"""TRACE PROFILE TOL[:name]...: the replay with each job that started within TOL s of the end
of one of its user's own jobs (ended after its submission; ``:name``: of the same name)
given an ``afterany`` dependency on that job."""
import sys
from collections import defaultdict
from pathlib import Path
import bisect
import numpy as np
from heldout import report, trace_and_profile
from sim.dependency import Dependency
from sim.engine import Simulator
import sim.job_mgr as JM
# the dependencies are added where the Python life cycle makes trace jobs (_trace_job): the
# compiled one (the same schedules otherwise) would not call it
Simulator.compiled_life_cycle = False
tr, prof = trace_and_profile(Path(sys.argv[1]), Path(sys.argv[2]))

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
    JM.JobManager._trace_job = _trace_job  # called by the Python life cycle only
    print(f"variant {variant}: {int((pred>=0).sum())} inferred deps")
    report(f"  tol {variant}", tr, prof)
