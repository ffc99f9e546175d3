"""The live queue history: Slurm snapshots pushed into the one
:class:`~mirage.observation.ObservationBuilder`, persisted atomically so a restart keeps it."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import fields
from pathlib import Path

import numpy as np

from hpcbase.atomic import atomic_path
from hpcbase.slurm import SlurmClient
from hpcbase.snapshot import QueueSnapshot
from mirage.observation import (
    QUEUE_FEATURES,
    SAMPLE_INTERVAL,
    WINDOW,
    BuilderState,
    ObservationBuilder,
    Q,
)

log = logging.getLogger(__name__)

#: Normalisation when the partition has no MaxTime (``INFINITE``): 48 h, LS6's maximum.
DEFAULT_MAX_LIMIT = 48 * 3600.0
_VERSION = 4  # 2: ended-job arrays (FEATURE_VERSION 3); 3: started jobs' units (4);
# 4: rows carry run_remaining_work (5)


class HistoryError(RuntimeError):
    """A history file that cannot be used; the message names the file."""


class QueueHistory:
    """A window of queue samples taken every ``sample_interval`` seconds.

    ``total_units`` and ``max_limit`` come from the partition the first time the cluster is
    sampled (or from a saved history); a history saved for another cluster size is dropped
    with a warning rather than mixed in.
    """

    def __init__(
        self,
        window: int = WINDOW,
        sample_interval: float = SAMPLE_INTERVAL,
        max_limit: float | None = None,
        path: Path | None = None,
        time_scale: float = 1.0,
    ) -> None:
        """``time_scale`` k: the cluster runs a site's load k times faster (a time-compressed
        replay); samples are taken every ``sample_interval`` seconds of this cluster's clock
        and the features see the site's scale (``max_limit``, when given, in site seconds;
        a partition's MaxTime is multiplied by k)."""
        self.time_scale = float(time_scale)
        self.window = int(window)
        self.sample_interval = float(sample_interval)
        self.max_limit_override = max_limit
        self.path = path
        self.builder: ObservationBuilder | None = None
        self.last_sample = math.nan
        self.last_snapshot: QueueSnapshot | None = None
        self.samples = 0

    # ---- sampling ------------------------------------------------------------------------
    def _ensure_builder(self, total_units: int, max_limit: float) -> ObservationBuilder:
        b = self.builder
        if b is None or b.total_units != total_units or b.max_limit != max_limit:
            if b is not None:
                log.warning(
                    "cluster size changed (%d units, max limit %g s -> %d, %g): history reset",
                    b.total_units,
                    b.max_limit,
                    total_units,
                    max_limit,
                )
            self.builder = ObservationBuilder(
                total_units,
                max_limit,
                window=self.window,
                sample_interval=self.sample_interval * self.time_scale,
                time_scale=self.time_scale,
            )
            self.samples = 0
        assert self.builder is not None
        return self.builder

    def push(self, snap: QueueSnapshot, max_limit: float) -> np.ndarray:
        """Add one snapshot; returns its feature row."""
        row = self._ensure_builder(snap.total_units, max_limit).push(snap)
        self.last_sample = snap.time
        self.last_snapshot = snap
        self.samples += 1
        return row

    def due(self, now: float | None = None) -> bool:
        """Whether the next sample is due."""
        now = time.time() if now is None else now
        return math.isnan(self.last_sample) or now - self.last_sample >= self.sample_interval - 0.5

    def sample(self, client: SlurmClient, partition: str | None = None) -> np.ndarray:
        """Take one sample from Slurm now (raises :class:`SlurmError` when it cannot)."""
        part = client.partition(partition)
        max_limit = self.max_limit_override or (
            float(part.max_time) * self.time_scale if part.max_time else DEFAULT_MAX_LIMIT
        )
        snap = client.snapshot(partition, max_age=min(self.sample_interval / 2, 60.0))
        return self.push(snap, max_limit)

    @property
    def ready(self) -> bool:
        return self.builder is not None and self.samples > 0

    def latest_features(self) -> dict[str, float]:
        """The newest sample's features by name (empty before the first sample)."""
        b = self.builder
        if b is None or not self.samples:
            return {}
        st = b.state()
        row = st.rows[min(st.filled, b.window) - 1]
        return {name: round(float(v), 4) for name, v in zip(QUEUE_FEATURES, row)}

    # ---- persistence ---------------------------------------------------------------------
    def save(self, path: Path | None = None) -> None:
        """Write the history atomically (:func:`hpcbase.atomic.atomic_path`, mode 0600)."""
        path = path or self.path
        b = self.builder
        if path is None or b is None:
            return
        st = b.state()
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path, mode=0o600) as tmp, tmp.open("wb") as f:
            np.savez(
                f,
                version=_VERSION,
                total_units=b.total_units,
                max_limit=b.max_limit,
                window=b.window,
                sample_interval=self.sample_interval,
                time_scale=self.time_scale,
                last_sample=self.last_sample,
                samples=self.samples,
                **{f.name: getattr(st, f.name) for f in fields(BuilderState)},
            )

    def load(self, path: Path | None = None) -> bool:
        """Restore a saved history; False when there is none or it does not fit this
        window and sample interval (then it is ignored with a warning)."""
        path = path or self.path
        if path is None or not path.exists():
            return False
        try:
            with np.load(path, allow_pickle=False) as z:
                d = {k: z[k] for k in z.files}
        except (OSError, ValueError, KeyError) as e:
            raise HistoryError(f"{path}: unreadable queue history ({e})") from e
        version = int(d.get("version", -1))
        if version == 2:  # before started jobs' units were kept: those starts fit no size
            d["start_units"] = np.full(d["start_time"].shape, np.nan)
        if version in (2, 3):  # rows before run_remaining_work: run_work stands in for it
            rows = np.asarray(d["rows"])
            d["rows"] = np.concatenate([rows, rows[:, Q["run_work"], None]], axis=1)
            log.info("%s: history of format %d migrated to %d", path, version, _VERSION)
        elif version != _VERSION:
            log.warning("%s: history of another format version: ignored", path)
            return False
        scale = float(d.get("time_scale", 1.0))
        if (
            int(d["window"]) != self.window
            or float(d["sample_interval"]) != self.sample_interval
            or scale != self.time_scale
        ):
            log.warning(
                "%s: history has window %d / interval %g s / time scale %g, config wants "
                "%d / %g / %g: ignored",
                path,
                int(d["window"]),
                float(d["sample_interval"]),
                scale,
                self.window,
                self.sample_interval,
                self.time_scale,
            )
            return False
        b = ObservationBuilder(
            int(d["total_units"]),
            float(d["max_limit"]),
            window=self.window,
            sample_interval=self.sample_interval * self.time_scale,
            time_scale=self.time_scale,
        )
        state = {f.name: d[f.name] for f in fields(BuilderState)}
        state.update(
            rows=d["rows"].astype(np.float32),
            filled=int(d["filled"]),
            prev_time=float(d["prev_time"]),
        )
        b.set_state(BuilderState(**state))
        self.builder = b
        self.last_sample = float(d["last_sample"])
        self.samples = int(d["samples"])
        return True
