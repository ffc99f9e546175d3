"""Draw the two small pictures of README.md and docs/results.md (issue 27).

    python scripts/results_figures.py wait-cdf       # docs/img/slice-wait-cdf.png, ~2 s
    python scripts/results_figures.py themis-shares  # docs/img/themis-cluster-shares.png

``wait-cdf`` replays the embedded LS6 slice (``hpcsim replay --out``, the same command
as ``make demo``'s replay) and draws the simulated and recorded wait CDFs per job.
``themis-shares`` re-plots the saved output of ``bench/themis_cluster.py``
(``docs/bench-data/themis_cluster_run2_password.txt``); it measures nothing.
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
IMG = ROOT / "docs" / "img"
CLUSTER_RUN = ROOT / "docs" / "bench-data" / "themis_cluster_run2_password.txt"


def wait_cdf(out: Path) -> None:
    """Simulated against recorded waits of the embedded LS6 slice, as CDFs."""
    with tempfile.TemporaryDirectory() as tmp:
        schedule = Path(tmp) / "slice.csv"
        cmd = [sys.executable, "-m", "sim.cli", "replay", "--out", str(schedule), "--no-progress"]
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        with schedule.open(newline="") as f:
            rows = list(csv.DictReader(f))
    sim = np.sort([float(r["wait"]) / 3600 for r in rows])
    rec = np.sort([float(r["recorded_wait"]) / 3600 for r in rows])
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=90)
    for waits, label in ((rec, "recorded (LS6)"), (sim, "simulated (hpcsim replay)")):
        y = np.arange(1, len(waits) + 1) / len(waits)
        ax.step(np.maximum(waits, 1e-3), y, where="post", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("wait (hours, log scale; < 3.6 s drawn at 0.001 h)")
    ax.set_ylabel("share of jobs")
    ax.set_title(f"Embedded LS6 slice, {len(rows):,} jobs: wait CDF", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out)


def themis_shares(out: Path) -> None:
    """Achieved shares per job, each node alone against cluster mode, from a saved run."""
    pat = re.compile(r"^(alone|cluster@0\.5)\s+(\S+)\s+shares (.*?)\s+worst")
    got: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for line in CLUSTER_RUN.read_text().splitlines():
        m = pat.match(line)
        if m:
            pairs = re.findall(r"j\d=([\d.]+)/([\d.]+)", m.group(3))
            got[(m.group(2), m.group(1))] = [(float(a), float(t)) for a, t in pairs]
    policies = ["size-fair", "job-fair", "user-fair"]
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=90)
    width = 0.27
    for i, policy in enumerate(policies):
        for k, (mode, colour) in enumerate((("alone", "tab:gray"), ("cluster@0.5", "tab:blue"))):
            shares = got[(policy, mode)]
            xs = [i * 4 + j + (k - 0.5) * width for j in range(3)]
            label = ("each node alone" if k == 0 else "cluster mode (Redis)") if i == 0 else None
            ax.bar(xs, [a for a, _ in shares], width, color=colour, label=label)
        targets = got[(policy, "alone")]
        for j, (_, target) in enumerate(targets):
            x = i * 4 + j
            ax.hlines(target, x - 0.45, x + 0.45, colors="k", linestyles="--", linewidth=1)
    ax.plot([], [], "k--", linewidth=1, label="policy's target")
    ax.set_xticks([i * 4 + j for i in range(3) for j in range(3)])
    ax.set_xticklabels(["j1", "j2", "j3"] * 3, fontsize=8)
    for i, policy in enumerate(policies):
        ax.text(i * 4 + 1, -0.12, policy, ha="center", transform=ax.get_xaxis_transform())
    ax.set_ylabel("share of the device")
    ax.set_title("Themis, 3 nodes sharing one device: share per job", fontsize=10)
    ax.legend(fontsize=7, loc="upper right")
    ax.set_ylim(0, 0.7)
    fig.tight_layout()
    fig.savefig(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("figure", choices=["wait-cdf", "themis-shares"])
    parser.add_argument("--out", type=Path, help="PNG path (default: under docs/img/)")
    args = parser.parse_args()
    IMG.mkdir(parents=True, exist_ok=True)
    if args.figure == "wait-cdf":
        out = args.out or IMG / "slice-wait-cdf.png"
        wait_cdf(out)
    else:
        out = args.out or IMG / "themis-cluster-shares.png"
        themis_shares(out)
    print(out)


if __name__ == "__main__":
    main()
