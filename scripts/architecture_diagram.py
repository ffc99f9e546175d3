"""Draw docs/architecture.png: the packages and the arrows between them.

    .venv/bin/python scripts/architecture_diagram.py [docs/architecture.png]

The arrows are those tests/test_architecture.py enforces (ALLOWED there).
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

from hpcbase.atomic import atomic_path  # noqa: E402

BOXES = {
    "mirage": (
        (0.5, 3.1),
        "mirage",
        "agents, Gymnasium env, train/eval,\nchains, agentd (live cluster)",
    ),
    "sim": (
        (0.5, 1.75),
        "sim",
        "trace readers, slurm.conf subset,\nevent-driven simulator (+ C core)",
    ),
    "themis": (
        (4.6, 2.4),
        "themis",
        "scheduler core, FUSE proxy,\ntagging, daemon, I/O simulator",
    ),
    "hpcbase": (
        (2.55, 0.3),
        "hpcbase",
        "Slurm client + parsers, time grammar, QueueSnapshot,\n"
        "JobSpec, config loader, atomic_write, CLI dispatcher",
    ),
}
ARROWS = [("mirage", "sim"), ("mirage", "hpcbase"), ("sim", "hpcbase"), ("themis", "hpcbase")]
W, H = 3.0, 0.95


def centre(name: str) -> tuple[float, float]:
    (x, y), _, _ = BOXES[name]
    w = W + 1.1 if name == "hpcbase" else W
    return x + w / 2, y + H / 2


def main(out: Path) -> None:
    fig, ax = plt.subplots(figsize=(8.4, 4.6))
    for name, ((x, y), title, text) in BOXES.items():
        w = W + 1.1 if name == "hpcbase" else W
        colour = "#e8eef7" if name != "hpcbase" else "#f3ead7"
        ax.add_patch(FancyBboxPatch((x, y), w, H, boxstyle="round,pad=0.05", fc=colour, ec="k"))
        ax.text(x + w / 2, y + H - 0.2, title, ha="center", va="center", weight="bold")
        ax.text(x + w / 2, y + 0.35, text, ha="center", va="center", fontsize=8)
    for a, b in ARROWS:
        (xa, ya), (xb, yb) = centre(a), centre(b)
        ax.add_patch(
            FancyArrowPatch(
                (xa, ya - H / 2 if ya > yb else ya),
                (xb, yb + H / 2),
                arrowstyle="-|>",
                mutation_scale=14,
                lw=1.2,
                shrinkA=4,
                shrinkB=4,
            )
        )
    ax.text(
        4.1,
        4.35,
        "an arrow: 'imports' (public names only); nothing points up, no cycles",
        ha="center",
        fontsize=8,
        style="italic",
    )
    ax.set_xlim(0, 8.2)
    ax.set_ylim(0, 4.55)
    ax.axis("off")
    fig.tight_layout()
    with atomic_path(out, suffix=".png") as tmp:
        fig.savefig(tmp, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/architecture.png"))
