"""Mirage on a real local Slurm cluster: ``reactive`` against the default policy.

A fresh 16-CPU cluster (scripts/slurm-cluster.sh) runs a contended background load (1-CPU
``sleep`` jobs, 40-110 s under a 2-minute limit, a backlog of ``--backlog`` pending jobs
kept up all along); at the same time ``--chains`` chains per policy run ``--segments``
segments each (``sleep 55`` under a 1-minute limit, so each runs to about its limit). The
chains go through the same driver, store and decision service as ``mirage chain`` and
agentd; queue samples and decisions every 5 s. Realised gaps (successor start - predecessor
end) are summed into interruption (> 0) and overlap (< 0) seconds per policy.

    .venv/bin/python bench/live_chain.py [--chains 2] [--segments 4] [--policy default]

Ends with ``RESULT reactive_interruption_s=... policy_interruption_s=... ratio=...``.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout, without an install

from hpcbase.slurm import CliClient, RetryPolicy, SlurmError  # noqa: E402
from hpcbase.slurm.localcluster import LocalCluster, missing_programs  # noqa: E402
from mirage.chain.driver import ChainDriver  # noqa: E402
from mirage.chain.store import ACTIVE, ChainStore  # noqa: E402
from mirage.live.decisions import DecisionService, resolve_policy  # noqa: E402
from mirage.live.history import QueueHistory  # noqa: E402

SEGMENT = "#!/bin/bash\nsleep 55\n"


def keep_loaded(
    client: CliClient, backlog: int, stop: threading.Event, rng: random.Random, submitted: list[int]
) -> None:
    """Keep ``backlog`` load jobs pending until ``stop``."""
    while not stop.is_set():
        try:
            pending = sum(1 for j in client.queue(max_age=2.0) if j.pending and j.name == "load")
            for _ in range(max(backlog - pending, 0)):
                submitted.append(
                    client.submit(
                        f"sleep {rng.randint(40, 110)}",
                        {"n": 1, "time": "2:00", "J": "load", "output": "/dev/null"},
                    )
                )
        except SlurmError as e:
            print(f"load: {e}", file=sys.stderr)
        stop.wait(2.0)


def record(client: CliClient, seconds: float, load_ids: list[int], out: Path) -> None:
    """Let the load run ``seconds``, then write every load job that ended as SWF (times from
    the first submission; requested time = the limit; one user)."""
    t_end = time.time() + seconds
    with tqdm(total=int(seconds), desc="recording the load", unit="s") as bar:
        while time.time() < t_end:
            time.sleep(5.0)
            bar.n = int(seconds - max(t_end - time.time(), 0))
            bar.refresh()
    mine = set(load_ids)
    jobs = sorted(
        (j for j in client.recent_jobs(max_age=0) if j.id in mine and j.end and j.start),
        key=lambda j: (j.submit or 0.0, j.id),
    )
    if not jobs:
        raise SystemExit("live_chain: no load job ended while recording")
    t0 = jobs[0].submit or 0.0
    last = jobs[-1].submit or t0
    lines = [
        f"; live_chain.py --record {seconds:g}: the 16-CPU local cluster's background load",
        "; MaxNodes: 16",
        "; MaxProcs: 16",
    ]
    for n, j in enumerate(jobs, 1):
        assert j.submit is not None and j.start is not None and j.end is not None
        fields = [n, j.submit - t0, j.start - j.submit, j.end - j.start, j.cpus, -1, -1]
        fields += [j.cpus, j.time_limit or -1, -1, 1, 1, 1, -1, -1, -1, -1, -1]
        lines.append(" ".join(f"{x:g}" if isinstance(x, float) else str(x) for x in fields))
    out.write_text("\n".join(lines) + "\n")
    print(f"{out}: {len(jobs)} jobs over {last - t0:.0f} s")


def summarise(store: ChainStore, ids: list[str]) -> dict[str, float]:
    gaps = [s.gap for cid in ids for s in store.segments(cid) if s.gap is not None]
    return {
        "gaps": len(gaps),
        "interruption_s": sum(max(g, 0.0) for g in gaps),
        "overlap_s": sum(max(-g, 0.0) for g in gaps),
        "presubmitted": sum(
            1 for cid in ids for s in store.segments(cid) if s.how in ("policy", "afterany")
        ),
        "completed": sum(1 for cid in ids if store.chain(cid).status == "completed"),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--chains", type=int, default=2, help="chains per policy")
    p.add_argument("--segments", type=int, default=4)
    p.add_argument("--backlog", type=int, default=10, help="pending load jobs kept up")
    p.add_argument("--policy", default="default", help="policy compared with reactive")
    p.add_argument("--warmup", type=float, default=90.0, help="s of load before the chains")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--max-limit",
        type=float,
        default=120.0,
        help="s; the features' normalisation: the largest limit requested here",
    )
    p.add_argument(
        "--record",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="only run the background load this long and write its jobs as SWF (--trace-out):"
        " the toy cluster's own trace, to train a model for it in the simulator",
    )
    p.add_argument("--trace-out", type=Path, default=Path("live-load.swf"))
    args = p.parse_args(argv)
    missing = missing_programs()
    if missing:
        print(f"live_chain: needs Slurm and munge; missing: {', '.join(missing)}")
        return 1
    policy, policy_name = resolve_policy(args.policy)
    window = getattr(policy, "obs_shape", (13,))[0] - 1
    workdir = Path(tempfile.mkdtemp(prefix="mlc-", dir="/tmp"))
    extra = workdir / "extra.conf"
    extra.write_text("SchedulerParameters=bf_interval=5\n")
    cluster = LocalCluster(workdir / "c", cpus=16, conf_extra=extra)
    stop = threading.Event()
    load_ids: list[int] = []
    try:
        print(f"starting a 16-CPU cluster in {cluster.dir}", flush=True)
        cluster.start()
        client = CliClient(
            cluster.conf_path, min_interval=1.0, policy=RetryPolicy(attempts=3, timeout=15)
        )
        rng = random.Random(args.seed)
        loader = threading.Thread(
            target=keep_loaded, args=(client, args.backlog, stop, rng, load_ids), daemon=True
        )
        loader.start()
        if args.record:
            record(client, args.record, load_ids, args.trace_out)
            return 0
        history = QueueHistory(window=window, sample_interval=5.0, max_limit=args.max_limit)
        service = DecisionService(history, decision_interval=5.0)
        store = ChainStore(workdir)
        driver = ChainDriver(store, client, service, decision_interval=5.0, poll_age=1.0)
        script = workdir / "segment.sh"
        script.write_text(SEGMENT)
        t_end = time.time() + args.warmup
        with tqdm(total=int(args.warmup), desc="warm-up (load + history)", unit="s") as bar:
            while time.time() < t_end:
                if history.due():
                    service.sample(client)
                time.sleep(1.0)
                bar.n = int(args.warmup - max(t_end - time.time(), 0))
                bar.refresh()
        ids: dict[str, list[str]] = {"reactive": [], args.policy: []}
        for _ in range(args.chains):  # interleaved: both policies see the same queue
            for spec in ids:
                c = store.create_chain(
                    str(script),
                    str(workdir),
                    args.segments,
                    spec,
                    False,
                    ["-t", "1", "-n", "1", "-o", "/dev/null"],
                    "bench",
                )
                ids[spec].append(c.id)
        all_ids = [c for v in ids.values() for c in v]
        total = len(all_ids) * args.segments
        with tqdm(total=total, desc="segments ended", unit="seg") as bar:
            while any(store.chain(c).status == ACTIVE for c in all_ids):
                if history.due():
                    service.sample(client)
                for cid in all_ids:
                    try:
                        driver.tick(cid)
                    except SlurmError as e:
                        print(f"chain {cid}: {e}", file=sys.stderr)
                bar.n = sum(1 for c in all_ids for s in store.segments(c) if s.status == "ended")
                bar.refresh()
                time.sleep(1.0)
        res = {spec: summarise(store, v) for spec, v in ids.items()}
        store.close()
    finally:
        stop.set()
        try:
            cluster.stop()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    r, d = res["reactive"], res[args.policy]
    print(
        f"{'policy':32} {'gaps':>5} {'pre-submitted':>13} {'interruption s':>15} "
        f"{'overlap s':>10} {'completed':>9}"
    )
    for name, v in (("reactive", r), (policy_name, d)):
        print(
            f"{name:32} {v['gaps']:>5} {v['presubmitted']:>13} {v['interruption_s']:>15.0f} "
            f"{v['overlap_s']:>10.0f} {v['completed']:>9}"
        )
    ratio = r["interruption_s"] / d["interruption_s"] if d["interruption_s"] else float("inf")
    print(
        f"interruption reactive / {policy_name}: {ratio:.2f}x; overlap "
        f"{d['overlap_s']:.0f} s vs {r['overlap_s']:.0f} s (reactive)"
    )
    print(
        f"RESULT policy={args.policy.replace(' ', '_')} "
        f"policy_used={policy_name.split()[0]} chains={args.chains} segments={args.segments} "
        f"gaps={d['gaps']} "
        f"reactive_interruption_s={r['interruption_s']:.0f} "
        f"reactive_overlap_s={r['overlap_s']:.0f} "
        f"policy_interruption_s={d['interruption_s']:.0f} "
        f"policy_overlap_s={d['overlap_s']:.0f} interruption_ratio={ratio:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
