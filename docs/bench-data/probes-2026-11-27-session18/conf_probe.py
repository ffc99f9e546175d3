import sys, contextlib, io
sys.path.insert(0, "/work/main")
sys.argv = sys.argv[:1]
from bench.unseen_sites import draw, replayed_waits
from sim.profile import priority_lines
from sim.fidelity import fidelity
from sim.traces import read_trace
import numpy as np
from sim.replay_cli import main as replay_main
import csv
from pathlib import Path
def run(seed, lines):
    Path(f"/tmp/s18/c{seed}.conf").write_text("\n".join(lines)+"\n")
    log = f"/tmp/s18/sites/site{seed}.swf"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        replay_main([log, "--slurm-conf", f"/tmp/s18/c{seed}.conf", "--out", "/tmp/s18/o.csv", "--no-progress"])
    rows = list(csv.DictReader(open("/tmp/s18/o.csv")))
    w = np.array([float(r["wait"]) if r["wait"] not in ("", "nan") else np.nan for r in rows])
    t = read_trace(log)
    f = fidelity(w, t.recorded_start - t.submit)
    return f.sim_mean_h / f.rec_mean_h, f.spearman
for seed in [int(s) for s in sys.argv_extra] if False else [2, 7, 13, 14, 15, 10]:
    site, _ = draw(seed)
    a = run(seed, ["SchedulerParameters=bf_max_job_test=50"])
    b = run(seed, ["SchedulerParameters=bf_max_job_test=50"] + priority_lines(site.priority))
    c = run(seed, priority_lines(site.priority))
    print(seed, site.describe(), "depth50 fifo x%.2f sp %.2f | depth50+prio x%.2f sp %.2f | prio only x%.2f sp %.2f" % (*a, *b, *c), flush=True)
