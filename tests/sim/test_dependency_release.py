"""A job released by a dependency becomes eligible when Slurm 22.05 makes it so (session 33).

afterok and afterany hold until the job they wait on is no longer COMPLETING (its epilog has
ended), and ``job_independent`` sets the job's begin time, its eligible and accrue time, at
the first queue a scheduler pass builds after that (``build_job_queue``: a backfill pass or
a main-scheduler run). Under ``BackfillCycle`` the simulator waits for that pass; before, it
made the job eligible at its dependency's end. Over the saved real runs with a full log
(``eligible_compare.py`` in docs/bench-data/probes-2026-12-02-session33), the recorded
Eligible second (sacct) of a released job is now the replay's for 82 of the 86 jobs whose
dependency the replay ends as the log does, against 48 of 83 before."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from hpcbase.jobs import JobSpec
from sim.config import SlurmConfig
from sim.engine import BackfillCycle, Simulator
from sim.realcheck import replay, replayed_jobs
from tests.sim.saved_runs import load

PASSES = (0.3, 1.3, 2.3, 3.3, 4.3, 5.3, 6.3, 7.3, 8.3, 9.3, 10.3, 11.3, 12.3)


def chain(cycle: BackfillCycle | None, kind: str = "afterok") -> tuple[float, float, float]:
    """A 4-unit job running 5 s, and one waiting on it: (first's end, second's eligible
    time, second's start)."""
    sim = Simulator(None, SlurmConfig(), total_units=4, cycle=cycle)
    first = sim.submit(JobSpec(units=4, limit=60, runtime=5.0, submit=0.0))
    second = sim.submit(
        JobSpec(units=4, limit=60, runtime=5.0, submit=0.1, dependency=f"{kind}:{first}")
    )
    sim.run()
    a, b = sim.job(first), sim.job(second)
    return a.end, b.eligible, b.start


@pytest.mark.parametrize("kind", ["afterok", "afterany"])
def test_released_at_the_first_pass_after_the_epilog(kind: str) -> None:
    cycle = BackfillCycle(wakes=PASSES, epilog=0.006, main_on_end=False)
    end, eligible, start = chain(cycle, kind)
    assert math.isclose(end, 5.3)  # started by the pass at 0.3
    # the pass at 5.3 ran 0 ms after the end, inside the epilog: the next one releases it
    assert math.isclose(eligible, 6.3) and math.isclose(start, 6.3)


def test_a_main_run_after_the_epilog_releases_it() -> None:
    cycle = BackfillCycle(
        wakes=PASSES, epilog=0.006, main_on_end=False, main_wakes=(5.6,), main_full=(False,)
    )
    _, eligible, start = chain(cycle)
    assert math.isclose(eligible, 5.6) and math.isclose(start, 5.6)


def test_an_epilog_longer_than_the_gap_to_the_next_pass_waits_for_the_one_after() -> None:
    cycle = BackfillCycle(wakes=PASSES, epilog=1.2, main_on_end=False)
    _, eligible, _ = chain(cycle)
    assert math.isclose(eligible, 7.3)


def test_two_dependencies_release_after_the_later_epilog() -> None:
    """afterok on two jobs: eligible at the first pass after the later one's epilog; a
    snapshot taken while it waits restores the wait."""
    cycle = BackfillCycle(wakes=PASSES, epilog=0.006, main_on_end=False)
    sim = Simulator(None, SlurmConfig(), total_units=4, cycle=cycle)
    a = sim.submit(JobSpec(units=2, limit=60, runtime=3.0, submit=0.0))
    b = sim.submit(JobSpec(units=2, limit=60, runtime=5.0, submit=0.0))
    c = sim.submit(
        JobSpec(units=4, limit=60, runtime=1.0, submit=0.1, dependency=f"afterok:{a}:{b}")
    )
    sim.run(until=5.301)  # b ended at 5.3, its epilog runs to 5.306
    assert math.isnan(sim.job(c).eligible)
    blob = sim.snapshot()
    sim.run()
    assert math.isclose(sim.job(a).end, 3.3) and math.isclose(sim.job(b).end, 5.3)
    assert math.isclose(sim.job(c).eligible, 6.3) and math.isclose(sim.job(c).start, 6.3)
    sim.restore(blob)
    sim.run()
    assert math.isclose(sim.job(c).start, 6.3)


def test_released_at_the_end_without_backfill_cycle() -> None:
    end, eligible, start = chain(None)
    assert eligible == end == start == 5.0


def delays(name: str, tmp_path: Path) -> dict[str, tuple[int, int]]:
    """Per released job of a saved run: whole seconds from its dependency's end to its
    eligible time (replay, Slurm)."""
    run = load(name, tmp_path)
    t0, views = replayed_jobs(
        run.jobs, run.rows, run.conf, replay(run.timing()), qos=run.saved["qos"]
    )
    by = {r["name"]: r for r in run.rows}
    out = {}
    for job in run.jobs:
        if not job.dependency:
            continue
        targets = re.findall(r":([\w.-]+)", job.dependency)
        sim_end = max(math.floor(views[t].end) for t in targets) + t0
        real_end = max(by[t]["end"] for t in targets)
        out[job.name] = (
            math.floor(views[job.name].eligible) + t0 - sim_end,
            by[job.name]["eligible"] - real_end,
        )
    return out


@pytest.mark.parametrize(
    "seed, want",
    [
        (151, {"chain2": 1, "chain3": 1}),  # both released by the next backfill pass
        (137, {"chain2": 0, "chain3": 1}),  # chain2: a main run 0.28 s after the epilog
        (139, {"chain2": 0, "chain3": 1}),
    ],
)
def test_saved_runs_release_as_slurm_recorded(seed: int, want: dict, tmp_path: Path) -> None:
    got = delays(f"sim_fidelity_real_fairshare1000_qos_seed{seed}", tmp_path)
    assert {k: real for k, (_, real) in got.items()} == want  # what Slurm recorded
    assert {k: sim for k, (sim, _) in got.items()} == want
