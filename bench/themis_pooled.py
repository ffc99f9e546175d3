"""Every Themis policy against fifo, pooled over the rounds of several saved runs.

``bench/themis_fio.py`` and ``bench/themis_fairness.py`` hold each policy against a fifo run
of the same round (fio) or right next to it (fairness), and take the median over a run's
rounds. On a 2-core machine one such ratio spreads by about 12 % (the sd of its log), so a
run of 7 rounds and 24 cells misses a 0.9 line in some cell by chance about half the time,
even where every policy costs what fifo does. This script reads the saved outputs of
several runs of the same command and code, pools their per-round ratios per cell, and
prints each cell's median with a bootstrap 95 % interval (rounds resampled, seed 0), the
share of rounds under 0.9, and, for fio, the chance that one run of that many rounds meets
the line in every cell (its rounds drawn from the pool). ``--plot PNG`` draws each cell's
median and interval against the line.

It reads the lines the benchmarks print:

- fio: ``round N LABEL  WORKLOAD  VALUE MiB/s`` (each Themis row over ``themis fifo`` of
  the same round, per workload);
- fairness: ``POLICY [PHASE] vs fifo, each round: lone R R R; SCENARIO R R R`` (outputs
  before the CPU phase was paired name no phase: theirs are the sharing phase, ``emu``).

    .venv/bin/python bench/themis_pooled.py OUTPUT.txt [OUTPUT.txt ...] [--line 0.9] [--plot PNG]
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

FIO = re.compile(r"^round (\d+) (.+?)\s{2,}(\S.*?\d+j)\s+([\d.]+) MiB/s\s*$")
FAIR = re.compile(r"^(\S+)\s+(?:(emu|cpu) )?vs fifo, each round: (.*)$")
FIFO = "themis fifo"
BOOT = 2000

Cell = tuple[str, str]  # (row, column)


def read_fio(path: Path) -> list[dict[Cell, float]]:
    """Per round of a fio output, each Themis row's ratio to fifo of that round."""
    rounds: dict[int, dict[Cell, float]] = defaultdict(dict)
    for line in path.read_text().splitlines():
        m = FIO.match(line)
        if m:
            rounds[int(m[1])][(m[2].strip(), m[3].strip())] = float(m[4])
    out = []
    for got in rounds.values():
        out.append(
            {
                (label, col): v / got[(FIFO, col)]
                for (label, col), v in got.items()
                if label.startswith("themis ") and label != FIFO and got.get((FIFO, col))
            }
        )
    return out


def read_fairness(path: Path) -> dict[Cell, list[float]]:
    """A fairness output's per-round ratios to the adjacent fifo, per (policy, phase scenario)."""
    out: dict[Cell, list[float]] = defaultdict(list)
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        m = FAIR.match(line)
        if not m:
            continue
        phase = m[2] or "emu"
        for part in m[3].split(";"):
            words = part.split()
            try:
                out[(m[1], f"{phase} {words[0]}")] += [float(w) for w in words[1:]]
            except (IndexError, ValueError):
                raise SystemExit(f"{path}:{lineno}: cannot read the ratios in {part!r}") from None
    return out


def interval(values: list[float], rng: random.Random) -> tuple[float, float]:
    """A bootstrap 95 % interval of the median of ``values``."""
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(BOOT))
    return meds[int(0.025 * BOOT)], meds[int(0.975 * BOOT) - 1]


def chance_all_met(
    rounds: list[dict[Cell, float]], cells: list[Cell], per_run: int, line: float
) -> float:
    """The share of runs of ``per_run`` rounds, drawn from the pool, in which every cell's
    median is at least ``line``."""
    rng = random.Random(1)
    met = 0
    for _ in range(BOOT):
        pick = rng.choices(rounds, k=per_run)
        met += all(
            statistics.median(r[c] for r in pick if c in r) >= line
            for c in cells
            if any(c in r for r in pick)
        )
    return met / BOOT


def plot(rows: list[tuple[str, float, float, float]], line: float, title: str, out: Path) -> None:
    """Each cell's median and 95 % interval (``rows``: label, median, low, high) against
    ``line``, written to ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 0.25 * len(rows) + 1.2), dpi=90)
    ys = list(range(len(rows)))[::-1]
    meds = [r[1] for r in rows]
    errs = [[r[1] - r[2] for r in rows], [r[3] - r[1] for r in rows]]
    ax.errorbar(meds, ys, xerr=errs, fmt="o", ms=3, capsize=2, color="tab:blue")
    ax.axvline(line, color="tab:red", ls="--", lw=1, label=f"target {line}x fifo")
    ax.axvline(1.0, color="grey", lw=0.5)
    ax.set_yticks(ys, [r[0] for r in rows], fontsize=7)
    ax.set_xlabel("x fifo (median of the pooled rounds, 95 % interval)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(out)
    print(f"plot: {out}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("outputs", nargs="+", type=Path, help="saved outputs of one benchmark")
    p.add_argument("--line", type=float, default=0.9, help="the target against fifo (0.9)")
    p.add_argument("--plot", type=Path, help="draw each cell's median and interval here (PNG)")
    args = p.parse_args(argv)
    fio_rounds: list[dict[Cell, float]] = []
    cells: dict[Cell, list[float]] = defaultdict(list)
    runs_per_file: list[int] = []
    for path in args.outputs:
        if not path.is_file():
            raise SystemExit(f"{path}: no such file")
        got = read_fio(path)
        if got:
            fio_rounds += got
            runs_per_file.append(len(got))
            for r in got:
                for c, v in r.items():
                    cells[c].append(v)
            continue
        fair = read_fairness(path)
        if not fair:
            raise SystemExit(f"{path}: no per-round ratios (not a fio or fairness output)")
        runs_per_file.append(max(len(ratios) for ratios in fair.values()))
        for c, ratios in fair.items():
            cells[c] += ratios
    rng = random.Random(0)
    print(f"{len(args.outputs)} outputs, {sum(runs_per_file)} rounds in all")
    print(f"| row | column | rounds | median x fifo | 95 % interval | rounds < {args.line} |")
    print("|---|---|---:|---:|---|---:|")
    lows, meds = [], []
    drawn: list[tuple[str, float, float, float]] = []
    for (row, col), values in sorted(cells.items()):
        med = statistics.median(values)
        lo, hi = interval(values, rng)
        drawn.append((f"{row.removeprefix('themis ')}, {col}", med, lo, hi))
        under = sum(v < args.line for v in values) / len(values)
        lows.append(lo)
        meds.append(med)
        print(f"| {row} | {col} | {len(values)} | {med:.3f} | {lo:.3f}-{hi:.3f} | {under:.0%} |")
    fields = (
        f"cells={len(cells)} rounds={sum(runs_per_file)} outputs={len(args.outputs)} "
        f"min_median={min(meds):.3f} min_lower95={min(lows):.3f}"
    )
    if fio_rounds:
        per_run = round(statistics.median(runs_per_file))
        p_met = chance_all_met(fio_rounds, sorted(cells), per_run, args.line)
        print(
            f"chance that one run of {per_run} rounds meets {args.line} in every cell: {p_met:.2f}"
        )
        fields += f" p_one_run_all_met={p_met:.2f}"
    if args.plot:
        title = f"{sum(runs_per_file)} rounds from {len(args.outputs)} runs"
        plot(drawn, args.line, title, args.plot)
    met = "met" if min(meds) >= args.line else "missed"
    print(f"RESULT {fields} line={args.line} target={met}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
