"""Slurm's planned starts against the simulator's start estimates, pass by pass.

Reads real-Slurm rows saved by ``bench/sim_fidelity.py --save`` and the backfill lines of
the same run's slurmctld log (``--ctld-log``; DebugFlags=Backfill). For every backfill pass,
the first job Slurm planned a future start for (no reservation ahead of it yet) is
estimated from the running jobs of that second, with Slurm's will-run groups
(``sim.engine.will_run_start``) and with a plain earliest fit, and compared with the start
Slurm logged.

    .venv/bin/python bench/fidelity_log_check.py \\
        docs/bench-data/sim_fidelity_real_seed11_run2.json \\
        docs/bench-data/sim_fidelity_real_seed11_run2.backfill.log.gz
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hpcbase.slurm.ctldlog import backfill_plans
from sim.engine import will_run_start

CPUS = 16  # bench/sim_fidelity.py's node


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("rows", type=Path)
    ap.add_argument("log", type=Path)
    args = ap.parse_args()
    rows = json.loads(args.rows.read_text())["real"]
    by_id = {r["job_id"]: r for r in rows}
    plans = backfill_plans(args.log)
    if not plans:
        print(f"{args.log}: no backfill plans found (was DebugFlags=Backfill on?)", file=sys.stderr)
        return 2
    miss = {"grouped": 0, "plain": 0}
    for now, jid, planned in plans:
        job = by_id[jid]
        running = [
            r
            for r in rows
            if r["job_id"] != jid and r["start"] is not None and r["start"] <= now < r["end"]
        ]
        ends = sorted((r["start"] + r["limit_s"], 0, r["cpus"]) for r in running)
        free = CPUS - sum(r["cpus"] for r in running)
        for kind, window in (("grouped", 30.0), ("plain", 0.0)):
            est = will_run_start(job["cpus"], job["limit_s"], now, free, ends, 0.0, window=window)
            miss[kind] += est != planned
    n = len(plans)
    print(
        f"{n} passes: Slurm's planned start matched by the will-run groups in "
        f"{n - miss['grouped']}, "
        f"by a plain earliest fit in {n - miss['plain']}"
    )
    print(f"RESULT passes={n} grouped_match={n - miss['grouped']} plain_match={n - miss['plain']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
