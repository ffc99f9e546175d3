"""Cluster mode of Themis: three daemons standing for three compute nodes share one device.

Three ``themis mount`` daemons (nodes A, B, C) each serve their own mount point over one
backing directory, and all three queue for one emulated device of ``--bandwidth`` bytes/s
(``--device-shared``: a state file every daemon books transfers in, in arrival order), as the
nodes of a cluster queue for one burst buffer.  Jobs are placed so that only global
coordination can be fair:

* job 1: 1 node, user alice, on node A alone;
* job 2: 2 nodes, user bob, on nodes B and C;
* job 3: 1 node, user alice, on node C next to job 2.

Timeline of each run: jobs 2 and 3 start at 0; job 1 starts at ``--join``; job 3 stops at
``--leave``; the run ends at ``--duration``.  Every job-node is ``--workers`` processes
writing 256 KiB requests through its node's mount.  Each run is done for size-fair, job-fair
and user-fair, without cluster mode (each daemon on its own) and with ``--cluster`` (a private
Redis on loopback), and with cluster mode for exchange windows of 0.1, 0.5 and 1 s (job-fair).

Printed: achieved vs target global shares with all three jobs running (after convergence),
the worst relative error per policy (target: within 10 % with cluster mode), how long shares
take to converge after job 1 starts and after job 3 stops (every job within 10 % of its
target over 0.5 s), the fairness error
``0.5 * sum |achieved - target|`` over measurement windows of 0.1, 0.5 and 1 s, the aggregate
throughput with coordination against without (target >= 0.9), and a ``RESULT`` line.

    .venv/bin/python bench/themis_cluster.py            # as root, about 4 min
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hpcbase.asuser import user_python  # noqa: E402
from hpcbase.netutil import free_port  # noqa: E402
from themis.launch import FuseDaemon, themis_command, without_slurm  # noqa: E402
from themis.sched import JobTag, Policy  # noqa: E402

MiB = 1 << 20
SPAN = 16 * MiB
NODES = ("A", "B", "C")
POLICIES = ("size-fair", "job-fair", "user-fair")
ALICE, BOB, GROUP = 2101, 2102, 3101

WORKER = r"""
import os, sys, time
path, block, start_at, stop_at, span = sys.argv[1:6]
block, start_at, stop_at, span = int(block), float(start_at), float(stop_at), int(span)
buf = b"w" * block
fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
while time.time() < start_at:
    time.sleep(0.002)
off, stamps = 0, []
while True:
    os.pwrite(fd, buf, off)
    now = time.time()
    if now >= stop_at:
        break
    stamps.append(round((now - start_at) * 1000, 1))
    off = off + block if off + block < span else 0
print(",".join(map(str, stamps)))
"""


@dataclass(frozen=True)
class Job:
    job_id: str
    nodes: tuple[str, ...]
    uid: int
    start: float
    stop: float

    def tag(self) -> JobTag:
        return JobTag(self.job_id, str(self.uid), str(GROUP), len(self.nodes))


def secret_file(base: Path) -> Path:
    """The private Redis' password file, which every daemon's config names."""
    return base / "redis.secret"


class Redis:
    """A private redis-server on loopback (scripts/redis-server.sh) that wants a password,
    as a site's would: ``secret`` is the daemons' ``cluster.password_file``."""

    def __init__(self, base: Path) -> None:
        self.dir = base / "redis"
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.secret = secret_file(base)
        fd = os.open(self.secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(16) + "\n")
        self._run("start")

    def _run(self, cmd: str) -> None:
        out = subprocess.run(
            [
                str(REPO / "scripts/redis-server.sh"),
                cmd,
                "--dir",
                str(self.dir),
                "--port",
                str(self.port),
                "--password-file",
                str(self.secret),
            ],
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            raise SystemExit(f"redis-server.sh {cmd} failed: {out.stderr or out.stdout}")

    def stop(self) -> None:
        self._run("stop")


class Node:
    """One daemon: node ``name`` serving ``backing`` on its own mount point."""

    def __init__(
        self, name: str, base: Path, args: argparse.Namespace, cluster: str | None, window: float
    ) -> None:
        self.name = name
        self.base = base
        self.mnt = base / f"mnt-{name}"
        self.mnt.mkdir(exist_ok=True)
        self.config = base / f"themis-{name}.toml"
        self.log = base / f"themis-{name}.log"
        self.args = args
        self.window = window
        self.write_config("fifo")
        cmd = themis_command(
            base / "backing",
            self.mnt,
            "--device-bandwidth",
            str(args.bandwidth),
            "--device-shared",
            str(base / "device.state"),
            "--cluster-node",
            name,
            *(["--cluster", cluster] if cluster else []),
            config=self.config,
            log_file=self.log,
        )
        env = dict(without_slurm(os.environ), PYTHONPATH=str(REPO))
        try:
            self.daemon = FuseDaemon(
                cmd,
                self.mnt,
                base / f"themis-{name}.console",
                what=f"themis mount of node {name}",
                env=env,
                cwd=REPO,
                logs=[self.log],
            )
        except RuntimeError as exc:
            raise SystemExit(str(exc)) from None

    def write_config(self, policy: str) -> None:
        text = (
            f'log_level = "info"\n[scheduler]\npolicy = "{policy}"\n'
            f'dispatcher = "{self.args.dispatcher}"\nmax_inflight = {self.args.max_inflight}\n'
            "[tagging]\ntrust_environment = true\n"  # made-up jobs: no Slurm to confirm them
            f"[cluster]\nwindow_seconds = {self.window}\n"
            f"timeout_seconds = {min(0.25, self.window)}\n"
            f'password_file = "{secret_file(self.base)}"\n'
        )
        tmp = self.config.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, self.config)

    def use(self, policy: str) -> None:
        self.write_config(policy)
        mark = self.log.stat().st_size
        self.daemon.signal(signal.SIGHUP)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with open(self.log) as f:
                f.seek(mark)
                if f"policy {policy}," in f.read():
                    return
            time.sleep(0.05)
        raise SystemExit(f"node {self.name} did not switch to {policy}:\n{self.log.read_text()}")

    def stop(self) -> None:
        self.daemon.stop(timeout=30)


def run_timeline(
    nodes: dict[str, Node], jobs: list[Job], args: argparse.Namespace, tag: str
) -> dict[str, list[float]]:
    """Run every job's workers; returns per job the completion times (s) of its writes."""
    t0 = time.time() + 1.0 + 0.03 * args.workers * sum(len(j.nodes) for j in jobs)
    procs = []
    for job in jobs:
        env = {
            "PATH": "/usr/bin:/bin",
            "SLURM_JOB_ID": job.job_id,
            "SLURM_NNODES": str(len(job.nodes)),
            "SLURM_JOB_NUM_NODES": str(len(job.nodes)),
        }
        for node in job.nodes:
            where = nodes[node].mnt / f"{tag}-{job.job_id}-{node}"
            where.mkdir(exist_ok=True)
            os.chown(where, job.uid, GROUP)
            for w in range(args.workers):
                cmd = [
                    user_python(),
                    "-c",
                    WORKER,
                    str(where / f"w{w}"),
                    str(args.block),
                    repr(t0 + job.start),
                    repr(t0 + job.stop),
                    str(SPAN),
                ]
                p = subprocess.Popen(
                    cmd,
                    env=env,
                    user=job.uid,
                    group=GROUP,
                    extra_groups=[],
                    stdout=subprocess.PIPE,
                    text=True,
                    cwd="/",
                )
                procs.append((job, p))
    stamps: dict[str, list[float]] = {j.job_id: [] for j in jobs}
    for job, p in procs:
        out, _ = p.communicate(timeout=args.duration + 120)
        if p.returncode != 0:
            raise SystemExit(f"a worker of job {job.job_id} failed (exit {p.returncode})")
        if out.strip():
            stamps[job.job_id] += [job.start + float(x) / 1000 for x in out.strip().split(",")]
    for daemon in nodes.values():
        for d in daemon.mnt.glob(f"{tag}-*"):
            shutil.rmtree(d, ignore_errors=True)
    return {j: sorted(v) for j, v in stamps.items()}


def targets(policy: str, jobs: list[Job], t: float) -> dict[str, float]:
    """The policy's global shares among the jobs running at ``t``."""
    return Policy.from_name(policy).shares(j.tag() for j in jobs if j.start <= t < j.stop)


def binned(
    stamps: dict[str, list[float]], start: float, end: float, width: float
) -> list[tuple[float, dict[str, float]]]:
    """Bytes per job in consecutive bins of ``width`` from ``start`` to ``end``."""
    n = int((end - start) / width + 1e-9)
    out = [(start + k * width, {j: 0.0 for j in stamps}) for k in range(n)]
    for job, ts in stamps.items():
        for t in ts:
            k = int((t - start) / width)
            if 0 <= k < n:
                out[k][1][job] += 1
    return out


def error(got: dict[str, float], want: dict[str, float]) -> float:
    total = sum(got[j] for j in want)
    if total <= 0:
        return 1.0
    return 0.5 * sum(abs(got[j] / total - s) for j, s in want.items())


def convergence(
    policy: str,
    jobs: list[Job],
    stamps: dict[str, list[float]],
    event: float,
    end: float,
    width: float = 0.25,
    span: int = 2,
    tol: float = 0.10,
) -> float:
    """Seconds from ``event`` until every job's share over ``span`` consecutive bins of
    ``width`` is within ``tol`` (relative) of its target (nan if never)."""
    bins = binned(stamps, event, end, width)
    want = targets(policy, jobs, event + 0.01)
    for k in range(len(bins) - span + 1):
        sums = {j: sum(b[1][j] for b in bins[k : k + span]) for j in stamps}
        total = sum(sums[j] for j in want)
        if total and all(abs(sums[j] / total - s) <= tol * s for j, s in want.items()):
            return k * width
    return float("nan")


@dataclass
class Outcome:
    got: dict[str, float]
    want: dict[str, float]
    rel: float  # worst relative share error
    errs: dict[float, float]  # measurement window -> mean fairness error
    tput: float  # bytes/s in the measured interval
    conv_join: float
    conv_leave: float


def analyse(
    policy: str, jobs: list[Job], stamps: dict[str, list[float]], args: argparse.Namespace
) -> Outcome:
    lo, hi = args.join + args.settle, args.leave
    want = targets(policy, jobs, lo)
    counts = {j: sum(1 for t in ts if lo <= t < hi) for j, ts in stamps.items()}
    total = sum(counts.values())
    got = {j: c / total if total else 0.0 for j, c in counts.items()}
    rel = max(abs(got[j] - s) / s for j, s in want.items())
    errs = {}
    for w in (0.1, 0.5, 1.0):
        errs[w] = statistics.mean(error(b, want) for _, b in binned(stamps, lo, hi, w))
    block = args.block
    steady = total * block / (hi - lo)
    return Outcome(
        got,
        want,
        rel,
        errs,
        steady,
        convergence(policy, jobs, stamps, args.join, args.leave),
        convergence(policy, jobs, stamps, args.leave, args.duration),
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bandwidth", type=float, default=120e6, help="shared device, bytes/s")
    p.add_argument("--workers", type=int, default=6, help="processes per job and node")
    p.add_argument("--block", type=int, default=256 * 1024)
    p.add_argument("--max-inflight", type=int, default=4)
    p.add_argument("--dispatcher", default="lottery")
    p.add_argument("--join", type=float, default=4.0, help="job 1 starts (s)")
    p.add_argument("--leave", type=float, default=16.0, help="job 3 stops (s)")
    p.add_argument("--duration", type=float, default=22.0)
    p.add_argument(
        "--settle",
        type=float,
        default=3.0,
        help="seconds after job 1 starts before shares are measured",
    )
    p.add_argument("--windows", default="0.1,0.5,1.0", help="exchange windows to compare")
    p.add_argument("--quick", action="store_true", help="shorter timeline, one window")
    args = p.parse_args(argv)
    if args.quick:
        args.join, args.leave, args.duration, args.settle, args.windows = 3, 10, 14, 2.5, "0.5"
    why = []
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        why.append("needs root and /dev/fuse (real FUSE mounts, other uids)")
    if shutil.which("redis-server") is None:
        why.append("needs redis-server (apt-get install redis-server)")
    try:
        import redis  # noqa: F401
    except ImportError:
        why.append("needs redis-py (pip install redis, the cluster extra)")
    if why:
        print("themis_cluster: " + "; ".join(why))
        print("RESULT skipped=1")
        return 0
    jobs = [
        Job("1", ("A",), ALICE, args.join, args.duration),
        Job("2", ("B", "C"), BOB, 0.0, args.duration),
        Job("3", ("C",), ALICE, 0.0, args.leave),
    ]
    windows = [float(w) for w in args.windows.split(",")]
    base = Path(tempfile.mkdtemp(prefix="themis-cluster-", dir="/dev/shm"))
    base.chmod(0o755)
    (base / "backing").mkdir()
    (base / "backing").chmod(0o777)
    results: dict[tuple[str, str], Outcome] = {}
    redis_server = Redis(base)
    try:
        modes = [("alone", None, 0.5)] + [(f"cluster@{w:g}", redis_server.url, w) for w in windows]
        for mode, url, window in modes:
            policies = POLICIES if window == 0.5 or url is None else ("job-fair",)
            nodes = {n: Node(n, base, args, url, window) for n in NODES}
            try:
                for policy in policies:
                    for node in nodes.values():
                        node.use(policy)
                    stamps = run_timeline(nodes, jobs, args, f"{mode}-{policy}")
                    r = results[(mode, policy)] = analyse(policy, jobs, stamps, args)
                    got, want = r.got, r.want
                    print(
                        f"{mode:12s} {policy:10s} shares "
                        + " ".join(f"j{j}={got[j]:.3f}/{want[j]:.3f}" for j in sorted(want))
                        + f"  worst {r.rel:.1%}  {r.tput / MiB:.0f} MiB/s  "
                        f"converge join {r.conv_join:.2f} s leave {r.conv_leave:.2f} s",
                        flush=True,
                    )
            finally:
                for node in nodes.values():
                    node.stop()
    finally:
        redis_server.stop()
        shutil.rmtree(base, ignore_errors=True)

    print(
        f"\nshared device {args.bandwidth / 1e6:.0f} MB/s; job 1 (1 node, alice) on A, job 2 "
        f"(2 nodes, bob) on B+C, job 3 (1 node, alice) on C; {args.workers} writers per "
        "job-node; shares over "
        f"[{args.join + args.settle:g}, {args.leave:g}) s (achieved/target)"
    )
    print(
        f"{'policy':10s} {'mode':12s} {'job 1':>13s} {'job 2':>13s} {'job 3':>13s} "
        f"{'worst':>7s} {'MiB/s':>6s} {'err 0.1s':>8s} {'0.5s':>6s} {'1s':>6s} "
        f"{'conv+':>6s} {'conv-':>6s}"
    )
    fields: dict[str, object] = {}
    ok = True
    for (mode, policy), r in results.items():
        got, want, errs = r.got, r.want, r.errs
        cells = " ".join(f"{got[j]:.3f}/{want[j]:.3f}" for j in sorted(want))
        print(
            f"{policy:10s} {mode:12s} {cells} {r.rel:7.1%} {r.tput / MiB:6.0f} "
            f"{errs[0.1]:8.3f} {errs[0.5]:6.3f} {errs[1.0]:6.3f} "
            f"{r.conv_join:6.2f} {r.conv_leave:6.2f}"
        )
        key = f"{policy.replace('-', '_')}_{mode.replace('@', '_').replace('.', 'p')}"
        fields[f"{key}_worst"] = round(r.rel, 3)
        fields[f"{key}_err1s"] = round(errs[1.0], 3)
    for policy in POLICIES:
        alone, coord = results[("alone", policy)], results.get(("cluster@0.5", policy))
        if coord is None:
            continue
        ratio = coord.tput / alone.tput
        fields[f"{policy.replace('-', '_')}_tput_vs_alone"] = round(ratio, 3)
        met = coord.rel <= 0.10 and ratio >= 0.9
        ok = ok and met
        print(
            f"{policy}: worst share error {coord.rel:.1%} with cluster mode "
            f"(target <= 10 %), {alone.rel:.1%} without; "
            f"throughput with/without {ratio:.3f} (target >= 0.9)"
        )
    print("RESULT " + " ".join(f"{k}={v}" for k, v in fields.items()) + f" targets_met={int(ok)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
