"""The observation builder against its straightforward first version (the reference kept
here): the faster builder must give the very same bits on a real queue stream."""

from __future__ import annotations

import math

import numpy as np

from hpcbase.snapshot import QueueSnapshot
from mirage.observation import FIT_RECENT, N_FEATURES, ChainState, ObservationBuilder, Q


def _q(sorted_values: np.ndarray, q: float) -> float:
    """The ``q`` quantile of an ascending array by the nearest-rank rule (0.0 if empty)."""
    n = sorted_values.shape[0]
    return float(sorted_values[min(int(q * n), n - 1)]) if n else 0.0


class ReferenceBuilder(ObservationBuilder):
    """The builder's tracking and feature code as first written (NumPy calls throughout)."""

    def _wait(self, seconds: np.ndarray | float) -> np.ndarray | float:
        return np.log1p(np.maximum(seconds, 0.0) / 3600.0) * self._wait_norm

    def _track(self, snap: QueueSnapshot) -> None:
        run_ids = snap.run_id
        if run_ids.shape[0] and not math.isnan(self._prev_time):
            new = ~np.isin(run_ids, self._prev_run_ids, assume_unique=True)
            if new.any():
                ids = run_ids[new]
                starts = snap.run_start[new]
                order = np.argsort(self._prev_ids)
                pos = np.searchsorted(self._prev_ids, ids, sorter=order)
                pos = np.minimum(pos, max(len(order) - 1, 0))
                if len(order):
                    hit = self._prev_ids[order[pos]] == ids
                    submits = np.where(hit, self._prev_submit[order[pos]], np.nan)
                else:
                    submits = np.full(ids.shape, np.nan)
                waits = np.where(np.isnan(submits), 0.0, starts - submits)
                self._start_time = np.concatenate([self._start_time, starts])
                self._start_wait = np.concatenate([self._start_wait, np.maximum(waits, 0.0)])
                units = snap.run_units[new].astype(np.float64)
                self._start_units = np.concatenate([self._start_units, units])
        keep = self._start_time >= snap.time - self.wait_horizon
        if not keep.all():
            self._start_time = self._start_time[keep]
            self._start_wait = self._start_wait[keep]
            self._start_units = self._start_units[keep]
        self._fit_cache = {}
        self._track_ends(snap)
        self._prev_ids = snap.pend_id.copy()
        self._prev_submit = snap.pend_submit.copy()
        self._prev_run_ids = run_ids.copy()
        self._prev_run_start = snap.run_start.astype(np.float64)
        self._prev_run_limit = snap.run_limit.astype(np.float64)
        self._prev_run_units = snap.run_units.astype(np.float64)
        self._prev_time = snap.time

    def _track_ends(self, snap: QueueSnapshot) -> None:
        """Jobs running at the previous sample and gone now ended in between: record how
        long they ran (to the middle of the interval, at most their limit)."""
        if self._prev_run_ids.shape[0] and not math.isnan(self._prev_time):
            gone = ~np.isin(self._prev_run_ids, snap.run_id, assume_unique=True)
            if gone.any():
                mid = 0.5 * (self._prev_time + snap.time)
                limit = self._prev_run_limit[gone]
                used = np.clip(mid - self._prev_run_start[gone], 0.0, limit)
                self._end_time = np.concatenate([self._end_time, np.full(used.shape, mid)])
                self._end_used = np.concatenate([self._end_used, used])
                self._end_units = np.concatenate([self._end_units, self._prev_run_units[gone]])
                self._end_limit = np.concatenate([self._end_limit, limit])
        keep = self._end_time >= snap.time - self.wait_horizon
        if not keep.all():
            self._end_time = self._end_time[keep]
            self._end_used = self._end_used[keep]
            self._end_units = self._end_units[keep]
            self._end_limit = self._end_limit[keep]

    def queue_features(self, snap: QueueSnapshot) -> np.ndarray:
        """The summary row of one snapshot (does not change the history)."""
        u = 1.0 / self.total_units
        lim = 1.0 / self.max_limit
        row = np.zeros(N_FEATURES, np.float32)
        pu = snap.pend_units
        ru = snap.run_units
        row[Q["pend_count"]] = math.log1p(pu.shape[0]) * self._count_norm
        row[Q["run_count"]] = math.log1p(ru.shape[0]) * self._count_norm
        row[Q["pend_units"]] = pu.sum() * u
        eligible = ~np.isnan(snap.pend_eligible)
        row[Q["pend_eligible_units"]] = pu[eligible].sum() * u
        row[Q["run_units"]] = ru.sum() * u
        if pu.shape[0]:
            self._pending_features(row, snap, eligible, u, lim)
        if ru.shape[0]:
            self._running_features(row, snap, u, lim)
        waits = self._start_wait
        if waits.shape[0]:
            sw = np.sort(waits)
            row[Q["started_count"]] = math.log1p(sw.shape[0]) * self._count_norm
            row[Q["started_wait_mean"]] = self._wait(float(sw.mean()))
            row[Q["started_wait_p50"]] = self._wait(_q(sw, 0.5))
            row[Q["started_wait_p90"]] = self._wait(_q(sw, 0.9))
            row[Q["started_wait_max"]] = self._wait(sw[-1])
        if self._end_time.shape[0]:
            self._ended_features(row)
        return row

    def _fit_features(self, units: int) -> tuple[float, ...]:
        fits = self._start_units <= units
        waits = self._start_wait[fits]
        if not waits.shape[0]:
            return (0.0,) * 6
        sw = np.sort(waits)
        recent = waits[self._start_time[fits] >= self._prev_time - FIT_RECENT]
        return (
            math.log1p(sw.shape[0]) * self._count_norm,
            float(self._wait(float(sw.mean()))),
            float(self._wait(_q(sw, 0.5))),
            float(self._wait(_q(sw, 0.9))),
            math.log1p(recent.shape[0]) * self._count_norm,
            float(self._wait(float(recent.mean()))) if recent.shape[0] else 0.0,
        )

    def _ended_features(self, row: np.ndarray) -> None:
        limit = np.minimum(self._end_limit, self.max_limit)
        share = np.sort(np.where(limit > 0, np.minimum(self._end_used, limit) / limit, 1.0))
        row[Q["ended_count"]] = math.log1p(share.shape[0]) * self._count_norm
        row[Q["ended_used_mean"]] = float(share.mean())
        row[Q["ended_used_p50"]] = _q(share, 0.5)
        promised = float(self._end_units @ limit)
        if promised > 0:
            row[Q["ended_work_ratio"]] = (
                float(self._end_units @ np.minimum(self._end_used, limit)) / promised
            )

    def _pending_features(
        self, row: np.ndarray, snap: QueueSnapshot, eligible: np.ndarray, u: float, lim: float
    ) -> None:
        pu = snap.pend_units
        pl = np.sort(snap.pend_limit)
        row[Q["pend_limit_p50"]] = _q(pl, 0.5) * lim
        row[Q["pend_limit_p90"]] = _q(pl, 0.9) * lim
        pw = np.sort(snap.time - snap.pend_submit)
        row[Q["pend_wait_p50"]] = self._wait(_q(pw, 0.5))
        row[Q["pend_wait_p90"]] = self._wait(_q(pw, 0.9))
        row[Q["pend_wait_max"]] = self._wait(pw[-1])
        ps = np.sort(pu)
        row[Q["pend_job_units_p50"]] = _q(ps, 0.5) * u
        row[Q["pend_job_units_p90"]] = _q(ps, 0.9) * u
        work = pu * np.minimum(snap.pend_limit, self.max_limit)
        row[Q["pend_work"]] = work.sum() * u * lim
        row[Q["pend_eligible_work"]] = work[eligible].sum() * u * lim

    def _running_features(self, row: np.ndarray, snap: QueueSnapshot, u: float, lim: float) -> None:
        ru = snap.run_units
        row[Q["run_limit_p50"]] = _q(np.sort(snap.run_limit), 0.5) * lim
        elapsed = snap.time - snap.run_start
        row[Q["run_elapsed_p50"]] = _q(np.sort(elapsed), 0.5) * lim
        remaining = np.maximum(snap.run_limit - elapsed, 0.0)
        order = np.argsort(remaining)
        rem = remaining[order]
        row[Q["run_remaining_p10"]] = _q(rem, 0.1) * lim
        row[Q["run_remaining_p50"]] = _q(rem, 0.5) * lim
        freed = np.cumsum(ru[order])
        for name, horizon in (
            ("free_in_1h", 3600.0),
            ("free_in_6h", 6 * 3600.0),
            ("free_in_24h", 24 * 3600.0),
        ):
            k = int(np.searchsorted(rem, horizon, side="right"))
            row[Q[name]] = (freed[k - 1] if k else 0) * u
        row[Q["run_work"]] = float(ru @ np.minimum(rem, self.max_limit)) * u * lim
        own = float(ru @ np.minimum(remaining, self.max_limit))
        row[Q["run_remaining_work"]] = own * u * lim


def _stream(world, days: float = 4.0) -> list[QueueSnapshot]:
    """Queue snapshots every sample interval over ``days`` of the world's busiest stretch."""
    sim = world.sim
    t0 = world.splits["train"][0][0] + 6 * 86400.0
    world.restore(world.checkpoint_before(t0))
    out = []
    t = sim.now
    while t < t0 + days * 86400.0:
        t += world.sample_interval
        sim.advance(t)
        out.append(sim.queue_snapshot())
    return out


def test_builder_equals_its_reference_on_a_real_stream(small_world):
    snaps = _stream(small_world)
    fast = small_world.new_builder()
    ref = ReferenceBuilder(fast.total_units, fast.max_limit, fast.window, fast.sample_interval)
    busy = 0
    for i, s in enumerate(snaps):
        a, b = fast.push(s), ref.push(s)
        assert a.dtype == b.dtype == np.float32 and a.tobytes() == b.tobytes(), i
        busy += len(s.pend_id) > 0 and len(s.run_id) > 0 and len(fast.recent_waits()) > 0
        chain = ChainState(
            now=s.time,
            pred_units=2,
            pred_limit=small_world.max_limit,
            pred_submit=s.time - 7200.0 * (i % 3),
            pred_start=math.nan if i % 4 == 0 else s.time - 600.0 * (i % 50),
            succ_units=2,
            succ_limit=small_world.max_limit,
            est_start=math.nan if i % 5 == 0 else s.time + 1000.0 * (i % 30) - 3000.0,
        )
        assert fast.observe(chain).tobytes() == ref.observe(chain).tobytes(), i
    got, want = fast.state(), ref.state()
    for field in want.__slots__:
        x, y = getattr(got, field), getattr(want, field)
        assert np.array_equal(x, y, equal_nan=True) if isinstance(y, np.ndarray) else x == y
    assert len(snaps) >= 500 and busy >= 250, (len(snaps), busy)


def _random_snapshot(rng: np.random.Generator, t: float, n_pend: int, n_run: int) -> QueueSnapshot:
    """A queue of random sizes, limits (some unlimited) and times (sizes cross NumPy's
    pairwise-sum blocks)."""
    ids = rng.permutation(10 * (n_pend + n_run) + 10)[: n_pend + n_run].astype(np.int64)
    limits = rng.choice([600.0, 3600.0, 86400.0, 172800.0, 300000.0, np.inf], n_pend + n_run)
    eligible = np.where(rng.random(n_pend) < 0.2, np.nan, t - rng.uniform(0, 1e4, n_pend))
    return QueueSnapshot(
        time=t,
        total_units=64,
        pend_id=ids[:n_pend],
        pend_units=rng.integers(1, 65, n_pend).astype(np.int64),
        pend_limit=limits[:n_pend],
        pend_submit=t - rng.lognormal(8.0, 2.0, n_pend),
        pend_eligible=eligible,
        run_id=ids[n_pend:],
        run_units=rng.integers(1, 65, n_run).astype(np.int64),
        run_limit=limits[n_pend:],
        run_start=t - rng.uniform(0.0, 1.2, n_run) * np.minimum(limits[n_pend:], 4e5),
    )


def test_compiled_row_and_fit_features_equal_the_reference_on_random_queues():
    # random queues of 0 to 1,000 jobs: the compiled core (mirage/_obsrow.c) against the
    # NumPy reference, bit for bit, row and context (fit_*) features
    rng = np.random.default_rng(3)
    fast = ObservationBuilder(64, 172800.0, window=4)
    ref = ReferenceBuilder(64, 172800.0, window=4)
    t = 0.0
    for i in range(300):
        t += 600.0
        n_pend, n_run = (int(x) for x in rng.choice([0, 1, 7, 8, 9, 129, 300, 1000], 2))
        s = _random_snapshot(rng, t, n_pend, n_run)
        a, b = fast.push(s), ref.push(s)
        assert a.tobytes() == b.tobytes(), (i, np.flatnonzero(a != b))
        for units in (1, 8, 64):
            chain = ChainState(t, units, 86400.0, t - 500.0, t - 100.0, units, 86400.0)
            assert fast.observe(chain).tobytes() == ref.observe(chain).tobytes(), (i, units)


def test_compiled_row_orders_nan_as_numpy_does():
    # NaN where a live squeue should never put one: sorted last, as np.sort does, so the
    # rows still equal the reference's
    rng = np.random.default_rng(4)
    fast = ObservationBuilder(64, 172800.0, window=4)
    ref = ReferenceBuilder(64, 172800.0, window=4)
    for i in range(50):
        s = _random_snapshot(rng, 600.0 * (i + 1), 300, 300)
        for a in (s.pend_limit, s.pend_submit, s.run_limit, s.run_start):
            a[rng.random(a.shape[0]) < 0.1] = np.nan
        assert fast.push(s).tobytes() == ref.push(s).tobytes(), i
