"""``mirage.sitemodel`` (bench/live_toy_model.py): a site's own model from its recorded load,
in the simulator configured from its own slurm.conf (the bench's cluster), chosen on
validation."""

from __future__ import annotations

import random

import numpy as np
import pytest

from hpcbase.slurm.localcluster import missing_programs
from mirage.agents.common.model_io import load_model, read_meta


def toy_swf(path, jobs: int = 500, seed: int = 0):
    """A saturated 16-CPU load like the bench's: 1-CPU jobs of 40-110 s under 2 minutes."""
    rng = random.Random(seed)
    lines, t = ["; MaxProcs: 16"], 0.0
    for n in range(1, jobs + 1):
        t += rng.expovariate(1 / 5.0)
        run = rng.randint(40, 110)
        lines.append(f"{n} {t:.0f} -1 {run} 1 -1 -1 1 120 -1 1 1 1 -1 -1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.skipif(bool(missing_programs()), reason="renders the bench cluster's slurm.conf")
def test_a_toy_model_is_trained_chosen_and_saved(tmp_path, capsys):
    from mirage.sitemodel import CHAIN_LIMIT, main

    trace = toy_swf(tmp_path / "load.swf")
    assert (
        main([str(trace), "--out", str(tmp_path), "--episodes", "30", "--agents", "gap-regressor"])
        == 0
    )
    out = capsys.readouterr().out
    result = next(line for line in out.splitlines() if line.startswith("RESULT "))
    assert "best=gap-regressor" in result
    meta = read_meta(tmp_path / "toy-best.zip")
    assert meta["max_limit"] == CHAIN_LIMIT and meta["total_units"] == 16
    assert meta["sample_interval"] == 5.0 and meta["window"] == 24
    policy = load_model(tmp_path / "toy-best.zip")
    assert policy.support is not None
    assert np.isfinite(float(result.split("validation_abs_gap_s=")[1].split()[0]))
