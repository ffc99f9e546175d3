"""A/B: aggregate vs fifo under local rates, two daemons (THEMIS_LOOSE 0/1), interleaved."""
import os, sys, tempfile, statistics
from pathlib import Path
sys.path.insert(0, "/work/main/bench")
import themis_fairness as tf

VARS = tuple(os.environ.get("VARS", "0,1").split(","))
rounds = int(sys.argv[1]); cases = [c.split(":") for c in sys.argv[2:]]  # policy:scenario
args = tf.parse_args(["--no-emulation", "--local-rates", "0.2"])
mounts = {}
try:
    for v in VARS:
        os.environ["THEMIS_LOOSE"] = v
        base = Path(tempfile.mkdtemp(prefix=f"ab{v}-", dir="/dev/shm")); base.chmod(0o755)
        (base / "b").mkdir(); (base / "b").chmod(0o777); (base / "m").mkdir()
        mounts[v] = (tf.Mount(base / "b", base / "m", args, 0.0), base / "m")
    for v in VARS: tf.run_jobs(mounts[v][1] / "w", tf.SCENARIOS["lone"], "write", args, 1.0)
    ratios = {}
    for r in range(rounds):
        for pol, scen in cases:
            order = VARS if r % 2 == 0 else VARS[::-1]
            for v in order:
                m, mnt = mounts[v]
                runs = {}
                for p in ((pol, "fifo") if r % 2 == 0 else ("fifo", pol)):
                    m.use(p)
                    res = tf.run_jobs(mnt / f"{p}-{r}", tf.SCENARIOS[scen], "write", args, 6.0)
                    runs[p] = res
                x = sum(runs[pol].values()) / sum(runs["fifo"].values())
                ratios.setdefault((pol, v), []).append(x)
                jobs = " ".join(f"{j}={b / 2**20:.0f}" for j, b in runs[pol].items())
                print(f"round {r} {pol:20s} loose={v} ratio {x:.3f}  {jobs}", flush=True)
    for (pol, v), xs in sorted(ratios.items()):
        print(f"{pol:20s} loose={v} median {statistics.median(xs):.3f} mean {statistics.mean(xs):.3f} ", " ".join(f"{x:.2f}" for x in xs))
finally:
    for m, _ in mounts.values():
        m.stop()
