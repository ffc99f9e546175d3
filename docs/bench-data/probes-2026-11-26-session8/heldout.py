"""Shared by the probes: a profile's replay over 3 run-time jitters, the fit part's and the
held-out third's figures (mean over the jitters) with the fit's loss."""
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
import sim.profile as P  # noqa: E402
from sim.fidelity import fidelity  # noqa: E402
from sim.profile import SiteProfile, replay_waits, split  # noqa: E402
from sim.traces import read_trace  # noqa: E402

LS6 = ROOT.parent / "shared/traces/ls6-a100.log"


def trace_and_profile(trace: Path = LS6, profile: Path | None = None):
    """A trace and its shipped profile (or ``profile``)."""
    tr = read_trace(str(trace))
    path = profile or ROOT / "sim/data" / f"{trace.name}.profile.json"
    return tr, SiteProfile.from_json(Path(path).read_text())


def report(label: str, tr, prof, seeds: int = 3) -> None:
    """Print the fit part's and the held-out third's figures of ``prof`` on ``tr``."""
    fitm, held, _ = split(tr)
    rec = tr.recorded_start - tr.submit
    res = []
    for s in range(seeds):
        w = replay_waits(tr, prof, jitter=0.02, seed=s)
        res.append((fidelity(w[fitm], rec[fitm]), fidelity(w[held], rec[held])))
    for part, k in (("fit", 0), ("held", 1)):
        fs = [r[k] for r in res]
        sp = [f.spearman for f in fs]
        print(
            f"{label:18s} {part}: sp={np.mean(sp):.3f}±{np.std(sp):.3f} "
            f"ks={np.mean([f.ks for f in fs]):.3f} "
            f"med={np.mean([f.sim_median_h for f in fs]):.2f}/{fs[0].rec_median_h:.2f} "
            f"mean={np.mean([f.sim_mean_h for f in fs]):.2f}/{fs[0].rec_mean_h:.2f} "
            f"p90={np.mean([f.sim_p90_h for f in fs]):.2f}/{fs[0].rec_p90_h:.2f} "
            f"loss={np.mean([P.loss(f) for f in fs]):.3f}",
            flush=True,
        )
