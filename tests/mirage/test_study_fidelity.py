"""Mirage's study prints the fidelity of its simulated world (sim.fidelity)."""

from __future__ import annotations

from types import SimpleNamespace

from mirage.study import world_fidelity
from sim.traces.read import read_trace
from tests.sim.recorded import write_recorded


def test_world_fidelity_table_for_a_recorded_trace(tmp_path):
    trace = read_trace(str(write_recorded(tmp_path / "rec.swf", units=24)))
    text = world_fidelity(SimpleNamespace(trace=trace, total_units=24))  # type: ignore[arg-type]
    assert "| KS distance of the wait distributions | 0.000 |" in text
    assert "Spearman) | 1.000 |" in text
    trace.recorded_start[:] = float("nan")
    assert world_fidelity(SimpleNamespace(trace=trace, total_units=24)) == ""  # type: ignore[arg-type]
