"""A small real world for Mirage's env tests: the LS6 trace up to mid-January 2023, whose
late December and January hold queues with waits of hours."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces"
LS6 = TRACES / "ls6-a100.log"
HPC2N = TRACES / "hpc2n-excerpt.swf"

SPLITS = {"train": ("2022-12-20", "2023-01-04"), "validation": ("2023-01-05", "2023-01-12")}


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"trace {path} not present")
    return path


@pytest.fixture(scope="session")
def ls6_trace():
    from sim.traces.read import read_trace

    trace = read_trace(need(LS6))
    end = datetime(2023, 1, 20, tzinfo=UTC).timestamp() - trace.start_epoch
    return trace.window(0, end)


@pytest.fixture(scope="session")
def small_world(ls6_trace):
    from mirage.envs import ChainWorld

    return ChainWorld(ls6_trace, total_units=72, splits=SPLITS)


@pytest.fixture(scope="session")
def hpc2n_path() -> str:
    return str(need(HPC2N))


@pytest.fixture(scope="session")
def trace_path():
    """``trace_path(name)``: a shared trace's path (skips if absent)."""
    return lambda name: str(need(TRACES / name))


@pytest.fixture(scope="session")
def small_splits() -> dict[str, tuple[str, str]]:
    return dict(SPLITS)


@pytest.fixture(scope="session")
def small_data(small_world):
    """Hindsight labels of 6 training chains (1 and 2 nodes, hourly decisions) of the small
    world: enough to train, ensemble and tune a model in seconds."""
    from mirage import dataset as ds

    starts = ds.sample_starts(small_world, "train", 6, [1, 2], seed=5)
    recs = ds.collect(small_world, starts, 3600.0)
    return ds.from_records(recs, ds.dataset_meta(small_world, "train", 6, 5, 3600.0, [1, 2]))
