"""Plots of simulation runs (matplotlib, Agg backend)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from themis.iosim.metrics import RunMetrics  # noqa: E402


def _save(fig: plt.Figure, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp.png")
    fig.savefig(tmp, dpi=110, bbox_inches="tight")
    plt.close(fig)
    os.replace(tmp, path)


def plot_summary(runs: Sequence[RunMetrics], path: Path) -> None:
    """Per scenario: aggregate throughput, share error and variation of each run."""
    scenarios = list(dict.fromkeys(r.scenario for r in runs))
    fig, axes = plt.subplots(len(scenarios), 3, figsize=(14, 2.8 * len(scenarios)), squeeze=False)
    for row, sc in zip(axes, scenarios, strict=True):
        rs = [r for r in runs if r.scenario == sc]
        labels = [r.run for r in rs]
        for ax, vals, title in (
            (row[0], [r.throughput / 2**30 for r in rs], "GiB/s"),
            (row[1], [r.share_error for r in rs], "share error"),
            (row[2], [r.mean_cov for r in rs], "CoV of job throughput"),
        ):
            ax.barh(labels, vals, color="tab:blue")
            ax.set_title(f"{sc}: {title}", fontsize=9)
            ax.tick_params(labelsize=7)
    fig.tight_layout()
    _save(fig, path)


def plot_shares(runs: Sequence[RunMetrics], path: Path, max_jobs: int = 8) -> None:
    """Achieved vs target share per job while contending, for each run of each scenario."""
    fig, axes = plt.subplots(len(runs), 1, figsize=(8, 1.6 * len(runs) + 0.5), squeeze=False)
    for ax, r in zip(axes[:, 0], runs, strict=True):
        jobs = r.jobs[:max_jobs]
        x = range(len(jobs))
        ax.bar([i - 0.2 for i in x], [j.share for j in jobs], 0.4, label="achieved")
        ax.bar([i + 0.2 for i in x], [j.target for j in jobs], 0.4, label="target")
        ax.set_xticks(list(x), [j.job_id for j in jobs], fontsize=7)
        ax.set_title(f"{r.scenario} / {r.run}", fontsize=8)
        ax.set_ylim(0, 1)
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    _save(fig, path)


def plot_timelines(runs: Sequence[RunMetrics], out_dir: Path) -> list[Path]:
    """Per scenario, ``timelines-<scenario>.png``: each job's throughput over time in each
    run (work units / s per window; only runs with 8 jobs or fewer keep a timeline)."""
    written = []
    for sc in dict.fromkeys(r.scenario for r in runs):
        rs = [r for r in runs if r.scenario == sc and r.timeline]
        if not rs:
            continue
        cols = 2
        rows = (len(rs) + cols - 1) // cols
        fig, axes = plt.subplots(
            rows, cols, figsize=(12, 2.0 * rows + 0.4), squeeze=False, sharex=True
        )
        for ax in axes.flat[len(rs) :]:
            ax.set_visible(False)
        for ax, r in zip(axes.flat, rs, strict=False):
            for job, series in r.timeline.items():
                ax.plot(
                    [i * r.window for i in range(len(series))],
                    [v / 2**30 for v in series],
                    label=job,
                    lw=1,
                )
            ax.set_title(f"{sc} / {r.run}", fontsize=8)
            ax.set_ylabel("GiB/s", fontsize=7)
            ax.tick_params(labelsize=7)
            ax.legend(fontsize=6, loc="upper right")
        fig.supxlabel("simulated seconds", fontsize=8)
        fig.tight_layout()
        path = out_dir / f"timelines-{sc}.png"
        _save(fig, path)
        written.append(path)
    return written
