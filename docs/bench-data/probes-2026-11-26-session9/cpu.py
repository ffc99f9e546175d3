"""Probe: the daemon's CPU and context switches per GiB, fifo against a capped policy."""
import os, sys, tempfile, glob
from pathlib import Path
sys.path.insert(0, "/work/main/bench")
import themis_fairness as tf

policy, scen, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
args = tf.parse_args(["--no-emulation", "--local-rates", "0.2"])
base = Path(tempfile.mkdtemp(prefix="cpu-", dir="/dev/shm")); base.chmod(0o755)
(base / "b").mkdir(); (base / "b").chmod(0o777); (base / "m").mkdir()
m = tf.Mount(base / "b", base / "m", args, 0.0)
pid = m.daemon.proc.pid if hasattr(m.daemon, "proc") else None
def daemon_pid():
    for p in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            c = open(p, "rb").read()
        except OSError:
            continue
        if b"themis" in c and b"mount" in c and str(base).encode() in c:
            return int(p.split("/")[2])
dp = daemon_pid()
def snap():
    ut = st = vol = inv = 0
    for task in glob.glob(f"/proc/{dp}/task/*"):
        try:
            f = open(task + "/stat").read().rsplit(")", 1)[1].split()
            lines = open(task + "/status").read().splitlines()
        except OSError:
            continue
        ut += int(f[11]); st += int(f[12])
        for line in lines:
            if line.startswith("voluntary_ctxt_switches"): vol += int(line.split()[1])
            if line.startswith("nonvoluntary_ctxt_switches"): inv += int(line.split()[1])
    tot = open("/proc/stat").readline().split()[1:]
    return ut, st, vol, inv, [int(x) for x in tot]
try:
    tf.run_jobs(base / "m" / "w", tf.SCENARIOS["lone"], "write", args, 1.0)
    for r in range(reps):
        for p in ((policy, "fifo") if r % 2 == 0 else ("fifo", policy)):
            m.use(p)
            a = snap()
            res = tf.run_jobs(base / "m" / f"{p}{r}", tf.SCENARIOS[scen], "write", args, 6.0)
            b = snap()
            gib = sum(res.values()) * 6.0 / 2**30
            idle = (b[4][3] - a[4][3]) / max(1, sum(b[4]) - sum(a[4]))
            print(f"{p:12s} MiB/s {sum(res.values())/2**20:6.0f}  daemon user+sys s/GiB {(b[0]-a[0]+b[1]-a[1])/100/gib:.3f} (sys {(b[1]-a[1])/100/gib:.3f}) vol cs/GiB {(b[2]-a[2])/gib:.0f} invol/GiB {(b[3]-a[3])/gib:.0f} machine idle {idle:.3f}", flush=True)
finally:
    m.stop()
