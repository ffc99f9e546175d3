"""Outages and reservations inferred from a recorded schedule (``hpcsim fit``): stretches
without a start while a job that would have fit waited, checked on logs the simulator
recorded itself with known maintenance windows."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from sim.availability import Availability, outage_windows, with_outages
from sim.config import SlurmConfig
from sim.engine import Simulator
from sim.fidelity import fidelity
from sim.fit import fit, replay_waits, split, starting_profile
from sim.profile import SiteProfile
from tests.sim.simhelpers import make_trace

DAY = 86400.0
UNITS = 24
#: the maintenance windows the logs are recorded with (days)
OUTAGES = ((2.0, 2.5), (4.0, 4.4))


def recorded(outages=OUTAGES, n: int = 500, seed: int = 3):
    """A loaded 6-day workload of 8 users on 24 nodes, its schedule recorded by the
    simulator with nothing available within ``outages``."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.uniform(0, 6 * DAY, n))
    runtime = rng.uniform(600, 5 * 3600, n).round()
    units = rng.choice([1, 2, 4], n)
    users = rng.integers(0, 8, n)
    rows = [
        (float(s), float(r), float(2 * r), int(u), int(us))
        for s, r, u, us in zip(submit, runtime, units, users, strict=True)
    ]
    trace = make_trace(rows, total=UNITS)
    times = [t * DAY for w in outages for t in w]
    levels = [lvl for _ in outages for lvl in (0, UNITS)]
    sim = Simulator(
        trace,
        SlurmConfig(),
        total_units=UNITS,
        availability=Availability(tuple(times), tuple(levels)) if outages else None,
    )
    sim.run()
    start = {r.trace_index: r.start for r in sim.records}
    trace.recorded_start = np.array([start[i] for i in range(n)])
    return trace


def test_the_recorded_outages_are_found_and_nothing_else():
    windows = outage_windows(recorded(), UNITS, 2 * 3600)
    assert len(windows) == len(OUTAGES)
    for (a, b), (da, db) in zip(windows, OUTAGES, strict=True):
        # from just after the last start before it to the first start after it
        assert da * DAY - 2 * 3600 < a <= da * DAY
        assert db * DAY <= b < db * DAY + 3600
    assert outage_windows(recorded(outages=()), UNITS, 2 * 3600) == []


def test_a_stretch_without_starts_is_no_outage_when_nothing_waiting_would_have_fit():
    trace = recorded()
    # every waiting job larger than the cluster could ever have held idle: none fits
    assert outage_windows(replace(trace, units=trace.units * 100), UNITS, 2 * 3600) == []


def test_with_outages_shuts_the_windows_and_keeps_the_rest():
    none = with_outages(None, [(10.0, 20.0), (30.0, 40.0)], 8)
    assert [none.at(t, 8) for t in (5, 10, 15, 20, 35, 40, 50)] == [8, 0, 0, 8, 0, 8, 8]
    base = Availability((0.0, 15.0, 100.0), (6, 7, 8))
    shut = with_outages(base, [(10.0, 20.0)], 8)
    assert [shut.at(t, 8) for t in (5, 10, 15, 19.9, 20, 50, 100)] == [6, 0, 0, 0, 7, 7, 8]
    assert with_outages(base, [], 8) == base


def test_the_fit_recovers_the_outages_and_the_replay_matches_the_record():
    trace = recorded()
    prof = fit(trace)
    assert prof.outage_s is not None
    assert prof.priority == "fifo"
    fit_mask, held, _ = split(trace)
    rec = trace.recorded_start - trace.submit
    waits = replay_waits(trace, prof)
    # the log was recorded without limits: the soft node cap the search chose lowers the
    # fit part's loss only by chance, so it is dropped (sim.fit.earned_limits). Held out,
    # the replay ranks at 0.91 (held to that cap, as before session 35, at 1.0: by a world
    # the record breaks, two users ran past it)
    assert prof.limits == "" and prof.user_limits == []
    assert next(iter(prof.limits_check)).startswith("with MaxTRESPerUser=node=")
    assert fidelity(waits[held], rec[held]).spearman > 0.85
    # without its outages the same profile replays the log worse
    plain = fidelity(replay_waits(trace, replace(prof, outage_s=None))[held], rec[held])
    assert plain.spearman < fidelity(waits[held], rec[held]).spearman
    again = SiteProfile.from_json(prof.to_json())
    assert again.outage_s == prof.outage_s
    assert "outages after" in prof.describe()


def test_a_profile_with_a_bad_outage_setting_is_refused_by_name():
    d = json.loads(starting_profile(recorded()).to_json())
    assert d["outage_s"] is None  # older profiles load without one too
    d.pop("outage_s")
    assert SiteProfile.from_json(json.dumps(d)).outage_s is None
    d["outage_s"] = -5
    with pytest.raises(ValueError, match="outage_s"):
        SiteProfile.from_json(json.dumps(d))
