"""fio as the yardstick: throughput of the native backing directory, pyfuse3's own passthrough
example, and Themis under each policy and dispatcher, from one run.

Workloads (Debian's ``fio``, psync, buffered, size-bound so every byte goes through the file
system once): 1 MiB sequential and 4 KiB random, read and write, 1 and 8 jobs.  The backing
directory is tmpfs (/dev/shm); every target serves the same directory, so the files fio lays
out once are read by every target.  Reads open the files afresh (Themis and the example drop
the page cache at open), 4 KiB random reads use fio's random map (no block twice), so reads
reach the FUSE daemon.  All fio jobs of a run are one Slurm-less process tree, i.e. one Themis
job: the figures show what each policy and dispatcher costs, not how it shares (see
bench/themis_fairness.py and bench/themis_cluster.py for that).

pyfuse3's installed package ships no examples; pass the path of its ``examples/passthroughfs.py``
(from pyfuse3's source distribution or repository, kept outside this project) with
``--pyfuse3-example``, else that row is left out and the reason printed.

    .venv/bin/python bench/themis_fio.py [--pyfuse3-example /path/to/passthroughfs.py]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the checkout, without an install

from themis.launch import FuseDaemon  # noqa: E402

MiB = 1 << 20


@dataclass(frozen=True)
class Workload:
    label: str
    rw: str
    bs: str
    jobs: int
    size: str  # file per job
    io_size: str  # bytes moved per job


WORKLOADS = [
    Workload(f"{name} {n}j", rw, bs, n, size, io)
    for name, rw, bs, size, io in (
        ("seq write 1M", "write", "1M", "128M", "128M"),
        ("seq read 1M", "read", "1M", "128M", "128M"),
        ("rand write 4k", "randwrite", "4k", "64M", "16M"),
        ("rand read 4k", "randread", "4k", "64M", "16M"),
    )
    for n in (1, 8)
]

# (label, policy, dispatcher, dispatcher options as TOML)
THEMIS = [
    ("themis fifo", "fifo", "fifo", ""),
    ("themis job-fair lottery", "job-fair", "lottery", ""),
    ("themis size-fair lottery", "size-fair", "lottery", ""),
    ("themis user-fair lottery", "user-fair", "lottery", ""),
    ("themis user-then-size-fair lottery", "user-then-size-fair", "lottery", ""),
    ("themis group-user-size-fair lottery", "group-user-size-fair", "lottery", ""),
    ("themis size-fair sfq", "size-fair", "sfq", ""),
    ("themis size-fair tbf (1 GB/s per job)", "size-fair", "tbf", "rate = 1e9"),
    ("themis size-fair gift (4 GB/s)", "size-fair", "gift", "capacity = 4e9"),
]


def fio(directory: Path, w: Workload, runtime: float) -> float:
    """Bytes/s of one fio run in ``directory``."""
    cmd = [
        "fio",
        "--name=yardstick",
        f"--directory={directory}",
        f"--rw={w.rw}",
        f"--bs={w.bs}",
        f"--size={w.size}",
        f"--io_size={w.io_size}",
        f"--numjobs={w.jobs}",
        "--ioengine=psync",
        "--group_reporting",
        "--output-format=json",
        "--fallocate=none",
        f"--runtime={runtime:g}",
        "--filename_format=$jobname.$jobnum",
        "--thread=0",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=runtime * 4 + 120)
    if out.returncode != 0:
        raise RuntimeError(f"fio {w.label} in {directory} failed: {out.stderr.strip()[-500:]}")
    job = json.loads(out.stdout)["jobs"][0]
    side = job["read"] if "read" in w.rw else job["write"]
    return float(side["bw_bytes"])


def missing_requirements() -> list[str]:
    """What this machine lacks for the benchmark (empty when it can run)."""
    why = []
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        why.append("needs root and /dev/fuse")
    if shutil.which("fio") is None:
        why.append("needs fio (apt-get install fio)")
    try:
        import pyfuse3  # noqa: F401
    except ImportError:
        why.append("needs pyfuse3 (the 'fuse' extra)")
    return why


def _baseline_targets(
    example: Path | None, backing: Path, mnt: Path
) -> tuple[list[tuple[str, list[str] | None]], list[str]]:
    """Native tmpfs and, when given, pyfuse3's own passthrough example."""
    targets: list[tuple[str, list[str] | None]] = [("native tmpfs", None)]
    notes = []
    if example and example.is_file():
        targets.append(
            ("pyfuse3 passthrough example", [sys.executable, str(example), str(backing), str(mnt)])
        )
    else:
        notes.append(
            "pyfuse3 passthrough example: not measured (the installed pyfuse3 ships "
            "no examples; pass --pyfuse3-example PATH)"
        )
    return targets, notes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pyfuse3-example", type=Path, help="pyfuse3's examples/passthroughfs.py")
    p.add_argument("--runtime", type=float, default=10.0, help="cap per fio run, seconds")
    p.add_argument("--only", help="comma-separated substrings of target labels to run")
    args = p.parse_args(argv)
    why = missing_requirements()
    if why:
        print("themis_fio: " + "; ".join(why))
        print("RESULT skipped=1")
        return 0
    base = Path(tempfile.mkdtemp(prefix="themis-fio-", dir="/dev/shm"))
    backing, mnt = base / "backing", base / "mnt"
    backing.mkdir()
    mnt.mkdir()
    targets, notes = _baseline_targets(args.pyfuse3_example, backing, mnt)
    for label, policy, disp, opts in THEMIS:
        cfg = base / f"{policy}-{disp}.toml"
        text = f'[scheduler]\npolicy = "{policy}"\ndispatcher = "{disp}"\n'
        if opts:
            text += f"[scheduler.dispatcher_options]\n{opts}\n"
        cfg.write_text(text)
        targets.append(
            (
                label,
                [
                    sys.executable,
                    "-m",
                    "themis.cli",
                    "mount",
                    str(backing),
                    str(mnt),
                    "--foreground",
                    "--config",
                    str(cfg),
                ],
            )
        )
    if args.only:
        keys = args.only.split(",")
        targets = [t for t in targets if t[1] is None or any(k in t[0] for k in keys)]
    table: dict[str, dict[str, float]] = {}
    env = dict(os.environ, PYTHONPATH=str(REPO))
    try:
        for label, cmd in targets:
            daemon = None
            where = backing
            if cmd is not None:
                try:
                    daemon = FuseDaemon(
                        cmd, mnt, base / "daemon.log", what=label, env=env, cwd=REPO
                    )
                except RuntimeError as exc:
                    notes.append(f"{label}: {exc}")
                    print(f"{label}: {exc}", flush=True)
                    continue
                where = mnt
            try:
                row = table[label] = {}
                for w in WORKLOADS:
                    row[w.label] = fio(where, w, args.runtime)
                    print(f"{label:40s} {w.label:18s} {row[w.label] / MiB:9.1f} MiB/s", flush=True)
            finally:
                if daemon is not None:
                    daemon.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)

    cols = [w.label for w in WORKLOADS]
    print("\n| target (MiB/s) | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for label, row in table.items():
        print(
            f"| {label} | "
            + " | ".join(f"{row[c] / MiB:.0f}" if c in row else "-" for c in cols)
            + " |"
        )
    for note in notes:
        print(f"note: {note}")
    fields = {}
    native = table.get("native tmpfs", {})
    ex = table.get("pyfuse3 passthrough example", {})
    sf = table.get("themis size-fair lottery", {})
    for c in ("seq write 1M 8j", "seq read 1M 8j", "rand read 4k 8j"):
        key = c.replace(" ", "_")
        if sf and native:
            fields[f"sizefair_vs_native_{key}"] = round(sf[c] / native[c], 3)
        if sf and ex:
            fields[f"sizefair_vs_example_{key}"] = round(sf[c] / ex[c], 3)
    print(
        "RESULT "
        + " ".join(f"{k}={v}" for k, v in fields.items())
        + f" targets={len(table)} runs={sum(len(r) for r in table.values())}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
