"""The embedded default trace: four weeks of TACC Lonestar6's A100 partition (CC BY 4.0).

See ``README.md`` beside this file for the source, the attribution and how the slice was
cut, and ``ls6-a100.LICENSE`` for the licence text.
"""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent
DEFAULT_TRACE = "ls6-a100-2023-01.log.gz"
#: Lonestar6's gpu-a100 partition has 84 nodes (TACC's LS6 user guide); the full trace's
#: peak concurrent use from recorded starts/ends is 80 nodes (also in this slice).
LS6_A100_NODES = 84
#: Nodes to *simulate* the LS6 log with: the simulator models no down or reserved nodes, and
#: with 72 it reproduces the log's recorded waits best (64 makes Feb-Mar queues explode,
#: 84 empties them; calibration in docs/mirage-agents.md). Replay and Mirage both use it.
LS6_SIMULATED_NODES = 72


def default_trace_path() -> Path:
    """Path of the embedded sacct export (gzip; read it with ``read_trace``)."""
    return _HERE / DEFAULT_TRACE


def default_total_units() -> int:
    """Machine size to simulate the default trace with, in its unit (nodes)."""
    return LS6_SIMULATED_NODES
