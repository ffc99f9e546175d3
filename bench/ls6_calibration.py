"""LS6 cluster size: which simulated node count reproduces the recorded waits.

The LS6 sacct export does not say how many A100 nodes the partition had. This replays the
trace with the Mirage environment's scheduler settings at several sizes and prints the mean
wait since 2022-11-01 (all jobs, and jobs with limits of 40 h or more) beside the waits the
trace recorded; 72 is the size the project uses (``sim.data.LS6_SIMULATED_NODES``).

    .venv/bin/python bench/ls6_calibration.py [--nodes 68,72,76,80]
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mirage.envs.world import default_config  # noqa: E402
from sim.engine import Simulator  # noqa: E402
from sim.traces.read import read_trace  # noqa: E402

LS6 = ROOT.parent / "shared" / "traces" / "ls6-a100.log"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--trace", type=Path, default=LS6)
    ap.add_argument("--nodes", default="68,72,76,80")
    args = ap.parse_args()
    trace = read_trace(args.trace)
    since = dt.datetime(2022, 11, 1, tzinfo=dt.UTC).timestamp() - trace.start_epoch
    recorded = trace.recorded_start - trace.submit
    window = (trace.submit >= since) & np.isfinite(recorded)
    long = trace.limit >= 40 * 3600
    hours = lambda w, m: float(np.nanmean(w[m]) / 3600)  # noqa: E731
    print(
        f"recorded: mean wait {hours(recorded, window):.2f} h, "
        f"jobs >= 40 h {hours(recorded, window & long):.2f} h"
    )
    fields = {
        "recorded_h": round(hours(recorded, window), 2),
        "recorded_long_h": round(hours(recorded, window & long), 2),
    }
    for n in (int(x) for x in args.nodes.split(",")):
        sim = Simulator(trace, default_config(), total_units=n)
        sim.run()
        wait = np.full(len(trace), np.nan)
        for r in sim.records:
            if r.trace_index >= 0 and np.isfinite(r.start):
                wait[r.trace_index] = r.start - r.submit
        print(
            f"{n} nodes: mean wait {hours(wait, window):.2f} h, "
            f"jobs >= 40 h {hours(wait, window & long):.2f} h"
        )
        fields[f"n{n}_h"] = round(hours(wait, window), 2)
        fields[f"n{n}_long_h"] = round(hours(wait, window & long), 2)
    print("RESULT " + " ".join(f"{k}={v}" for k, v in fields.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
