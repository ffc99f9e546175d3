"""LS6: at each recorded start, how many of the started job's *own user's* eligible jobs the
priority put ahead of it (a wall at k would show bf_max_job_user=k), record against replay."""
import sys
sys.path.insert(0, "/work/main")
from dataclasses import replace
import numpy as np
from sim.traces import read_trace
from sim.profile import load
from sim.fit import replay_waits
from sim.priority import PriorityModel, fairshare_at
from sim.start_order import Queues, _priorities
from sim.config import SlurmConfig

path = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/traces/ls6-a100.log"
t = read_trace(path)
prof = load(t)
print(prof.describe())
cfg = prof.config()
w = replay_waits(t, prof)
sim = replace(t, recorded_start=t.submit + w)
lim = prof.qos()


def user_ranks(tr):
    q = Queues(tr, prof.units, lim, sample=6000)
    model = PriorityModel(cfg, prof.units, tr.unit, q.n_users)
    size_term = np.array([cfg.weight_job_size * model.size_factor(int(u)) for u in tr.units])
    fs = fairshare_at(tr, cfg.decay_half_life, q.times, q.n_users) if model.w_fairshare else None
    out, glob, same_q = [], [], []
    for row, (j, cand) in enumerate(zip(q.started, q.pending)):
        f = fs[row] if fs is not None else np.ones(1)
        pri = _priorities(model, tr, np.r_[cand, j], q.times[row], size_term, f)
        ahead = (pri[:-1] > pri[-1]) | ((pri[:-1] == pri[-1]) & (tr.submit[cand] < tr.submit[j]))
        mine = tr.user[cand] == tr.user[j]
        out.append(int((ahead & mine).sum()))
        glob.append(int(ahead.sum()))
        same_q.append(int(mine.sum()))
    return np.array(out), np.array(glob), np.array(same_q), q.times


for name, tr in (("record", t), ("replay", sim)):
    ur, gr, sq, times = user_ranks(tr)
    n = ur.size
    print(f"{name}: {n} starts with a queue")
    for k, (a, b) in enumerate([(0, n // 3), (n // 3, 2 * n // 3), (2 * n // 3, n)]):
        u, g, s = ur[a:b], gr[a:b], sq[a:b]
        deep = g > 10  # starts reaching past the top 10: backfill's
        print(f"  part {k}: user rank p50 {np.percentile(u,50):.0f} p90 {np.percentile(u,90):.0f} "
              f"p98 {np.percentile(u,98):.0f} max {u.max()} | own queue p50 {np.median(s):.0f} p90 {np.percentile(s,90):.0f} "
              f"| starts past rank 10: {deep.mean():.2f}, their user rank p90 {np.percentile(u[deep],90) if deep.any() else 0:.0f} "
              f"p98 {np.percentile(u[deep],98) if deep.any() else 0:.0f}; share with own rank >=1 {np.mean(u>=1):.2f} >=2 {np.mean(u>=2):.2f} >=4 {np.mean(u>=4):.2f}")
