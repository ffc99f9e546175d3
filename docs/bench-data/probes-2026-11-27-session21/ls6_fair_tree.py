"""LS6: is the recorded Priority column classic fair share (2^(-U/S), what the simulator
models) or Fair Tree (Slurm's default algorithm since 19.05: a user's factor is its rank
by usage among all users, rank / users)? Both order users alike by usage, so they differ
where classic factors underflow to ties (heavy users) and in the spacing between users.
Fit part only (submitted before 2/3 of the span, after the warm-up)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402

import sim.fit as F  # noqa: E402
from sim.priority import fairshare_at  # noqa: E402
from sim.traces import read_trace  # noqa: E402

trace = read_trace(str(ROOT.parent / "shared/traces/ls6-a100.log"))
fit, _, _ = F.split(trace)
m = fit & np.isfinite(trace.recorded_priority)
idx = np.flatnonzero(m)
rec = trace.recorded_priority[idx]
print(f"fit-part jobs with a recorded priority: {idx.size}")
q = np.percentile(rec, [0, 1, 10, 50, 90, 99, 100])
print("recorded priority percentiles 0,1,10,50,90,99,100:", " ".join(f"{x:.0f}" for x in q))
print(f"distinct values: {np.unique(rec).size}")
n_users = int(trace.user.max()) + 1
for half_days in (1.0, 3.5, 7.0):
    fac = fairshare_at(trace, half_days * 86400, trace.submit[idx], n_users)  # (jobs, users)
    users = trace.user[idx].astype(np.int64)
    classic = fac[np.arange(idx.size), users]
    # usage order: a lower classic factor is more usage; where it underflows to 0 the
    # usage is recovered from the exponent's log instead
    with np.errstate(divide="ignore"):
        usage = -np.log2(fac)  # (jobs, users): U/S per user, inf where it underflowed
    mine = usage[np.arange(idx.size), users]
    # Fair Tree (flat): factor = users whose usage is at least this one's / all users
    tree = (usage >= mine[:, None]).sum(axis=1) / n_users
    print(
        f"half-life {half_days:g} d: Spearman with the column: classic "
        f"{spearmanr(classic, rec)[0]:.3f}, Fair Tree {spearmanr(tree, rec)[0]:.3f}; "
        f"classic factors x 100000 below 1: {np.mean(classic * 1e5 < 1):.3f}; "
        f"underflowed to 0: {np.mean(classic == 0):.3f}"
    )
    heavy = classic * 1e5 < 1
    if heavy.sum() > 20:
        print(
            f"   over the {heavy.sum()} jobs whose classic term is below 1: column vs Fair "
            f"Tree {spearmanr(tree[heavy], rec[heavy])[0]:.3f}, column's distinct values "
            f"{np.unique(rec[heavy]).size}, median {np.median(rec[heavy]):.0f}"
        )
