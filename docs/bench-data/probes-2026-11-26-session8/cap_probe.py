"""LS6's shipped profile with other availability windows and clamps, FIFO as shipped and
with fair share 3.5 d: fit part and held-out third (analysis, not a choice)."""
from dataclasses import replace

from heldout import report, trace_and_profile

tr, prof = trace_and_profile()
print(prof.describe())
fs = replace(prof, priority="fairshare-3.5d")
variants = {
    "shipped": prof,
    "clamp0": replace(prof, clamp=(0.0, 0.0)),
    "win1h": replace(prof, window_s=3600.0),
    "win1h_clamp0": replace(prof, window_s=3600.0, clamp=(0.0, 0.0)),
    "nowin": replace(prof, window_s=None),
    "fs24h": fs,
    "fs6h": replace(fs, window_s=6 * 3600.0),
    "fs1h": replace(fs, window_s=3600.0),
    "fs6h_c": replace(fs, window_s=6 * 3600.0, clamp=(0.0, 0.025)),
    "fs24h_c1h": replace(fs, clamp=(3600.0, 0.025)),
    "fs3d": replace(fs, window_s=3 * 86400.0),
}
for name, p in variants.items():
    report(name, tr, p)
