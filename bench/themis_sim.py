"""Benchmark: the Themis I/O simulator at scale (128 servers, 1,000 concurrent jobs).

Measures simulated requests (dispatched chunks) per CPU second of the event loop, on one core,
for the Themis scheduler (size-fair lottery, with the per-delta usage exchange) on the compiled
core, against baselines measured in the same run: the same configuration on the pure-Python
reference scheduler, the FIFO dispatcher, and a bare heap event loop that pops and pushes the
same kind of event tuples with no model at all.  Each configuration runs ``--repeat`` times and
the best is kept (the machine is shared).  Target: >= 1,000,000 simulated requests per
CPU-second.  Ends with one ``RESULT key=value ...`` line.
"""

from __future__ import annotations

import argparse
import heapq
import sys
import time

from tqdm import tqdm

from themis.iosim.engine import IOSim
from themis.iosim.model import GiB, ServerSpec
from themis.iosim.workload import mix_from_rows, synthetic_rows

TARGET = 1_000_000


def bare_heap(events: int) -> float:
    """Events per CPU second of a heap loop that pushes one follow-up per popped event."""
    heap = [(i * 1e-6, i, 0, None, None) for i in range(1024)]
    heapq.heapify(heap)
    seq = 1024
    pop, push = heapq.heappop, heapq.heappush
    t0 = time.process_time()
    for _ in range(events):
        t, _, kind, a, b = pop(heap)
        seq += 1
        push(heap, (t + 1e-5, seq, kind, a, b))
    return events / (time.process_time() - t0)


def run_once(
    policy: str,
    dispatcher: str,
    jobs,
    servers,
    duration: float,
    delta: float,
    bar: tqdm,
    reference: bool = False,
) -> dict[str, float]:
    sim = IOSim(jobs, servers, policy, dispatcher, seed=0, delta=delta, reference=reference)
    last = [0.0]

    def progress(t: float) -> None:
        bar.update(t - last[0])
        last[0] = t

    res = sim.run(duration, progress=progress)
    return {
        "requests": res.chunks,
        "events": res.events,
        "cpu_s": res.cpu_s,
        "wall_s": res.wall_s,
        "rate": res.chunks_per_cpu_s,
        "wall_rate": res.chunks_per_s,
        "gib_s": sum(j.bytes for j in res.jobs) / duration / GiB,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--servers", type=int, default=128)
    p.add_argument("--jobs", type=int, default=1000)
    p.add_argument("--duration", type=float, default=0.1, help="simulated seconds per run")
    p.add_argument("--delta", type=float, default=0.01, help="usage-exchange interval, s")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    servers = ServerSpec(args.servers, 2 * GiB, 20e-6, 4)
    jobs = mix_from_rows(synthetic_rows(args.jobs, seed=1), seed=1)
    configs = [
        ("themis", "size-fair", "lottery", False),
        ("python", "size-fair", "lottery", True),  # the reference scheduler, same decisions
        ("sfq", "group-user-size-fair", "sfq", False),
        ("fifo", "fifo", "fifo", False),
    ]
    best: dict[str, dict[str, float]] = {}
    heap_rate = 0.0
    total = args.duration * len(configs) * args.repeat
    with tqdm(
        total=total,
        desc="simulating",
        unit="sim-s",
        file=sys.stderr,
        bar_format="{l_bar}{bar}| {n:.2f}/{total:.2f} sim-s [{elapsed}]",
    ) as bar:
        for _ in range(args.repeat):
            for name, policy, disp, ref in configs:  # interleaved: load changes hit all alike
                r = run_once(policy, disp, jobs, servers, args.duration, args.delta, bar, ref)
                if name not in best or r["rate"] > best[name]["rate"]:
                    best[name] = r
            heap_rate = max(heap_rate, bare_heap(int(best["themis"]["events"])))
    print(
        f"{args.servers} servers, {args.jobs} concurrent jobs, {args.duration:g} s simulated "
        f"per run, best of {args.repeat}"
    )
    for name, r in best.items():
        print(
            f"{name:7s} {r['requests']:>9,} requests {r['events']:>9,} events "
            f"{r['cpu_s']:6.2f} cpu-s  {r['rate']:>10,.0f} req/cpu-s "
            f"{r['wall_rate']:>10,.0f} req/wall-s  {r['gib_s']:7.1f} GiB/s simulated"
        )
    print(f"bare heap loop: {heap_rate:,.0f} events/cpu-s")
    th, fifo = best["themis"], best["fifo"]
    fields = {
        "servers": args.servers,
        "jobs": args.jobs,
        "sim_s": args.duration,
        "requests": th["requests"],
        "themis_req_per_s": round(th["rate"]),
        "themis_req_per_wall_s": round(th["wall_rate"]),
        "sfq_req_per_s": round(best["sfq"]["rate"]),
        "python_req_per_s": round(best["python"]["rate"]),
        "fifo_req_per_s": round(fifo["rate"]),
        "heap_events_per_s": round(heap_rate),
        "ratio_vs_python": round(th["rate"] / best["python"]["rate"], 3),
        # the compiled core and the reference decide alike: the same requests, the same events
        "same_decisions": int(
            (th["requests"], th["events"]) == (best["python"]["requests"], best["python"]["events"])
        ),
        "ratio_vs_fifo": round(th["rate"] / fifo["rate"], 3),
        "ratio_vs_heap": round(th["rate"] / heap_rate, 4),
        "target": TARGET,
        "target_met": int(th["rate"] >= TARGET),
    }
    print("RESULT " + " ".join(f"{k}={v}" for k, v in fields.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
