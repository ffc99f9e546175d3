"""Wall time, CPU time and peak memory of the phases of a run (read, infer, simulate, report).

Peak memory is the resident-set high-water mark of the process during the phase: on Linux
the mark is reset at the start of each phase (``/proc/self/clear_refs``), so each phase has
its own peak; elsewhere it is the peak so far (``ru_maxrss``).
"""

from __future__ import annotations

import contextlib
import gc
import resource
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

_STATUS = Path("/proc/self/status")
_CLEAR = Path("/proc/self/clear_refs")


@dataclass(slots=True)
class Phase:
    name: str
    wall_s: float
    cpu_s: float
    peak_mb: float


@dataclass(slots=True)
class PhaseTimer:
    """Collects :class:`Phase` figures: ``with timer.phase("read"): ...``."""

    phases: list[Phase] = field(default_factory=list)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        _reset_peak()
        w0, c0 = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.phases.append(
                Phase(name, time.perf_counter() - w0, time.process_time() - c0, peak_rss_mb())
            )

    @property
    def wall_s(self) -> float:
        return sum(p.wall_s for p in self.phases)

    @property
    def cpu_s(self) -> float:
        return sum(p.cpu_s for p in self.phases)

    def as_dict(self) -> dict[str, dict[str, float]]:
        """Each phase's figures by name; a phase run more than once (a replay run again)
        sums its seconds and keeps its highest peak."""
        out: dict[str, dict[str, float]] = {}
        for p in self.phases:
            d = out.setdefault(p.name, {"wall_s": 0.0, "cpu_s": 0.0, "peak_mb": 0.0})
            d["wall_s"] += p.wall_s
            d["cpu_s"] += p.cpu_s
            d["peak_mb"] = max(d["peak_mb"], p.peak_mb)
        return out


def peak_rss_mb() -> float:
    """The process's resident-set high-water mark (MB) since the last reset."""
    with contextlib.suppress(OSError, ValueError):
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_peak() -> None:
    with contextlib.suppress(OSError):
        _CLEAR.write_text("5")


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector (a replay makes many objects and few cycles:
    its passes cost ~10 % of a 450k-job simulation); the objects made meanwhile are
    collected afterwards as usual."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
