"""``mirage live-check`` end to end, CI-sized: a 2-hour slice of the embedded LS6 month
compressed 240 times on the real local cluster, one chain per policy through the live path
(time scale 240), the same workload in the simulator, and every live decision replayed
offline through the simulator's path (the observation builder fed the same samples)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from hpcbase.slurm.localcluster import missing_programs
from mirage.livecheck import SITE_MAX_LIMIT, parse_args, report, run

pytestmark = [pytest.mark.slurm, pytest.mark.slow]
EMBEDDED = Path(__file__).resolve().parents[2] / "sim" / "data" / "ls6-a100-2023-01.log.gz"


@pytest.mark.skipif(bool(missing_programs()), reason="needs Slurm and munge")
def test_live_decisions_are_those_of_the_simulators_path(capsys) -> None:
    args = parse_args(
        [str(EMBEDDED), "--start", "10", "--hours", "2", "--k", "240", "--chains", "1"]
        + ["--chain-hours", "4", "--policies", "default,average"]
    )
    check = run(args, progress=False)
    plan = check.plan
    assert plan.interval_wall == 2.5 and plan.limit_min == 1  # 600 s and 4 h, / 240
    assert check.audit.decisions >= 10
    assert check.audit.mismatches == []
    for spec in ("default", "average"):
        (gaps,) = [g for (p, _), g in check.live.gaps.items() if p == spec]
        assert len(gaps) == 1 and math.isfinite(gaps[0])
        assert math.isfinite(check.sim[spec][0])
    # the model saw the site's scale: the history's normalisation is the site's 48 h
    samples = [e for e in check.live.journal if e.kind == "sample"]
    assert samples and SITE_MAX_LIMIT == 48 * 3600.0
    assert report(plan, check.live, check.sim, check.audit) == 0
    assert "RESULT k=240 chains=1" in capsys.readouterr().out
