"""The per-job schedule of a replay, its summary figures and a plot."""

from __future__ import annotations

import math
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path

import numpy as np
import pandas as pd

from sim.engine import Simulator
from sim.fidelity import Fidelity, SizeClass, by_size, fidelity, plot_cdfs, spearman

__all__ = ["spearman"]  # re-exported for callers of the old place

BSLD_THRESHOLD = 10.0  # seconds; the usual bound for bounded slowdown
#: The report warns when simulated and recorded mean waits differ by more than this factor.
WAIT_RATIO_WARN = 2.0
#: ... unless they are this close (hours): a few seconds' wait is no error worth a warning.
WAIT_ABS_WARN_H = 0.1


def schedule_frame(sim: Simulator) -> pd.DataFrame:
    """One row per finished job: ids, size, times (seconds from trace start), state.

    When the trace records start times, ``recorded_start`` and ``recorded_wait`` carry them
    beside the simulated ``start`` and ``wait`` (NaN for jobs without one, e.g. injected).
    """
    recs = sim.records
    n = len(recs)

    def column(name: str, dtype: type) -> np.ndarray:
        return np.fromiter(map(attrgetter(name), recs), dtype=dtype, count=n)

    index = column("trace_index", np.int64)
    df = pd.DataFrame(
        {
            "job_id": column("job_id", np.int64),
            "user": column("user", np.int64),
            "units": column("units", np.int64),
            "limit": column("limit", np.float64),
            "submit": column("submit", np.float64),
            "eligible": column("eligible", np.float64),
            "start": column("start", np.float64),
            "end": column("end", np.float64),
            "state": [r.state.name for r in recs],
            "backfill": column("backfill", np.bool_),
        }
    )
    df["wait"] = df["start"] - df["submit"]
    trace = sim.trace
    if trace is not None and len(trace) and np.isfinite(trace.recorded_start).any():
        recorded = np.full(n, np.nan)
        ok = index >= 0
        recorded[ok] = trace.recorded_start[index[ok]]
        df["recorded_start"] = recorded
        df["recorded_wait"] = recorded - df["submit"].to_numpy()
        df["recorded_end"] = recorded + trace.runtime[np.maximum(index, 0)]
        df.loc[~ok, "recorded_end"] = np.nan
    order = np.lexsort((df["job_id"].to_numpy(), df["submit"].to_numpy()))
    return df.iloc[order].reset_index(drop=True)


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


def summarize(
    df: pd.DataFrame, total_units: int, *, pending_left: int = 0, malformed: int = 0
) -> Summary:
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


@dataclass(frozen=True, slots=True)
class WaitStats:
    """Wait-time figures (hours) and utilisation of one schedule over a set of jobs."""

    mean_h: float
    median_h: float
    p90_h: float
    p95_h: float
    utilisation: float

    @classmethod
    def of(
        cls,
        wait: np.ndarray,
        run: np.ndarray,
        units: np.ndarray,
        submit: np.ndarray,
        total_units: int,
    ) -> WaitStats:
        if not wait.size:
            return cls(math.nan, math.nan, math.nan, math.nan, math.nan)
        q50, q90, q95 = np.percentile(wait, [50, 90, 95]) / 3600
        span = float((submit + wait + run).max() - submit.min())
        util = float((run * units).sum()) / (total_units * span) if span > 0 else 0.0
        return cls(float(wait.mean()) / 3600, float(q50), float(q90), float(q95), util)


@dataclass(frozen=True, slots=True)
class Comparison:
    """The simulated schedule against the one the trace recorded, over the jobs that have
    both starts: the figures of each side, and the per-job error."""

    jobs: int
    simulated: WaitStats
    recorded: WaitStats
    median_abs_error_h: float
    spearman: float
    ks: float
    fidelity: Fidelity
    #: mean waits per job size class (:func:`~sim.fidelity.by_size`)
    sizes: tuple[SizeClass, ...] = ()

    @property
    def mean_ratio(self) -> float:
        """Simulated mean wait / recorded mean wait (inf when only the recorded one is 0)."""
        sim, rec = self.simulated.mean_h, self.recorded.mean_h
        if rec > 0:
            return sim / rec
        return 1.0 if sim == 0 else math.inf

    def warning(self) -> str | None:
        """A sentence when the mean waits differ by more than :data:`WAIT_RATIO_WARN` (and
        by more than :data:`WAIT_ABS_WARN_H`)."""
        r = self.mean_ratio
        close = abs(self.simulated.mean_h - self.recorded.mean_h) <= WAIT_ABS_WARN_H
        if close or 1 / WAIT_RATIO_WARN <= r <= WAIT_RATIO_WARN:
            return None
        return (
            f"simulated mean wait {self.simulated.mean_h:.2f} h is {_times(r)} the recorded "
            f"{self.recorded.mean_h:.2f} h: the replay's cluster or scheduler settings are not "
            "the site's (`hpcsim fit TRACE` infers its world from the log; or give --nodes / "
            "--slurm-conf)"
        )

    def rows(self) -> list[tuple[str, str, str]]:
        """(metric, simulated, recorded) rows for a report."""
        s, r = self.simulated, self.recorded
        return [
            ("jobs with a recorded start", f"{self.jobs}", f"{self.jobs}"),
            ("mean wait", f"{s.mean_h:.2f} h", f"{r.mean_h:.2f} h"),
            ("median wait", f"{s.median_h:.2f} h", f"{r.median_h:.2f} h"),
            ("p90 wait", f"{s.p90_h:.2f} h", f"{r.p90_h:.2f} h"),
            ("p95 wait", f"{s.p95_h:.2f} h", f"{r.p95_h:.2f} h"),
            ("utilisation", f"{100 * s.utilisation:.1f} %", f"{100 * r.utilisation:.1f} %"),
            ("per job: median |simulated - recorded| wait", f"{self.median_abs_error_h:.2f} h", ""),
            ("per job: rank correlation of waits (Spearman)", f"{self.spearman:.3f}", ""),
            ("KS distance of the wait distributions", f"{self.ks:.3f}", ""),
        ] + [
            (
                f"mean wait, jobs of {c.label} ({c.jobs})",
                f"{c.sim_mean_h:.2f} h",
                f"{c.rec_mean_h:.2f} h",
            )
            for c in self.sizes
            if len(self.sizes) > 1
        ]


def _times(ratio: float) -> str:
    if ratio >= 1:
        return f"{ratio:.1f}x" if math.isfinite(ratio) else "infinitely above"
    return f"1/{1 / ratio:.1f} of" if ratio > 0 else "0 x"


def compare(df: pd.DataFrame, total_units: int, unit: str = "units") -> Comparison | None:
    """Simulated against recorded waits over the jobs with both starts (also per job size
    class, counted in ``unit``); None when the trace records no start times (no
    ``recorded_start`` column or none known)."""
    if "recorded_start" not in df:
        return None
    both = df["start"].notna().to_numpy() & df["recorded_start"].notna().to_numpy()
    if not both.any():
        return None
    sub = df[both]
    submit = sub["submit"].to_numpy()
    units = sub["units"].to_numpy()
    sim_wait = sub["wait"].to_numpy()
    rec_wait = sub["recorded_wait"].to_numpy()
    sim_run = (sub["end"] - sub["start"]).to_numpy()
    rec_run = (sub["recorded_end"] - sub["recorded_start"]).to_numpy()
    fid = fidelity(sim_wait, rec_wait)
    return Comparison(
        jobs=int(both.sum()),
        simulated=WaitStats.of(sim_wait, sim_run, units, submit, total_units),
        recorded=WaitStats.of(rec_wait, rec_run, units, submit, total_units),
        median_abs_error_h=fid.median_abs_h,
        spearman=fid.spearman,
        ks=fid.ks,
        fidelity=fid,
        sizes=tuple(by_size(sim_wait, rec_wait, units, unit)),
    )


def write_schedule(df: pd.DataFrame, path: Path) -> None:
    """CSV or Parquet by extension, written atomically (unknown times are empty in CSV)."""
    if path.suffix not in (".csv", ".parquet"):
        raise ValueError(f"{path}: output must end in .csv or .parquet")
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        if path.suffix == ".parquet":
            df.to_parquet(tmp, index=False)
        else:
            _write_csv(df, tmp)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _write_csv(df: pd.DataFrame, path: Path) -> None:
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
    except ImportError:
        df.to_csv(path, index=False)
        return
    table = pa.Table.from_pandas(df, preserve_index=False)  # NaN -> null -> empty field
    pacsv.write_csv(table, path, pacsv.WriteOptions(quoting_style="none"))


def plot(df: pd.DataFrame, total_units: int, path: Path, title: str = "") -> None:
    """Utilisation over time and the simulated and (where recorded) the recorded wait CDFs."""
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
        rec = ran["recorded_wait"] if "recorded_wait" in ran else ran["wait"] * np.nan
        plot_cdfs(ax2, ran["wait"].to_numpy(), rec.to_numpy())
    ax1.set(xlabel="day", ylabel="units busy (%)", title="utilisation", ylim=(0, 105))
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    tmp = path.with_name(path.stem + ".tmp" + path.suffix)
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)
