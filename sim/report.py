"""The per-job schedule of a replay, its summary figures and a plot."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from sim.engine import Simulator

BSLD_THRESHOLD = 10.0  # seconds; the usual bound for bounded slowdown


def schedule_frame(sim: Simulator) -> pd.DataFrame:
    """One row per finished job: ids, size, times (seconds from trace start), state."""
    recs = sim.records
    df = pd.DataFrame(
        {
            "job_id": [r.job_id for r in recs],
            "user": [r.user for r in recs],
            "units": [r.units for r in recs],
            "limit": [r.limit for r in recs],
            "submit": [r.submit for r in recs],
            "eligible": [r.eligible for r in recs],
            "start": [r.start for r in recs],
            "end": [r.end for r in recs],
            "state": [r.state.name for r in recs],
            "backfill": [r.backfill for r in recs],
        }
    )
    df["wait"] = df["start"] - df["submit"]
    return df.sort_values(["submit", "job_id"], kind="stable").reset_index(drop=True)


@dataclass(frozen=True, slots=True)
class Summary:
    jobs: int
    started: int
    never_started: int
    mean_wait_h: float
    median_wait_h: float
    p95_wait_h: float
    mean_bsld: float
    utilisation: float
    backfill_share: float
    timeouts: int
    malformed_rows: int

    def rows(self) -> list[tuple[str, str]]:
        return [
            ("jobs finished", f"{self.jobs}"),
            ("jobs never started (still pending at the end)", f"{self.never_started}"),
            ("mean wait", f"{self.mean_wait_h:.2f} h"),
            ("median wait", f"{self.median_wait_h:.2f} h"),
            ("p95 wait", f"{self.p95_wait_h:.2f} h"),
            (f"mean bounded slowdown (tau={BSLD_THRESHOLD:g} s)", f"{self.mean_bsld:.2f}"),
            ("utilisation", f"{100 * self.utilisation:.1f} %"),
            ("started by backfill", f"{100 * self.backfill_share:.1f} %"),
            ("killed at their limit (TIMEOUT)", f"{self.timeouts}"),
            ("malformed trace rows skipped", f"{self.malformed_rows}"),
        ]


def summarize(df: pd.DataFrame, total_units: int, *, pending_left: int = 0, malformed: int = 0) -> Summary:
    ran = df[df["start"].notna()]
    wait = ran["wait"].to_numpy()
    run = (ran["end"] - ran["start"]).to_numpy()
    bsld = np.maximum((wait + run) / np.maximum(run, BSLD_THRESHOLD), 1.0)
    if len(ran):
        span = float(ran["end"].max() - ran["submit"].min())
        used = float((run * ran["units"].to_numpy()).sum())
        util = used / (total_units * span) if span > 0 else 0.0
    else:
        util = 0.0

    def q(p: float) -> float:
        return float(np.percentile(wait, p)) / 3600 if len(wait) else math.nan

    return Summary(
        jobs=len(df),
        started=len(ran),
        never_started=pending_left,
        mean_wait_h=float(wait.mean()) / 3600 if len(wait) else math.nan,
        median_wait_h=q(50),
        p95_wait_h=q(95),
        mean_bsld=float(bsld.mean()) if len(bsld) else math.nan,
        utilisation=util,
        backfill_share=float(ran["backfill"].mean()) if len(ran) else 0.0,
        timeouts=int((df["state"] == "TIMEOUT").sum()),
        malformed_rows=malformed,
    )


def write_schedule(df: pd.DataFrame, path: Path) -> None:
    """CSV or Parquet by extension, written atomically."""
    tmp = path.with_name(path.name + ".tmp")
    if path.suffix == ".parquet":
        df.to_parquet(tmp, index=False)
    elif path.suffix == ".csv":
        df.to_csv(tmp, index=False)
    else:
        raise ValueError(f"{path}: output must end in .csv or .parquet")
    tmp.replace(path)


def plot(df: pd.DataFrame, total_units: int, path: Path, title: str = "") -> None:
    """Utilisation over time and the wait-time distribution."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ran = df[df["start"].notna()]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    if len(ran):
        t = np.concatenate([ran["start"], ran["end"]])
        d = np.concatenate([ran["units"], -ran["units"]])
        o = np.argsort(t, kind="stable")
        ts = t[o]
        busy = np.cumsum(d[o]) / total_units
        last = np.r_[ts[1:] != ts[:-1], True]  # the level after all changes at one time
        ax1.step(ts[last] / 86400, 100 * busy[last], where="post", lw=0.6)
        w = np.sort(ran["wait"].to_numpy()) / 3600
        ax2.plot(w, np.arange(1, len(w) + 1) / len(w))
        ax2.set_xscale("symlog", linthresh=0.1)
    ax1.set(xlabel="day", ylabel="units busy (%)", title="utilisation", ylim=(0, 105))
    ax2.set(xlabel="wait (h)", ylabel="fraction of jobs", title="wait CDF")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    tmp = path.with_name(path.stem + ".tmp" + path.suffix)
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)
