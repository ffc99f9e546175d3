"""How closely simulated waits follow recorded ones, job by job: the one computation that
``hpcsim replay``, ``hpcsim fit``, ``bench/sim_twin.py`` and Mirage's study print.

Figures over the jobs that have both waits: mean, median and p90 wait of each side, the
median per-job |simulated - recorded| wait, Spearman's rank correlation of the waits and the
Kolmogorov-Smirnov distance between the two wait distributions.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

#: issue 23's targets on a held-out third
TARGET_SPEARMAN = 0.55
TARGET_KS = 0.12
TARGET_MEDIAN_FACTOR = 2.0
TARGET_MEDIAN_SLACK_H = 0.1
TARGET_REL = 0.2


@dataclass(frozen=True, slots=True)
class Fidelity:
    """Simulated against recorded waits (hours) of the same ``jobs``."""

    jobs: int
    sim_mean_h: float
    rec_mean_h: float
    sim_median_h: float
    rec_median_h: float
    sim_p90_h: float
    rec_p90_h: float
    median_abs_h: float
    spearman: float
    ks: float

    def rows(self) -> list[tuple[str, str, str]]:
        """(metric, simulated, recorded) rows for a table."""
        return [
            ("jobs compared", f"{self.jobs}", f"{self.jobs}"),
            ("mean wait", f"{self.sim_mean_h:.2f} h", f"{self.rec_mean_h:.2f} h"),
            ("median wait", f"{self.sim_median_h:.2f} h", f"{self.rec_median_h:.2f} h"),
            ("p90 wait", f"{self.sim_p90_h:.2f} h", f"{self.rec_p90_h:.2f} h"),
            ("per job: median |simulated - recorded| wait", f"{self.median_abs_h:.2f} h", ""),
            ("per job: rank correlation of waits (Spearman)", f"{self.spearman:.3f}", ""),
            ("KS distance of the wait distributions", f"{self.ks:.3f}", ""),
        ]

    def targets(self) -> dict[str, bool]:
        """Which of issue 23's targets these figures meet."""
        med_ok = abs(self.sim_median_h - self.rec_median_h) <= TARGET_MEDIAN_SLACK_H or (
            self.rec_median_h > 0
            and 1 / TARGET_MEDIAN_FACTOR
            <= self.sim_median_h / self.rec_median_h
            <= TARGET_MEDIAN_FACTOR
        )
        return {
            "spearman": self.spearman >= TARGET_SPEARMAN,
            "ks": self.ks <= TARGET_KS,
            "median": med_ok,
            "mean": _within(self.sim_mean_h, self.rec_mean_h, TARGET_REL),
            "p90": _within(self.sim_p90_h, self.rec_p90_h, TARGET_REL),
        }

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def _within(sim: float, rec: float, rel: float) -> bool:
    return abs(sim - rec) <= rel * rec if rec > 0 else sim == 0


def fidelity(sim_wait_s: np.ndarray, rec_wait_s: np.ndarray) -> Fidelity:
    """The figures of two arrays of waits in seconds, job by job (NaN pairs are dropped)."""
    sim = np.asarray(sim_wait_s, float)
    rec = np.asarray(rec_wait_s, float)
    ok = np.isfinite(sim) & np.isfinite(rec)
    sim, rec = sim[ok], rec[ok]
    if not sim.size:
        nan = math.nan
        return Fidelity(0, nan, nan, nan, nan, nan, nan, nan, nan, nan)
    (s50, s90), (r50, r90) = (np.percentile(w, [50, 90]) / 3600 for w in (sim, rec))
    return Fidelity(
        jobs=int(sim.size),
        sim_mean_h=float(sim.mean()) / 3600,
        rec_mean_h=float(rec.mean()) / 3600,
        sim_median_h=float(s50),
        rec_median_h=float(r50),
        sim_p90_h=float(s90),
        rec_p90_h=float(r90),
        median_abs_h=float(np.median(np.abs(sim - rec))) / 3600,
        spearman=spearman(sim, rec),
        ks=ks_distance(sim, rec),
    )


#: job size classes of :func:`by_size`, in the trace's units: (smallest, largest; None: no bound)
SIZE_CLASSES: tuple[tuple[int, int | None], ...] = ((1, 1), (2, 4), (5, 16), (17, 64), (65, None))


@dataclass(frozen=True, slots=True)
class SizeClass:
    """Mean simulated and recorded waits (hours) of the ``jobs`` of one size class."""

    label: str  # e.g. "2-4 nodes"
    jobs: int
    sim_mean_h: float
    rec_mean_h: float


def by_size(
    sim_wait_s: np.ndarray, rec_wait_s: np.ndarray, units: np.ndarray, unit: str = "units"
) -> list[SizeClass]:
    """The mean waits of each of ``SIZE_CLASSES`` that holds a job (NaN pairs dropped): an
    aggregate can match while large jobs wait far too long and small ones too little."""
    sim = np.asarray(sim_wait_s, float)
    rec = np.asarray(rec_wait_s, float)
    size = np.asarray(units)
    ok = np.isfinite(sim) & np.isfinite(rec)
    out = []
    for lo, hi in SIZE_CLASSES:
        m = ok & (size >= lo) & (size <= (hi if hi is not None else np.inf))
        if m.any():
            label = f"{lo} {unit}" if lo == hi else f"{lo}-{hi} {unit}" if hi else f">={lo} {unit}"
            out.append(
                SizeClass(
                    label, int(m.sum()), float(sim[m].mean()) / 3600, float(rec[m].mean()) / 3600
                )
            )
    return out


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation (average ranks for ties); NaN when either is constant."""
    if a.size < 2:
        return math.nan
    ra = pd.Series(a).rank(method="average").to_numpy()
    rb = pd.Series(b).rank(method="average").to_numpy()
    if ra.std() == 0 or rb.std() == 0:
        return math.nan
    return float(np.corrcoef(ra, rb)[0, 1])


def ks_distance(a: np.ndarray, b: np.ndarray) -> float:
    """The largest gap between the two empirical distribution functions."""
    a, b = np.sort(a), np.sort(b)
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / a.size
    fb = np.searchsorted(b, grid, side="right") / b.size
    return float(np.abs(fa - fb).max())


def plot_cdfs(ax, sim_wait_s: np.ndarray, rec_wait_s: np.ndarray) -> None:  # type: ignore[no-untyped-def]
    """Both wait distributions on one matplotlib axis (hours, symlog)."""
    for w, label in ((sim_wait_s, "simulated"), (rec_wait_s, "recorded")):
        w = np.sort(np.asarray(w, float)[np.isfinite(w)]) / 3600
        if w.size:
            ax.step(w, np.arange(1, w.size + 1) / w.size, where="post", label=label)
    ax.set_xscale("symlog", linthresh=0.1)
    ax.set(xlabel="wait (h)", ylabel="fraction of jobs", title="wait CDF")
    ax.legend(loc="lower right")
