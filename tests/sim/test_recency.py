"""``hpcsim fit --recent auto``: whether a site profile is judged on the whole fit period or
on its recent part is chosen inside the past (:func:`sim.fit.choose_recent`), checked on
logs the simulator recorded in a world that changed, and in one that did not."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sim.config import SlurmConfig
from sim.engine import Simulator
from sim.fit import AUTO, INNER_JITTERS, RECENT_SHARE, ProfileError, choose_recent, fit
from sim.profile import SiteProfile, priority_lines
from tests.sim.simhelpers import make_trace

DAY = 86400.0


def drifting(n: int, *, seed: int = 4, change: float = 0.27):
    """A loaded 15-day workload of 8 users (one heavy) on 32 nodes whose recorded schedule
    is FIFO's for the jobs submitted before ``change`` of the span and fair share's after:
    a site that changed its priority (the inner check's fit period ends at 4/9)."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.uniform(0, 15 * DAY, n))
    runtime = rng.uniform(600, 6 * 3600, n).round()
    units = rng.choice([1, 2, 4, 8], n, p=[0.4, 0.3, 0.2, 0.1])
    users = rng.choice(8, n, p=[0.4, 0.2, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05])
    rows = [
        (float(s), float(r), float(2 * r), int(u), int(us))
        for s, r, u, us in zip(submit, runtime, units, users, strict=True)
    ]
    trace = make_trace(rows, total=32)
    fair = SlurmConfig.from_text("\n".join(priority_lines("fairshare-1d")) + "\n", "fair share")
    starts = []
    for cfg in (SlurmConfig(), fair):
        sim = Simulator(trace, cfg)
        sim.run()
        start = {r.trace_index: r.start for r in sim.records}
        starts.append(np.array([start[i] for i in range(n)]))
    cut = submit[0] + change * (submit[-1] - submit[0])
    trace.recorded_start = np.where(trace.submit < cut, starts[0], starts[1])
    return trace


def test_a_site_that_changed_is_fitted_on_its_recent_past():
    share, losses = choose_recent(drifting(1200))
    assert share == RECENT_SHARE
    whole, recent = (np.mean(v) for v in losses.values())
    assert list(losses) == ["whole", f"recent {RECENT_SHARE:g}"]
    assert all(len(v) == INNER_JITTERS for v in losses.values())
    assert recent < whole - 0.1


def test_a_tie_keeps_the_whole_period_and_is_stored_with_the_profile():
    trace = drifting(600)  # light: nothing waits long, every way fits it alike
    share, losses = choose_recent(trace, jitters=1)
    assert share is None and losses["whole"] == losses[f"recent {RECENT_SHARE:g}"]
    prof = fit(trace, jitters=1, recent=AUTO)
    assert prof.recent is None and prof.recency == losses
    again = SiteProfile.from_json(prof.to_json())
    assert again.recency == losses and again.recent is None
    with pytest.raises(ProfileError, match="recent"):
        fit(trace, recent="sometimes")
    d = json.loads(prof.to_json())
    d["recent"] = 2
    with pytest.raises(ValueError, match="recent"):
        SiteProfile.from_json(json.dumps(d))
    for key in ("recent", "recency"):  # profiles stored before load without
        d.pop(key)
    assert SiteProfile.from_json(json.dumps(d)).recency == {}


def test_a_log_with_no_recorded_start_in_its_fit_period_is_refused_by_name():
    trace = drifting(600)
    trace.source = "late.swf"
    late = trace.submit > trace.submit[0] + 0.8 * (trace.submit[-1] - trace.submit[0])
    trace.recorded_start = np.where(late, trace.recorded_start, np.nan)
    with pytest.raises(ProfileError, match="late.swf: no job with a recorded start"):
        fit(trace, jitters=1, recent=AUTO)
