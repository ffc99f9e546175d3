"""Synthetic workloads after Lublin & Feitelson's model, and ``hpcsim generate``.

The model (U. Lublin, D. G. Feitelson, "The workload on parallel supercomputers: modeling
the characteristics of rigid jobs", JPDC 63(11), 2003), as used here with its whole-sample
parameters (no batch/interactive split):

* size: serial (1 unit) with probability ``serial_prob``; otherwise ``log2(size)`` is drawn
  from a two-stage uniform (``u_low..u_med`` with probability ``u_prob``, else
  ``u_med..u_hi``; ``u_hi = log2(total_units)``, ``u_med = u_hi - u_med_gap``) and, with
  probability ``pow2_prob``, rounded to a whole power of two;
* run time: ``exp(hyper-gamma)``: ``Gamma(a1, b1)`` with probability ``p = pa*size + pb``
  (clipped to [0, 1]), else ``Gamma(a2, b2)``, redrawn above ``max_log_runtime`` -- bigger
  jobs run longer;
* arrivals: gaps of ``exp(Gamma(a_arr*arar, b_arr))`` seconds of "rush-hour" time, spent
  through a daily cycle of 48 half-hour buckets weighted by a ``Gamma(a_num, b_num)`` density
  (peak early afternoon), starting at midnight;
* ``load``: when given, all gaps are scaled so that the offered load
  ``sum(runtime*size) / (total_units * last_submit)`` equals it (the daily shape is kept).

Additions outside the paper (it models no limits or users): requested limit =
run time x an overestimate drawn log-uniformly from [1, ``overestimate_max``], rounded up to
the next common limit (5 min .. 48 h); with probability ``p_max_limit`` the user simply asks
for ``max_limit``; run times are capped at ``max_limit``. Users are drawn from a Zipf(1)
law over ``round(sqrt(n_jobs))`` users (at most 1000), groups are users modulo
``n_users // 8``. Everything is drawn with numpy from one seed, vectorised.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from hpcbase.slurmtime import parse_duration
from sim.traces.assemble import assemble
from sim.traces.diagnostics import Diagnostics
from sim.traces.model import Trace
from sim.traces.swf import write_swf

__all__ = ["LublinParams", "generate", "main", "offered_load", "write_swf"]

BUCKETS = 48
BUCKET_SECONDS = 86400 // BUCKETS
#: Common requested limits, minutes (rounded up to; cut at ``max_limit``).
COMMON_LIMITS_MIN = (
    5,
    10,
    15,
    20,
    30,
    45,
    60,
    90,
    120,
    180,
    240,
    360,
    480,
    720,
    960,
    1440,
    2160,
    2880,
)
DEFAULT_START_EPOCH = 1704067200.0  # 2024-01-01T00:00:00Z, a midnight


@dataclass(frozen=True)
class LublinParams:
    """Model parameters; defaults are Lublin & Feitelson's whole-sample fit."""

    serial_prob: float = 0.244
    pow2_prob: float = 0.576
    u_low: float = 0.8
    u_med_gap: float = 2.5
    u_prob: float = 0.86
    a1: float = 4.2
    b1: float = 0.94
    a2: float = 312.0
    b2: float = 0.03
    pa: float = -0.0054
    pb: float = 0.78
    max_log_runtime: float = 12.0
    a_arr: float = 10.2303
    b_arr: float = 0.4871
    arar: float = 1.0225
    a_num: float = 8.1737
    b_num: float = 3.9631
    max_log_gap: float = 13.0
    day_start_bucket: int = 11
    overestimate_max: float = 10.0
    p_max_limit: float = 0.1
    max_limit: float = 48 * 3600.0


def generate(
    n_jobs: int,
    total_units: int,
    seed: int,
    load: float | None = None,
    *,
    params: LublinParams | None = None,
    start_epoch: float = DEFAULT_START_EPOCH,
) -> Trace:
    """A trace of ``n_jobs`` jobs for a machine of ``total_units`` processors.

    Deterministic for a given seed. ``load`` (offered load as a fraction of capacity, > 0)
    rescales the arrival gaps; None keeps the model's own arrival rate.
    """
    if n_jobs < 1:
        raise ValueError(f"n_jobs must be at least 1, not {n_jobs}")
    if total_units < 1:
        raise ValueError(f"total_units must be at least 1, not {total_units}")
    if load is not None and not (0 < load < math.inf):
        raise ValueError(f"load must be a positive fraction of capacity, not {load}")
    p = params or LublinParams()
    rng = np.random.default_rng(seed)
    size = _sizes(rng, n_jobs, total_units, p)
    runtime = np.minimum(_runtimes(rng, size, p), p.max_limit)
    limit = _limits(rng, runtime, p)
    virtual = _virtual_arrivals(rng, n_jobs, p)
    weights = daily_weights(p)
    if load is not None and n_jobs > 1:
        span = float(np.sum(runtime * size)) / (total_units * load)
        virtual *= _to_virtual(np.array([span]), weights)[0] / virtual[-1]
    submit = np.floor(_to_clock(virtual, weights))
    n_users = int(min(1000, max(1, round(math.sqrt(n_jobs)))))
    zipf = 1.0 / np.arange(1, n_users + 1)
    users = rng.choice(n_users, size=n_jobs, p=zipf / zipf.sum()) + 1
    groups = (users - 1) % max(1, n_users // 8) + 1
    return assemble(
        Diagnostics("<generated>"),
        fmt="generated",
        unit="procs",
        lines=np.arange(1, n_jobs + 1),
        job_id=np.arange(1, n_jobs + 1),
        submit=submit,
        runtime=runtime,
        limit=limit,
        units=size,
        users=users,
        groups=groups,
        exit_code=np.zeros(n_jobs, dtype=np.int64),
        recorded_start=np.full(n_jobs, np.nan),
        names=[],
        epoch_base=start_epoch,
        total_units=total_units,
    )


def offered_load(trace: Trace) -> float:
    """``sum(runtime*units) / (total_units * last submit)`` (Lublin's definition)."""
    span = float(trace.submit.max() - trace.submit.min())
    if span <= 0 or not trace.total_units:
        return math.inf
    return float(np.sum(trace.runtime * trace.units)) / (trace.total_units * span)


def _sizes(rng: np.random.Generator, n: int, total: int, p: LublinParams) -> np.ndarray:
    u_hi = math.log2(total)
    u_med = min(max(u_hi - p.u_med_gap, p.u_low), max(u_hi, p.u_low))
    lower = rng.random(n) < p.u_prob
    par = np.where(lower, rng.uniform(p.u_low, u_med, n), rng.uniform(u_med, max(u_hi, u_med), n))
    kind = rng.random(n)
    pow2 = (kind > p.serial_prob) & (kind <= p.serial_prob + p.pow2_prob)
    par = np.where(pow2, np.floor(par + 0.5), par)
    size = np.floor(np.exp2(par) + 0.5).astype(np.int64)
    size[kind <= p.serial_prob] = 1
    return np.clip(size, 1, total)


def _runtimes(rng: np.random.Generator, size: np.ndarray, p: LublinParams) -> np.ndarray:
    first = rng.random(size.size) <= np.clip(p.pa * size + p.pb, 0.0, 1.0)
    shape = np.where(first, p.a1, p.a2)
    scale = np.where(first, p.b1, p.b2)
    log_rt = _bounded_gamma(rng, shape, scale, p.max_log_runtime)
    return np.floor(np.exp(log_rt))


def _bounded_gamma(rng: np.random.Generator, shape, scale, bound: float) -> np.ndarray:
    """Gamma draws, redrawn where above ``bound`` (as the model's rejection loop does)."""
    shape = np.broadcast_to(np.asarray(shape, dtype=np.float64), np.shape(scale) or (1,))
    scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), shape.shape)
    out = rng.gamma(shape, scale)
    for _ in range(1000):
        over = np.flatnonzero(out > bound)
        if not over.size:
            return out
        out[over] = rng.gamma(shape[over], scale[over])
    out[out > bound] = bound
    return out


def _limits(rng: np.random.Generator, runtime: np.ndarray, p: LublinParams) -> np.ndarray:
    common = np.array(
        [m * 60.0 for m in COMMON_LIMITS_MIN if m * 60.0 < p.max_limit] + [p.max_limit]
    )
    factor = np.exp(rng.uniform(0.0, math.log(p.overestimate_max), runtime.size))
    want = np.maximum(runtime * factor, 1.0)
    limit = common[np.minimum(np.searchsorted(common, want, side="left"), common.size - 1)]
    limit[rng.random(runtime.size) < p.p_max_limit] = p.max_limit
    return limit


def _virtual_arrivals(rng: np.random.Generator, n: int, p: LublinParams) -> np.ndarray:
    """Cumulative arrival "points" (bucket units of rush-hour time); the first job at 0."""
    shape = np.full(n - 1, p.a_arr * p.arar)
    gaps = np.exp(_bounded_gamma(rng, shape, np.full(n - 1, p.b_arr), p.max_log_gap))
    return np.concatenate(([0.0], np.cumsum(gaps / BUCKET_SECONDS)))


def daily_weights(p: LublinParams) -> np.ndarray:
    """Arrival weight of each half-hour bucket from midnight, mean 1."""
    w = np.zeros(BUCKETS)
    for i in range(p.day_start_bucket, BUCKETS + p.day_start_bucket):
        w[(i - 1) % BUCKETS] = _gamma_cdf(i + 0.5, p.a_num, p.b_num) - _gamma_cdf(
            i - 0.5, p.a_num, p.b_num
        )
    return w / w.mean()


def _to_clock(points: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Seconds from midnight at which ``points`` of arrival budget have been spent."""
    cum = np.concatenate(([0.0], np.cumsum(weights)))
    day = np.floor(points / BUCKETS)
    edges = np.arange(BUCKETS + 1) * BUCKET_SECONDS
    return day * 86400.0 + np.interp(points - day * BUCKETS, cum, edges)


def _to_virtual(seconds: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The inverse of :func:`_to_clock`."""
    cum = np.concatenate(([0.0], np.cumsum(weights)))
    day = np.floor(seconds / 86400.0)
    edges = np.arange(BUCKETS + 1) * BUCKET_SECONDS
    return day * BUCKETS + np.interp(seconds - day * 86400.0, edges, cum)


def _gamma_cdf(x: float, shape: float, scale: float) -> float:
    """Regularised lower incomplete gamma P(shape, x/scale), by its power series."""
    z = x / scale
    if z <= 0:
        return 0.0
    term = total = 1.0 / shape
    k = shape
    for _ in range(10000):
        k += 1.0
        term *= z / k
        total += term
        if term < total * 1e-16:
            break
    return total * math.exp(-z + shape * math.log(z) - math.lgamma(shape))


def main(argv: Sequence[str] | None = None) -> int:
    """``hpcsim generate``: write a synthetic workload as SWF."""
    ap = argparse.ArgumentParser(
        prog="hpcsim generate",
        description="Write a synthetic Lublin-Feitelson-like workload as SWF (docs/traces.md).",
    )
    ap.add_argument("--jobs", type=int, required=True, help="number of jobs")
    ap.add_argument("--units", type=int, required=True, help="machine size (processors)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument(
        "--load",
        type=float,
        default=None,
        help="target offered load as a fraction of capacity, e.g. 0.8 "
        "(default: the model's own arrival rate)",
    )
    ap.add_argument(
        "--max-limit",
        default="2-00:00:00",
        help="largest requested limit, Slurm format (default 2-00:00:00)",
    )
    ap.add_argument(
        "--start",
        default="2024-01-01T00:00:00+00:00",
        help="ISO time of the first submit (default 2024-01-01T00:00:00+00:00)",
    )
    ap.add_argument("--out", required=True, help="output SWF file (.gz to compress)")
    args = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        max_limit = parse_duration(args.max_limit)
        if not 60 <= max_limit < math.inf:
            raise ValueError(f"--max-limit must be at least a minute and finite: {args.max_limit}")
        start = datetime.fromisoformat(args.start)
        if start.tzinfo is None:
            start = start.replace(tzinfo=UTC)
        trace = generate(
            args.jobs,
            args.units,
            args.seed,
            args.load,
            params=LublinParams(max_limit=max_limit),
            start_epoch=start.timestamp(),
        )
    except ValueError as exc:
        print(f"hpcsim generate: {exc}", file=sys.stderr)
        return 2
    try:
        write_swf(trace, args.out)
    except OSError as exc:
        print(f"hpcsim generate: cannot write {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    days = float(trace.submit[-1]) / 86400.0
    print(
        f"wrote {len(trace)} jobs to {args.out}: {days:.1f} days of submits, "
        f"offered load {offered_load(trace):.3f} on {args.units} procs"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
