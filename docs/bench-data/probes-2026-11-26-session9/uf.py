"""Probe: per-window controller decisions for one sharing scenario on bare tmpfs."""
import sys, threading, time, urllib.request, tempfile, statistics
from pathlib import Path
sys.path.insert(0, "/work/main/bench")
import themis_fairness as tf

policy = sys.argv[1]; scen = sys.argv[2]; reps = int(sys.argv[3]) if len(sys.argv) > 3 else 2
extra = sys.argv[4:]
args = tf.parse_args(["--no-emulation", "--local-rates", "0.2", *extra])
base = Path(tempfile.mkdtemp(prefix="probe-", dir="/dev/shm")); base.chmod(0o755)
backing, mnt = base / "backing", base / "mnt"; backing.mkdir(); backing.chmod(0o777); mnt.mkdir()
m = tf.Mount(backing, mnt, args, 0.0)
samples = []
stop = False
def scrape():
    while not stop:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{m.port}/metrics") as r:
                t = r.read().decode()
        except Exception:
            time.sleep(0.2); continue
        row = {}
        for line in t.splitlines():
            if line.startswith("themis_cluster_") and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                row[k] = float(v)
        samples.append((time.time(), row)); time.sleep(0.2)
try:
    tf.run_jobs(mnt / "warm", tf.SCENARIOS["lone"], "write", args, 1.0)
    res = {"fifo": [], policy: []}
    for i in range(reps):
        for p in ([policy, "fifo"] if i % 2 == 0 else ["fifo", policy]):
            m.use(p)
            th = None
            if p == policy and i == 0:
                th = threading.Thread(target=scrape); th.start()
            r = tf.run_jobs(mnt / f"{p}-{i}", tf.SCENARIOS[scen], "write", args, 6.0)
            if th: stop = True; th.join()
            res[p].append(r)
            print(p, {k: round(v / 2**20) for k, v in r.items()}, round(sum(r.values()) / 2**20), flush=True)
    agg = {p: [sum(r.values()) for r in v] for p, v in res.items()}
    print("ratios", [round(a / b, 3) for a, b in zip(agg[policy], agg["fifo"])])
    for t, row in samples[::2]:
        cap = {k.split('slurm_job="')[1].split('"')[0] if 'slurm_job="' in k else k: round(v / 2**20) for k, v in row.items() if "job_cap" in k}
        ach = {k.split('slurm_job="')[1].split('"')[0] if 'slurm_job="' in k else k: round(v, 2) for k, v in row.items() if "achieved" in k}
        print(f"{t % 100:6.1f} capacity={row.get('themis_cluster_capacity_bytes_per_second', 0)/2**20:.0f} agg={row.get('themis_cluster_aggregate_bytes_per_second', 0)/2**20:.0f} caps={cap} ach={ach}")
finally:
    m.stop()
