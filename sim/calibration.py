"""Cluster calibration: the simulated size (and optionally a few scheduler settings) whose
waits best match the waits a trace recorded, stored once per trace.

A trace records when each job really started; the simulator knows nothing of the site's down
or reserved nodes, so the size to simulate is found by replaying the trace at several sizes
and comparing the simulated waits with the recorded ones (:func:`calibrate`). The error of a
candidate is the larger of the relative errors of the mean and the 90th-percentile wait over
the compared jobs (those submitted after the warm-up, see :func:`compared_jobs`).

One calibration per trace is stored as JSON keyed by the SHA-256 of the trace file
(:func:`store`), beside the trace when its folder is writable, else in the user cache folder;
the package ships some in ``sim/data/*.calibration.json``. :func:`stored_units` finds it for
a :class:`~sim.traces.model.Trace` wherever the file now lies, and ignores entries made from
other contents.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import numpy as np

from hpcbase.atomic import atomic_write
from sim.config import SlurmConfig
from sim.phases import gc_paused
from sim.traces.cache import dir_writable, user_cache_dir
from sim.traces.model import Trace

SCHEMA = 1
SUFFIX = ".calibration.json"
PACKAGE_DIR = Path(__file__).resolve().parent / "data"
#: Settings a calibration may search (SlurmConfig field names; durations in seconds).
KNOBS = (
    "bf_window",
    "bf_max_job_test",
    "bf_interval",
    "bf_resolution",
    "default_queue_depth",
    "sched_interval",
    "max_age",
)
DEFAULT_WARMUP = 0.1
T = TypeVar("T")


class CalibrationError(ValueError):
    """A trace that cannot be calibrated (no recorded starts, bad options)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One simulated cluster and how its waits compare with the recorded ones (hours)."""

    units: int
    knobs: dict[str, float]
    mean_h: float
    median_h: float
    p90_h: float
    p95_h: float
    mean_error: float  # (simulated - recorded) / recorded
    p90_error: float
    median_abs_error_h: float
    spearman: float
    never_started: int

    @property
    def score(self) -> float:
        """The error that is minimised: the larger relative error of mean and p90."""
        return max(abs(self.mean_error), abs(self.p90_error))


@dataclass(slots=True)
class Calibration:
    """The search's result for one trace file."""

    trace: str
    sha256: str
    unit: str
    jobs_compared: int
    since_s: float
    recorded: dict[str, float]
    config: dict[str, object]
    candidates: list[Candidate]
    created: str = ""
    path: str = ""  # where it was stored or loaded from

    @property
    def best(self) -> Candidate:
        return min(self.candidates, key=lambda c: (c.score, c.units))

    @property
    def units(self) -> int:
        return self.best.units

    @property
    def knobs(self) -> dict[str, float]:
        return dict(self.best.knobs)

    def to_json(self) -> str:
        data = {
            "schema": SCHEMA,
            "trace": self.trace,
            "sha256": self.sha256,
            "unit": self.unit,
            "best_units": self.units,
            "best_knobs": self.knobs,
            "jobs_compared": self.jobs_compared,
            "since_s": self.since_s,
            "recorded": self.recorded,
            "config": self.config,
            "created": self.created,
            "candidates": [dataclasses.asdict(c) for c in self.candidates],
        }
        return json.dumps(data, indent=1, allow_nan=True) + "\n"

    @classmethod
    def from_json(cls, text: str, path: str = "") -> Calibration:
        d = json.loads(text)
        if d.get("schema") != SCHEMA:
            raise ValueError(f"unknown calibration schema {d.get('schema')!r}")
        cands = [Candidate(**c) for c in d["candidates"]]
        if not cands:
            raise ValueError("no candidates")
        return cls(
            d["trace"],
            d["sha256"],
            d["unit"],
            int(d["jobs_compared"]),
            float(d["since_s"]),
            d["recorded"],
            d["config"],
            cands,
            d.get("created", ""),
            path,
        )


# ---------------------------------------------------------------- the comparison


def compared_jobs(
    trace: Trace, warmup: float = DEFAULT_WARMUP, since: float | None = None
) -> tuple[np.ndarray, float]:
    """Indices of the jobs whose waits are compared, and the submit time they start from.

    Jobs need a recorded start. The simulated cluster starts empty at the first submit, the
    real one was busy (or, for a new partition, not open yet: jobs submitted before the
    first recorded start waited for the opening), so by default the comparison starts
    ``warmup`` x the trace's span after the first recorded start; ``since`` (seconds from
    the trace's start) overrides that.
    """
    rec = trace.recorded_start
    known = np.isfinite(rec)
    if not known.any():
        raise CalibrationError(f"{trace.source}: the trace records no start times to compare")
    if since is None:
        span = float(trace.submit[-1] - trace.submit[0])
        since = float(np.nanmin(rec)) + warmup * span
    idx = np.flatnonzero(known & (trace.submit >= since))
    if idx.size < 10:
        raise CalibrationError(
            f"{trace.source}: only {idx.size} jobs with a recorded start after the warm-up "
            f"({since / 86400:.1f} days); use a smaller --warmup or --since"
        )
    return idx, since


def wait_figures(wait_s: np.ndarray) -> dict[str, float]:
    """Mean, median, p90, p95 of waits, in hours."""
    q50, q90, q95 = np.percentile(wait_s, [50, 90, 95]) / 3600
    return {
        "mean_h": float(wait_s.mean()) / 3600,
        "median_h": float(q50),
        "p90_h": float(q90),
        "p95_h": float(q95),
    }


def simulated_waits(trace: Trace, units: int, cfg: SlurmConfig) -> np.ndarray:
    """Each trace job's simulated wait (s) on ``units``; NaN for jobs never started."""
    from sim.engine import Simulator

    sim = Simulator(trace, cfg, total_units=units)
    with gc_paused():
        sim.run()
    wait = np.full(len(trace), np.nan)
    recs = sim.records
    idx = np.fromiter((r.trace_index for r in recs), np.int64, len(recs))
    start = np.fromiter((r.start for r in recs), np.float64, len(recs))
    ok = idx >= 0
    wait[idx[ok]] = start[ok] - trace.submit[idx[ok]]
    return wait


def evaluate(
    trace: Trace, idx: np.ndarray, units: int, cfg: SlurmConfig, knobs: dict[str, float]
) -> Candidate:
    """Replay on ``units`` with ``knobs`` applied and compare the waits of jobs ``idx``."""
    from sim.fidelity import spearman

    wait = simulated_waits(trace, units, with_knobs(cfg, knobs))[idx]
    rec = (trace.recorded_start - trace.submit)[idx]
    never = int(np.isnan(wait).sum())
    # a job that never started waited at least until the last simulated event
    sim = np.where(np.isnan(wait), np.nanmax(wait) if never < wait.size else 0.0, wait)
    s, r = wait_figures(sim), wait_figures(rec)
    return Candidate(
        units=units,
        knobs=dict(knobs),
        mean_h=s["mean_h"],
        median_h=s["median_h"],
        p90_h=s["p90_h"],
        p95_h=s["p95_h"],
        mean_error=_rel(s["mean_h"], r["mean_h"]),
        p90_error=_rel(s["p90_h"], r["p90_h"]),
        median_abs_error_h=float(np.median(np.abs(sim - rec))) / 3600,
        spearman=spearman(sim, rec),
        never_started=never,
    )


def with_knobs(cfg: SlurmConfig, knobs: Mapping[str, float]) -> SlurmConfig:
    """A copy of ``cfg`` with the searched settings set (ints stay ints)."""
    out = dataclasses.replace(cfg)
    for name, value in knobs.items():
        if name not in KNOBS:
            raise CalibrationError(f"cannot set {name!r}; settable: {', '.join(KNOBS)}")
        current = getattr(out, name)
        setattr(out, name, int(value) if isinstance(current, int) else float(value))
    return out


def _rel(sim: float, rec: float) -> float:
    if rec > 0:
        return (sim - rec) / rec
    return 0.0 if sim == 0 else math.inf


# ---------------------------------------------------------------- the search

_WORKER: dict[str, object] = {}


def _init_worker(trace: Trace, idx: np.ndarray, cfg: SlurmConfig) -> None:
    _WORKER.update(trace=trace, idx=idx, cfg=cfg)


def _work(task: tuple[int, dict[str, float]]) -> Candidate:
    units, knobs = task
    return evaluate(_WORKER["trace"], _WORKER["idx"], units, _WORKER["cfg"], knobs)  # type: ignore[arg-type]


def size_range(trace: Trace) -> tuple[int, int]:
    """Default search range: the recorded peak concurrent use (a smaller cluster cannot have
    run the recorded schedule) .. 1.25 x it; the largest job .. 2 x it when the trace records
    no starts."""
    from sim.availability import recorded_usage

    lo = int(trace.units.max())
    peak = recorded_usage(trace).peak
    if not peak:
        return lo, 2 * lo
    lo = max(lo, peak)
    return lo, max(lo + 1, math.ceil(1.25 * lo))


def calibrate(
    trace: Trace,
    cfg: SlurmConfig | None = None,
    *,
    lo: int | None = None,
    hi: int | None = None,
    points: int = 8,
    knob_grid: Mapping[str, Sequence[float]] | None = None,
    warmup: float = DEFAULT_WARMUP,
    since: float | None = None,
    workers: int | None = None,
    on_result: Callable[[Candidate], None] | None = None,
) -> Calibration:
    """Search cluster sizes in ``[lo, hi]`` (default :func:`size_range`): ``points`` evenly
    spaced sizes, then around the best one with halving steps down to 1; with
    ``knob_grid`` (SlurmConfig field -> values, see :data:`KNOBS`) the search runs for every
    combination. Replays run in ``workers`` processes (default: the CPUs available).
    ``on_result`` is called with each candidate as it finishes (progress display).
    """
    cfg = cfg or SlurmConfig()
    default_lo, default_hi = size_range(trace)
    lo = max(lo or default_lo, int(trace.units.max()))
    hi = hi or max(default_hi, lo)
    if hi < lo:
        raise CalibrationError(f"empty size range {lo}..{hi} (the largest job has {lo} units)")
    if points < 2:
        raise CalibrationError("--points must be at least 2")
    combos = _combos(knob_grid or {})
    idx, since = compared_jobs(trace, warmup, since)
    workers = max(1, workers or len(os.sched_getaffinity(0)))
    done: dict[tuple[int, tuple], Candidate] = {}

    def run(
        pool: ProcessPoolExecutor | None, tasks: Iterable[tuple[int, dict[str, float]]]
    ) -> None:
        todo = [t for t in tasks if (t[0], tuple(sorted(t[1].items()))) not in done]
        results = pool.map(_work, todo) if pool is not None else map(_work, todo)
        for c in results:
            done[(c.units, tuple(sorted(c.knobs.items())))] = c
            if on_result is not None:
                on_result(c)

    _init_worker(trace, idx, cfg)
    pool = (
        ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(trace, idx, cfg))
        if workers > 1
        else None
    )
    try:
        step = max(1, math.ceil((hi - lo) / (points - 1)))
        coarse = sorted({min(hi, lo + k * step) for k in range(points)} | {hi})
        run(pool, [(u, k) for k in combos for u in coarse])
        for knobs in combos:
            key = tuple(sorted(knobs.items()))
            s = step
            while s > 1:
                s = (s + 1) // 2
                best = min(
                    (c for (u, kk), c in done.items() if kk == key),
                    key=lambda c: (c.score, c.units),
                )
                run(pool, [(u, knobs) for u in (best.units - s, best.units + s) if lo <= u <= hi])
    finally:
        if pool is not None:
            pool.shutdown()
    rec = wait_figures((trace.recorded_start - trace.submit)[idx])
    return Calibration(
        trace=Path(trace.source).name,
        sha256=trace.digest or _file_digest(trace.source) or "",
        unit=trace.unit,
        jobs_compared=int(idx.size),
        since_s=since,
        recorded=rec,
        config=config_summary(cfg),
        candidates=sorted(done.values(), key=lambda c: (tuple(sorted(c.knobs.items())), c.units)),
        created=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )


def _combos(grid: Mapping[str, Sequence[float]]) -> list[dict[str, float]]:
    for name in grid:
        if name not in KNOBS:
            raise CalibrationError(f"cannot search {name!r}; searchable: {', '.join(KNOBS)}")
    combos: list[dict[str, float]] = [{}]
    for name, values in grid.items():
        combos = [{**c, name: v} for c in combos for v in values]
    return combos


def config_summary(cfg: SlurmConfig) -> dict[str, object]:
    """The scheduler settings that differ from Slurm's defaults (plus the config's file)."""
    default = SlurmConfig()
    out: dict[str, object] = {}
    for f in dataclasses.fields(SlurmConfig):
        if f.name in ("partitions", "source", "nodes", "cpus", "node_names", "node_cpus"):
            continue
        value = getattr(cfg, f.name)
        if value != getattr(default, f.name):
            out[f.name] = value
    if cfg.source:
        out["source"] = cfg.source
    return out


# ---------------------------------------------------------------- storing and finding


def store(
    cal: Calibration, trace_path: str | os.PathLike[str], directory: Path | None = None
) -> Path:
    """Write the calibration atomically: into ``directory`` when given, else beside the
    trace (``NAME.calibration.json``) when that folder is writable, else the user cache
    (``calibrations/SHA256.json``). Returns the path; raises ``OSError``."""
    target = store_beside(cal.to_json(), cal.sha256, trace_path, SUFFIX, "calibrations", directory)
    cal.path = str(target)
    return target


def store_beside(
    text: str,
    digest: str,
    trace_path: str | os.PathLike[str],
    suffix: str,
    cache_dir: str,
    directory: Path | None = None,
) -> Path:
    """Write ``text`` atomically into ``directory`` (``NAME{suffix}``) when given, else beside
    the trace when that folder is writable, else the user cache (``{cache_dir}/DIGEST.json``).
    The one place calibrations and site profiles (sim/profile.py) are stored."""
    trace_path = Path(trace_path)
    if directory is not None:
        target = directory / (trace_path.name + suffix)
    elif dir_writable(trace_path.parent):
        target = trace_path.with_name(trace_path.name + suffix)
    else:
        target = user_cache_dir() / cache_dir / f"{digest}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, text.encode())
    return target


def find_stored(
    trace: Trace, suffix: str, cache_dir: str, parse: Callable[[str, str], T]
) -> T | None:
    """The stored entry made from this trace's file content (``parse(text, path)`` has a
    ``sha256``): beside the trace, in the user cache, or shipped in ``sim/data``."""
    digest = trace.digest or _file_digest(trace.source)
    if not digest:
        return None
    places: list[Path] = []
    if trace.source:
        src = Path(trace.source)
        places.append(src.with_name(src.name + suffix))
    places.append(user_cache_dir() / cache_dir / f"{digest}.json")
    places += sorted(PACKAGE_DIR.glob("*" + suffix))
    for p in places:
        try:
            entry = parse(p.read_text(), str(p))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if getattr(entry, "sha256", None) == digest:
            return entry
    return None


def load(trace: Trace) -> Calibration | None:
    """The stored calibration made from this trace's file content, or None."""
    return find_stored(trace, SUFFIX, "calibrations", Calibration.from_json)


def stored_units(trace: Trace) -> int | None:
    """The calibrated cluster size for this trace (in its unit), or None when none stored."""
    cal = load(trace)
    return cal.units if cal is not None else None


def _file_digest(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else None
    except OSError:
        return None
