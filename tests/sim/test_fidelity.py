"""The fidelity figures every replay prints."""

from __future__ import annotations

import numpy as np
import pytest

from sim.fidelity import fidelity, ks_distance


def test_ks_distance_of_known_samples():
    a = np.array([1.0, 2, 3, 4])
    assert ks_distance(a, a) == 0
    assert ks_distance(a, a + 10) == 1
    assert ks_distance(np.array([1.0, 2]), np.array([2.0, 3])) == pytest.approx(0.5)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=500), rng.normal(size=700)
    scipy_stats = pytest.importorskip("scipy.stats")
    assert ks_distance(x, y) == pytest.approx(scipy_stats.ks_2samp(x, y).statistic)


def test_fidelity_figures_and_targets():
    h = 3600.0
    rec = np.array([0, 0.05, 1, 2, 10]) * h
    f = fidelity(rec * 1.1, rec)
    assert f.jobs == 5 and f.spearman == pytest.approx(1) and f.ks == pytest.approx(0.2)
    assert f.sim_mean_h == pytest.approx(1.1 * f.rec_mean_h)
    assert f.median_abs_h == pytest.approx(0.1)
    assert f.targets() == {"spearman": True, "ks": False, "median": True, "mean": True, "p90": True}
    bad = fidelity(rec[::-1] * 3, rec)
    t = bad.targets()
    assert not t["spearman"] and not t["mean"] and not t["p90"]
    # NaN pairs are dropped
    assert fidelity(np.array([np.nan, 1.0, 2.0]), np.array([5.0, 1.0, 2.0])).jobs == 2
