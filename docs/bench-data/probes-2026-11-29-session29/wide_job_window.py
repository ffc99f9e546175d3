"""Does real Slurm 22.05 starve a wide job whose start falls beyond ``bf_window``, as the
simulator does? (docs/simulator.md, "Why the wide jobs starve": LS6's 64-node job gets no
reservation inside the default 24-h window, so narrow jobs are backfilled past it.)

The same workload on a local cluster of 4 one-CPU nodes (``LocalCluster(nodes=4)``) and in
the simulator, configured from the slurm.conf the cluster ran: a stream of one-node jobs
(one every 15 s for 200 s, 45 s each under a 2-minute limit) and, 5 s in, a 4-node job
(20 s, 1-minute limit). With ``bf_window=1`` (minutes) the wide job's earliest start (when
all four nodes' jobs reach their limits) is always more than a minute away while the
stream runs, so it holds no reservation; with ``bf_window=4`` it does. Prints the wide
job's wait, real and simulated, per window.

    PYTHONPATH=. .venv/bin/python docs/bench-data/probes-2026-11-29-session29/wide_job_window.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from sim.realcheck import simulate
from sim.realslurm import WorkloadJob, run_workload

STREAM = [
    WorkloadJob(f"n{k:02d}", cpus=1, limit_s=120, sleep_s=45, submit_offset_s=15.0 * k)
    for k in range(14)
]
WIDE = WorkloadJob("wide", cpus=4, limit_s=60, sleep_s=20, submit_offset_s=5.0)


def main() -> int:
    jobs = [*STREAM, WIDE]
    print("window_min  real_wide_wait_s  sim_wide_wait_s  real_stream_mean_wait_s  sim_stream_mean_wait_s")
    for window in (1, 4):
        with tempfile.TemporaryDirectory() as d:
            extra = Path(d) / "extra.conf"
            extra.write_text(f"SchedulerParameters=bf_interval=5,bf_window={window}\n")
            conf = Path(d) / "slurm.conf"
            rows = run_workload(jobs, extra, cpus=1, nodes=4, conf_out=conf, progress=False)
            sim = simulate(jobs, rows, conf)
        by = {r["name"]: r for r in rows}
        real = {n: by[n]["start"] - by[n]["submit"] for n in by}
        simw = {n: sim[n] - by[n]["submit"] for n in by}
        narrow = [j.name for j in STREAM]
        print(
            f"{window:10d}  {real['wide']:16.0f}  {simw['wide']:15.0f}  "
            f"{sum(real[n] for n in narrow) / len(narrow):23.1f}  "
            f"{sum(simw[n] for n in narrow) / len(narrow):22.1f}",
            flush=True,
        )
        for r in rows:
            print(f"    {r['name']:5s} submit {r['submit'] - rows[0]['submit']:6.0f} "
                  f"start real {r['start'] - rows[0]['submit']:6.0f} sim {sim[r['name']] - rows[0]['submit']:6.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
