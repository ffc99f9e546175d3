"""Evaluation results: per-level summaries, Markdown tables, the gap CDF plot, and the
files of an evaluation folder."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hpcbase.atomic import atomic_path, atomic_write
from mirage.agents.common.hindsight import ON_TIME, UNINTERRUPTED

LEVELS = (("low", -np.inf, 2.0), ("medium", 2.0, 12.0), ("heavy", 12.0, np.inf))
"""Load levels by the reactive baseline's gap (hours): low <= 2, medium <= 12, heavy > 12."""


def _stats(values: np.ndarray) -> dict[str, float]:
    if not values.shape[0]:
        return {"mean": float("nan"), "median": float("nan"), "p90": float("nan")}
    return {
        "mean": float(values.mean()),
        "median": float(np.median(values)),
        "p90": float(np.percentile(values, 90)),
    }


def summarise(rows: list[dict[str, Any]], agents: Sequence[str]) -> list[dict[str, Any]]:
    """One summary per (load level, agent); levels come from the reactive baseline's gaps."""
    ok = [r for r in rows if not r["error"]]
    bad = {r["t0"] for r in rows if r["error"]}
    reactive = {r["t0"]: r["gap"] / 3600 for r in ok if r["agent"] == "reactive"}
    if not reactive:
        raise ValueError("the evaluation needs the 'reactive' agent to define load levels")
    out = []
    for level, lo, hi in (("all", -np.inf, np.inf), *LEVELS):
        chosen = {t for t, g in reactive.items() if t not in bad and lo < g <= hi}
        for agent in agents:
            sel = [r for r in ok if r["agent"] == agent and r["t0"] in chosen]
            out.append({"level": level, "agent": agent, **gap_summary(sel)})
    return out


def gap_summary(sel: list[dict[str, Any]]) -> dict[str, Any]:
    """Statistics of some episodes' rows: interruption and overlap (mean/median/p90), mean
    ``|gap|``, the uninterrupted share (gap <= 10 min, overlap allowed; the paper's "zero
    interruption") and the on-time share (``|gap|`` <= 30 min)."""
    gaps = np.array([r["gap"] for r in sel], float)
    inter = np.maximum(gaps, 0) / 3600 + 0.0  # + 0.0: no "-0.00" in tables
    over = np.array([r["overlap_node_hours"] for r in sel], float) + 0.0
    n = len(sel)
    return {
        "chains": n,
        "interruption_hours": _stats(inter),
        "overlap_node_hours": _stats(over),
        "abs_gap_hours_mean": float(np.abs(gaps).mean() / 3600) if n else np.nan,
        "uninterrupted_share": float((gaps <= UNINTERRUPTED).mean()) if n else np.nan,
        "on_time_share": float((np.abs(gaps) <= ON_TIME).mean()) if n else np.nan,
    }


def markdown_table(summary: list[dict[str, Any]]) -> str:
    lines = []
    for level in dict.fromkeys(s["level"] for s in summary):
        part = [s for s in summary if s["level"] == level]
        n = part[0]["chains"] if part else 0
        if n == 0:
            lines += [f"### load: {level} (0 chains)", ""]
            continue
        lines += [
            f"### load: {level} ({n} chains)",
            "",
            "| agent | mean abs gap h | interruption h mean / median / p90 "
            "| overlap node-h mean / median / p90 | uninterrupted | on time |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for s in part:
            i, o = s["interruption_hours"], s["overlap_node_hours"]
            lines.append(
                f"| {s['agent']} | {s['abs_gap_hours_mean']:.2f} "
                f"| {i['mean']:.2f} / {i['median']:.2f} / {i['p90']:.2f} "
                f"| {o['mean']:.2f} / {o['median']:.2f} / {o['p90']:.2f} "
                f"| {s['uninterrupted_share']:.0%} | {s['on_time_share']:.0%} |"
            )
        lines.append("")
    return "\n".join(lines)


def write_results(
    out: Path, rows: list[dict[str, Any]], summary: list[dict[str, Any]], meta: dict[str, Any]
) -> None:
    """episodes.csv, summary.json, summary.md and gap_cdf.png under ``out``."""
    import pandas as pd

    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / "episodes.csv", pd.DataFrame(rows).to_csv(index=False).encode())
    doc = {"meta": meta, "summary": summary}
    atomic_write(out / "summary.json", json.dumps(doc, indent=1).encode())
    title = f"# Mirage evaluation: {meta['trace']} ({meta['split']})\n\n"
    cmd = f"Command: `{meta['command']}`\n\n"
    atomic_write(out / "summary.md", (title + cmd + markdown_table(summary)).encode())
    plot_cdf(out / "gap_cdf.png", rows, meta["agents"])


def plot_cdf(path: Path, rows: list[dict[str, Any]], agents: Sequence[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    colours = plt.get_cmap("tab10")
    for i, agent in enumerate(agents):
        gaps = np.sort([r["gap"] / 3600 for r in rows if r["agent"] == agent and not r["error"]])
        if gaps.shape[0]:
            ax.step(
                gaps,
                np.arange(1, gaps.shape[0] + 1) / gaps.shape[0],
                where="post",
                label=agent,
                color=colours(i % 10),
                ls=("-", "--", ":")[i // 10 % 3],
            )
    ax.set_xscale("symlog", linthresh=1.0)
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_xlabel("gap = successor start - predecessor end (hours; < 0 overlap)")
    ax.set_ylabel("share of chains")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, dpi=120)
    plt.close(fig)
