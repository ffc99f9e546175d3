"""The simulator Mirage replays a log in (the stored site profile, else the default) and the
line that names it with the replay's fidelity, printed beside every table of ``mirage
backtest``, ``mirage retrain`` and ``mirage study`` (issue 24, item 4)."""

from __future__ import annotations

from argparse import Namespace
from dataclasses import replace
from pathlib import Path

from mirage.envs.twin import site_twin, why_no_profile, world_report
from mirage.envs.world import ChainWorld
from sim.fit import starting_profile
from sim.profile import store
from sim.traces.read import read_trace
from tests.sim.recorded import write_recorded


def test_the_line_gives_the_simulator_and_the_replays_fidelity(tmp_path: Path) -> None:
    trace = read_trace(write_recorded(tmp_path / "rec.swf", units=24))
    twin = site_twin(trace)
    assert twin.profile is None
    rep = world_report(trace, 24, twin)
    line = rep["line"]
    assert line.startswith(
        "Simulator: Slurm's defaults, priority by age, 24 procs (no site profile: none stored; "
        "`hpcsim fit TRACE` makes one). Replay against the recorded schedule (1500 jobs), "
        "simulated vs recorded: mean wait "
    )
    # the log's recorded schedule is this very simulator's: a perfect replay
    assert line.endswith("Spearman 1.000; KS distance 0.000."), line
    assert rep["fidelity"]["jobs"] == 1500 and rep["profile"] is None
    no_starts = read_trace(write_recorded(tmp_path / "plain.swf", units=24))
    no_starts.recorded_start[:] = float("nan")
    assert world_report(no_starts, 24, twin)["line"].endswith(
        "Replay fidelity: the log records no start times to compare with."
    )


def test_a_stored_site_profile_is_used_and_named(tmp_path: Path) -> None:
    path = write_recorded(tmp_path / "site.swf", units=24)
    trace = read_trace(path)
    prof = replace(
        starting_profile(trace),
        units=20,
        recorded_peak=24,
        batch_sched_delay=0.0,
        limits="MaxJobsPerUser=2",
        fit_until_s=0.0,
        fit_from_s=0.0,
    )
    store(prof, path)
    twin = site_twin(trace)
    assert twin.profile is not None and twin.units(99) == 20
    rep = world_report(trace, 20, twin)
    assert rep["line"].startswith(
        "Simulator: site profile site.swf.profile.json (20 procs, priority fifo, "
        "batch_sched_delay=0, limits MaxJobsPerUser=2, availability none). Replay against "
        "the recorded schedule (1500 jobs)"
    ), rep["line"]
    assert rep["profile"] == str(tmp_path / "site.swf.profile.json")
    # the world's simulator is the profile's: its size and its per-user limit
    world = ChainWorld(trace, total_units=20, until=0.0, make_simulator=twin.make_simulator)
    assert world.sim.total_units == 20 and world.sim.limits.max_jobs_per_user == 2
    # as for hpcsim replay, --no-profile or a size given rule it out, and the line says so
    for args, why in (
        (Namespace(no_profile=True, total_units=None), "--no-profile"),
        (Namespace(no_profile=False, total_units=24), "--total-units given"),
    ):
        other = site_twin(trace, why_no_profile(args))
        assert other.profile is None and f"(no site profile: {why})" in other.describe(24, "procs")
