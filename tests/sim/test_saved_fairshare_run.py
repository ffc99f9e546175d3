"""A real Slurm 22.05 run under fair share (bench/sim_fidelity.py --fairshare: four users,
Slurm's default Fair Tree, its weight far above age and size), saved with its slurmctld log,
replayed pass by pass: every job starts in the very second it started on real Slurm. Before
Fair Tree, the decay thread's phase (``BackfillCycle.calc_phase``, from the log's
``DebugFlags=Priority`` lines) and the usage folded at every decay run
(``FairShare.decay_runs``), 25 of its 48 jobs were out of place (52 %)."""

from __future__ import annotations

import json
from pathlib import Path

from sim.config import SlurmConfig
from sim.realcheck import compare, replay, run_timing, simulate
from sim.realslurm import as_job

SAVED = (
    Path(__file__).resolve().parents[2] / "docs/bench-data/sim_fidelity_real_fairshare_seed11.json"
)


def test_a_saved_fairshare_run_replays_to_the_second(tmp_path: Path) -> None:
    saved = json.loads(SAVED.read_text())
    conf = tmp_path / "slurm.conf"
    conf.write_text(saved["slurm_conf"])
    cfg = SlurmConfig.from_file(conf)
    assert cfg.fair_tree and cfg.weight_fairshare == 100000
    rows = saved["real"]
    jobs = [as_job(j, i) for i, j in enumerate(saved["jobs"])]
    assert len({j.user for j in jobs}) == 4
    timing = replay(run_timing(SAVED, saved, rows, jobs, cfg))
    assert "decay thread" in timing.source and 0 <= timing.calc_phase < cfg.calc_period
    starts = simulate(jobs, rows, conf, timing)
    fig = compare(rows, starts, table=False)
    assert fig.met
    assert {r["name"]: r["start"] for r in rows} == starts
