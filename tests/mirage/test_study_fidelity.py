"""Mirage's study prints the fidelity of its simulated world (sim.fidelity), replayed in the
log's stored site profile unless ``--no-profile`` or ``--total-units`` rule it out (issue 23)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from mirage.envs.options import build_world
from mirage.study import _parser, study_world, world_fidelity
from sim.fit import starting_profile
from sim.limit_breaks import limit_steps
from sim.profile import store
from sim.traces.read import read_trace
from tests.sim.recorded import write_recorded


def test_world_fidelity_table_for_a_recorded_trace(tmp_path):
    trace = read_trace(str(write_recorded(tmp_path / "rec.swf", units=24)))
    text = world_fidelity(SimpleNamespace(trace=trace, total_units=24))  # type: ignore[arg-type]
    assert "| KS distance of the wait distributions | 0.000 |" in text
    assert "Spearman) | 1.000 |" in text
    trace.recorded_start[:] = float("nan")
    assert world_fidelity(SimpleNamespace(trace=trace, total_units=24)) == ""  # type: ignore[arg-type]


def test_the_study_replays_in_the_stored_site_profile(tmp_path):
    path = write_recorded(tmp_path / "site.swf", units=24)
    trace = read_trace(path)
    prof = replace(starting_profile(trace), units=20, limits="MaxJobsPerUser=2", window_s=3600.0)
    store(prof, path)

    def study(*extra: str):
        return study_world(_parser().parse_args(["--trace", str(path), "--out", "o", *extra]))

    world, twin, table, line = study()
    assert twin.profile is not None and world.total_units == 20
    # the profile's limit, lifted where the log's record (made without limits) breaks it
    # (the first users over it on their own, then for all)
    steps = limit_steps(trace, prof.qos())
    assert steps and steps[-1][1].max_jobs_per_user > 2
    assert world.sim.limits == steps[-1][1]
    first = world.checkpoints[0]
    assert first.time < steps[0][0]
    world.sim.restore(first.sim_state)
    assert world.sim.limits.max_jobs_per_user == 2
    assert line.startswith("Simulator: site profile site.swf.profile.json (20 procs, ")
    assert "Replay against the recorded schedule (1500 jobs)" in line
    assert table.startswith("Fidelity of the simulated world (20 units)")
    # --train-units: the profile's world at another size, its availability scaled with it
    avail = world.sim.availability.units
    for units in (10, 30):
        other = build_world(
            _parser().parse_args(["--trace", str(path), "--out", "o"]),
            False,
            units,
            trace=world.trace,
            make_simulator=twin.make_simulator,
        )
        assert other.sim.limits == steps[-1][1]
        assert other.sim.availability.units == tuple(
            min(units, round(u * units / 20)) for u in avail
        )
    # as for mirage backtest: --no-profile or a size given rule the profile out, and say so
    for extra, why in (
        (["--no-profile"], "--no-profile"),
        (["--total-units", "24"], "--total-units given"),
    ):
        world, twin, _, line = study(*extra)
        assert twin.profile is None and world.total_units == 24 and world.sim.limits is None
        assert line.startswith(
            f"Simulator: Slurm's defaults, priority by age, 24 procs (no site profile: {why})"
        )
