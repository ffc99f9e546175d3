"""Site profiles: what ``hpcsim fit`` infers, checked on logs the simulator recorded itself
under known settings."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from sim.availability import recorded_usage
from sim.config import SlurmConfig
from sim.engine import Simulator
from sim.fit import (
    LIMIT_CHECK_JITTERS,
    RunawayReplay,
    earned_limits,
    fit,
    recorded_max_pending,
    setting_loss,
    simulated_waits,
    split,
)
from sim.limits import QosLimits
from sim.log_inference import cluster_size, infer_limits, priority_fit
from sim.profile import PRIORITY_SETTINGS, SCHEMA, SiteProfile, load, priority_lines, store
from sim.traces.read import read_trace
from tests.sim.recorded import write_sacct_with_priority
from tests.sim.simhelpers import make_trace


def recorded_log(
    limits: QosLimits | None,
    total: int = 32,
    n: int = 1500,
    seed: int = 3,
    cfg: SlurmConfig | None = None,
    limit_steps: tuple[tuple[float, QosLimits], ...] = (),
):
    """A loaded workload of 8 users, replayed under ``limits`` (changed by
    ``limit_steps``) and ``cfg`` (default Slurm's); its schedule recorded."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.uniform(0, 5 * 86400, n))
    runtime = rng.uniform(600, 6 * 3600, n).round()
    units = rng.choice([1, 2, 4, 8], n, p=[0.4, 0.3, 0.2, 0.1])
    users = rng.integers(0, 8, n)
    rows = [
        (float(s), float(r), float(2 * r), int(u), int(us))
        for s, r, u, us in zip(submit, runtime, units, users, strict=True)
    ]
    trace = make_trace(rows, total=total)
    sim = Simulator(trace, cfg or SlurmConfig(), limits=limits, limit_steps=limit_steps)
    sim.run()
    start = {r.trace_index: r.start for r in sim.records}
    trace.recorded_start = np.array([start[i] for i in range(n)])
    return trace


def test_limits_are_recovered_from_a_log_recorded_under_them():
    trace = recorded_log(QosLimits(max_jobs_per_user=3, max_nodes_per_user=8))
    lim = infer_limits(trace, np.ones(len(trace), bool))
    assert lim is not None
    assert (lim.max_jobs_per_user, lim.max_nodes_per_user) == (3, 8)


def test_a_user_who_ran_past_the_wall_keeps_a_limit_of_their_own():
    """One user ran under another QOS: the wall the others kept is inferred, that user gets
    limits of their own at their recorded maxima, and the log replays as recorded (held to
    the wall, that user waits)."""
    from sim.log_inference import user_maxima

    limits = QosLimits(max_jobs_per_user=3, max_nodes_per_user=8, user_limits=((7, 6, 20, None),))
    trace = recorded_log(limits, total=64)
    everyone = np.ones(len(trace), bool)
    jobs, units = user_maxima(trace, everyone)
    assert 3 < jobs[7] <= 6  # the user ran past the wall, within their own limit
    lim = infer_limits(trace, everyone)
    assert lim is not None and (lim.max_jobs_per_user, lim.max_nodes_per_user) == (3, 8)
    assert lim.user_limits == ((7, jobs[7], max(8, units[7]), None),)

    def waits(lim: QosLimits) -> np.ndarray:
        sim = Simulator(trace, SlurmConfig(), limits=lim)
        sim.run()
        start = {r.trace_index: r.start for r in sim.records}
        return np.array([start[i] for i in range(len(trace))]) - trace.submit

    recorded = trace.recorded_start - trace.submit
    assert np.array_equal(waits(lim), recorded)
    held = waits(QosLimits(max_jobs_per_user=3, max_nodes_per_user=8))
    seven = trace.user == 7
    assert held[seven].mean() > 1.5 * recorded[seven].mean()


def test_a_user_with_their_own_limits_sets_no_cap_for_the_others():
    """The fit's soft node caps come from the maxima of users held to the QOS: user 7, past
    the jobs wall, ran 20 nodes under their own limits, which is no cap for everyone."""
    from sim.log_inference import limit_candidates, user_maxima

    limits = QosLimits(max_jobs_per_user=3, max_nodes_per_user=8, user_limits=((7, 6, 20, None),))
    trace = recorded_log(limits, total=64, seed=2)
    everyone = np.ones(len(trace), bool)
    assert user_maxima(trace, everyone)[1][7] >= 16  # a quarter of the cluster: a cap once
    caps = {c.max_nodes_per_user for c in limit_candidates(trace, everyone, 64)}
    assert caps == {8}


def test_users_own_limits_are_the_higher_and_checked():
    qos = QosLimits(max_jobs_per_user=3, max_nodes_per_user=8, user_limits=((2, 5, 4, None),))
    assert qos.caps(2) == (5, 8, None) and qos.caps(1) == (3, 8, None)
    assert qos.with_user_limits({2: (1, 9, 4), 0: (None, 8, None)}).user_limits == (
        (0, None, 8, None),
        (2, 5, 9, None),
    )
    for bad in (((2, 1, 1, 1), (2, 1, 1, 1)), ((3, 1, 1, 1), (2, 1, 1, 1)), ((1, -2, 1, 1),)):
        with pytest.raises(ValueError, match="user_limits"):
            QosLimits(max_jobs_per_user=3, user_limits=bad)


def test_users_own_limits_are_stored_in_the_profile_and_checked():
    good = json.loads(load_shipped().to_json())
    assert good["user_limits"] == []  # a profile stored before them loads without
    del good["user_limits"]
    assert SiteProfile.from_json(json.dumps(good)).qos() == load_shipped().qos()
    prof = SiteProfile.from_json(
        json.dumps({**good, "user_limits": [[9, 20, None, None], [4, 12, 30, None]]})
    )
    qos = prof.qos()
    assert qos is not None and qos.user_limits == ((4, 12, 30, None), (9, 20, None, None))
    assert "(2 users with their own)" in prof.describe()
    assert SiteProfile.from_json(prof.to_json()).user_limits == [
        [4, 12, 30, None],
        [9, 20, None, None],
    ]
    # exempt users, as a profile stored them before: no limit of their own
    legacy = SiteProfile.from_json(json.dumps({**good, "exempt_users": [4]}))
    assert legacy.user_limits == [[4, None, None, None]]
    for bad in ("4", [[-1, 1, 1, 1]], [[1, 1.5, 1, 1]], [[1, 2, 3]], {"4": 1}, [[1, 1, 1, 1]] * 2):
        with pytest.raises(ValueError, match="user_limits"):
            SiteProfile.from_json(json.dumps({**good, "user_limits": bad}))
    with pytest.raises(ValueError, match="exempt_users"):
        SiteProfile.from_json(json.dumps({**good, "exempt_users": [1.5]}))


def test_no_limit_is_inferred_from_a_log_recorded_without():
    trace = recorded_log(None, total=64)
    lim = infer_limits(trace, np.ones(len(trace), bool))
    assert lim is None or (lim.max_jobs_per_user, lim.max_nodes_per_user) != (3, 8)


def test_a_headerless_log_starts_from_the_recorded_peak_not_the_largest_job():
    trace = recorded_log(None, total=32)
    peak = recorded_usage(trace).peak
    assert peak > int(trace.units.max())
    trace.total_units = None  # no MaxProcs header
    assert cluster_size(trace) == (peak, peak)
    trace.total_units = 20  # a header below what the schedule used: raised
    assert cluster_size(trace)[0] == peak


def test_fit_recovers_the_limits_and_never_an_impossible_cluster(tmp_path):
    trace = recorded_log(QosLimits(max_jobs_per_user=3, max_nodes_per_user=8))
    trace.source = str(tmp_path / "log.swf")
    trace.digest = "ab" * 32
    prof = fit(trace, jitters=1)  # an exact replay recovers the recording exactly
    assert prof.units >= prof.recorded_peak
    assert prof.limits == "MaxJobsPerUser=3 MaxTRESPerUser=node=8"
    # the limits earned their place: dropping them costs the fit part replay for replay
    (kept, with_), (dropped, without) = prof.limits_check.items()
    assert kept == f"with {prof.limits}" and dropped == "without"
    assert len(with_) == len(without) == LIMIT_CHECK_JITTERS
    assert all(b > a for a, b in zip(with_, without, strict=True))
    assert prof.bf_max_job_test is None  # recorded under Slurm's default depth
    assert prof.fit["spearman"] > 0.9 and prof.fit["ks"] < 0.05
    # no recorded Priority column: the priority is chosen by the replays' loss, as before
    assert prof.priority_spearman == {}
    tried = {str(s["setting"]).split("priority ")[1].split(",")[0] for s in prof.steps}
    assert tried == set(PRIORITY_SETTINGS)
    # stored beside the trace and found again by its digest only
    path = store(prof, trace.source)
    assert path == tmp_path / "log.swf.profile.json"
    again = load(trace)
    assert again is not None and again.describe() == prof.describe()
    assert again.limits_check == prof.limits_check
    bad = json.loads(prof.to_json())
    for key, value in (("limits_check", {"with": ["x"]}), ("recency", [1.0])):
        with pytest.raises(ValueError, match=key):
            SiteProfile.from_json(json.dumps({**bad, key: value}))
    trace.digest = "cd" * 32
    assert load(trace) is None


@pytest.mark.parametrize(
    ("with_", "without", "kept"),
    [
        ([0.10, 0.12, 0.14, 0.16, 0.18, 0.20], [0.13, 0.15, 0.17, 0.19, 0.21, 0.23], True),
        # a larger mean gain, but not replay for replay: one replay does better without
        ([0.10, 0.12, 0.14, 0.16, 0.18, 0.20], [0.30, 0.35, 0.05, 0.16, 0.18, 0.20], False),
        ([0.1] * 6, [0.1] * 6, False),  # a tie keeps nothing
        ([0.1] * 6, "ran away", True),  # without them the replay runs away
        ("ran away", [0.1] * 6, False),
    ],
)
def test_limits_are_kept_only_where_dropping_them_costs_replay_for_replay(
    monkeypatch, with_, without, kept
):
    import sim.fit as fitmod

    prof = fitmod.starting_profile(recorded_log(None, n=200))
    prof.limits, prof.larger_jobs_exempt = "MaxJobsPerUser=3", True
    monkeypatch.setattr(fitmod, "loss", lambda r: r)
    monkeypatch.setattr(fitmod, "_replays", lambda trace, p, *a: with_ if p.limits else without)
    out = earned_limits(None, prof, None, None, prof.units)  # type: ignore[arg-type]
    assert (out.limits == "MaxJobsPerUser=3") == kept and out.larger_jobs_exempt == kept
    got = list(out.limits_check.values())
    assert got == [[] if v == "ran away" else v for v in (with_, without)]


def test_hpcsim_fit_prints_the_limits_check():
    from rich.console import Console

    from sim.fit_cli import print_fit

    prof = SiteProfile.from_json(load_shipped().to_json())
    prof.limits = ""
    prof.limits_check = {"with MaxJobsPerUser=5": [0.2, 0.3], "without": [0.21, 0.29]}
    out = Console(record=True, width=200)
    print_fit(out, prof, "log")
    text = out.export_text()
    assert "earn their place" in text
    assert re.search(r"with MaxJobsPerUser=5[ │]+0\.200, 0\.300[ │]+0\.250", text)
    assert re.search(r"without \(chosen\)[ │]+0\.210, 0\.290", text)


def test_fit_recovers_a_shallow_backfill_depth(tmp_path):
    cfg = SlurmConfig.from_text(
        "SchedulerParameters=batch_sched_delay=1,bf_max_job_test=10\n", "recorded under"
    )
    trace = recorded_log(None, total=24, n=800, cfg=cfg)
    trace.source = str(tmp_path / "log.swf")
    trace.digest = "ab" * 32
    prof = fit(trace, jitters=1)
    assert (prof.bf_max_job_test, prof.batch_sched_delay) == (10, 1.0)
    assert "bf_max_job_test=10" in prof.describe()
    assert "SchedulerParameters=batch_sched_delay=1,bf_max_job_test=10" in prof.slurm_conf()
    store(prof, trace.source)
    again = load(trace)
    assert again is not None and again.bf_max_job_test == 10
    assert again.config().bf_max_job_test == 10


def test_the_fit_moves_two_settings_where_one_at_a_time_stops():
    # A loss with a trap: from a 1-h window with outages after 2 h, no move of one setting
    # lowers it, but a 6-h window with no outages is lower, and then a depth of 10 lower
    # still. The descent alone stops; the polish (every pair of window, outages and depth,
    # then a descent) reaches both.
    from dataclasses import replace

    from sim.fit import POLISH_PAIRS, _descend, _polish

    start = SiteProfile("t", "", "nodes", 8, 8, "fifo", 1.0, 3600.0, None, "", False, 0.0, 0.0)
    start = replace(start, outage_s=7200.0, bf_max_job_test=30)
    losses = {(3600.0, 7200.0, 30): 0.8, (6 * 3600.0, None, 30): 0.6, (6 * 3600.0, None, 10): 0.5}

    def score(p: SiteProfile) -> float:
        return losses.get((p.window_s, p.outage_s, p.bf_max_job_test), 1.0)

    def with_option(p: SiteProfile, name: str, opt: object) -> SiteProfile:
        return replace(p, **{name: opt})

    axes = [(name, list(opts)) for name, opts in POLISH_PAIRS]
    assert _descend(start, axes, score, with_option) == start
    got = _polish(start, POLISH_PAIRS, score, with_option, axes)
    assert (got.window_s, got.outage_s, got.bf_max_job_test) == (6 * 3600.0, None, 10)


def test_a_recent_fit_judges_only_the_last_share_of_the_fit_period(tmp_path):
    """``recent``: the fit's loss and priority fit judge the jobs of the fit period's last
    share only; the limits still come from the whole period, and the replay covers the log."""
    from sim.fit import ProfileError

    trace = recorded_log(QosLimits(max_jobs_per_user=3, max_nodes_per_user=8))
    whole, held, cut = split(trace)
    half, held2, cut2 = split(trace, recent=0.5)
    assert cut2 == cut and np.array_equal(held, held2)
    later = trace.submit[half].min()  # the last jobs of the fit period, all of them
    assert np.array_equal(half, whole & (trace.submit >= later))
    assert 0.3 < half.sum() / whole.sum() < 0.7  # an even workload: about half the jobs
    for bad in (0.0, 1.5, -0.2):
        with pytest.raises(ProfileError, match="recent"):
            split(trace, recent=bad)
    trace.source = str(tmp_path / "log.swf")
    trace.digest = "ef" * 32
    prof = fit(trace, jitters=1, recent=0.5)
    assert prof.fit_from_s == pytest.approx(trace.submit[half].min())
    assert prof.limits == "MaxJobsPerUser=3 MaxTRESPerUser=node=8"
    assert prof.fit["spearman"] > 0.9


def test_fit_cli_refuses_a_bad_recent_share(tmp_path):
    import io
    from contextlib import redirect_stderr

    from sim.fit_cli import main as fit_main
    from tests.sim.recorded import write_recorded

    path = write_recorded(tmp_path / "rec.swf", units=24)
    err = io.StringIO()
    with redirect_stderr(err):
        rc = fit_main([str(path), "--recent", "0", "--no-store"])
    assert rc == 2 and "recent" in err.getvalue()


def load_shipped() -> SiteProfile:
    from pathlib import Path

    import sim.data

    path = Path(sim.data.__file__).parent / "hpc2n-excerpt.swf.profile.json"
    return SiteProfile.from_json(path.read_text(), str(path))


def test_a_bad_profile_is_refused():
    with pytest.raises(ValueError, match="schema"):
        SiteProfile.from_json('{"schema": 99}')
    good = json.loads(load_shipped().to_json())
    assert good["schema"] == SCHEMA
    for bad in (0, -5, 2.5, "20", True):
        with pytest.raises(ValueError, match="bf_max_job_test"):
            SiteProfile.from_json(json.dumps({**good, "bf_max_job_test": bad}))


def test_fit_cli_stores_a_profile_that_replay_uses(tmp_path):
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from sim.fit_cli import main as fit_main
    from sim.replay_cli import main as replay_main
    from tests.sim.recorded import write_recorded

    path = write_recorded(tmp_path / "rec.swf", units=24)

    def run(main, *args):  # type: ignore[no-untyped-def]
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = main([*args])
        return rc, out.getvalue(), err.getvalue()

    rc, out, err = run(fit_main, str(path), "--jitters", "1")
    assert rc == 0, err
    assert "held-out part" in out and (tmp_path / "rec.swf.profile.json").exists()
    rc, out, err = run(replay_main, str(path), "--no-progress")
    assert rc == 0 and "site profile" in err and "rec.swf.profile.json" in err
    rc, out, err = run(replay_main, str(path), "--no-progress", "--no-profile")
    assert rc == 0 and "no site profile (--no-profile)" in err
    rc, out, err = run(fit_main, str(tmp_path / "missing.swf"))
    assert rc == 2 and "missing.swf" in err


def test_a_job_larger_than_the_node_cap_is_exempt_only_when_asked():
    from tests.sim.simhelpers import starts

    # user 0: a 6-node job (over the 4-node cap on its own), then a 2-node one
    rows = [(0, 100, 200, 6, 0), (10, 100, 200, 2, 0)]
    exempt = Simulator(
        make_trace(rows, total=10),
        limits=QosLimits(max_nodes_per_user=4, larger_jobs_exempt=True),
    )
    exempt.run()
    # the big job runs under another QOS; its nodes still count against the user's cap
    assert starts(exempt) == {1: 0.0, 2: 100.0}
    held = Simulator(make_trace(rows, total=10), limits=QosLimits(max_nodes_per_user=4))
    held.run()
    # batch_sched_delay (3 s) after its submission
    assert starts(held) == {2: 13.0} and held.never_started() == {1: "QOSMaxNodePerUserLimit"}


def config_of(key: str) -> SlurmConfig:
    return SlurmConfig.from_text("\n".join(priority_lines(key)) + "\n", key)


@pytest.mark.parametrize("key", ["fairshare-1d", "fairshare-7d", "fairshare-3.5d-size10k"])
def test_the_priority_is_recovered_from_a_recorded_priority_column(tmp_path, key):
    trace = read_trace(write_sacct_with_priority(tmp_path / "log.txt", config_of(key)))
    assert trace.has_recorded_priority
    fit_mask, _, _ = split(trace)
    ranked = priority_fit(trace, fit_mask, cluster_size(trace)[0])
    assert set(ranked) == set(PRIORITY_SETTINGS)
    assert max(ranked, key=ranked.__getitem__) == key
    assert ranked[key] > 0.99 and ranked["fifo"] < 0.5


def test_fit_recovers_a_priority_from_the_schedule_alone():
    """No Priority column: the replays' loss finds the multifactor setting the log was
    recorded under, jointly with the availability window (a window alone, under FIFO,
    was the fit's old local optimum)."""
    key = "fairshare-1d-size10k"
    trace = recorded_log(None, n=700, cfg=config_of(key), seed=5)
    trace.digest = "ef" * 32
    prof = fit(trace, jitters=1)
    assert prof.priority_spearman == {}
    assert prof.priority == key, prof.describe()
    assert prof.fit["spearman"] > 0.95 and prof.fit["ks"] < 0.05


def test_fit_keeps_the_priority_the_recorded_column_chose(tmp_path):
    path = write_sacct_with_priority(tmp_path / "log.txt", config_of("fairshare-1d"))
    trace = read_trace(path)
    prof = fit(trace, jitters=1)
    assert prof.priority == "fairshare-1d" and "PriorityDecayHalfLife=1-0" in prof.slurm_conf()
    assert prof.priority_spearman["fairshare-1d"] > 0.99
    assert all("priority fairshare-1d (recorded Priority" in str(s["setting"]) for s in prof.steps)
    store(prof, path)
    again = load(trace)
    assert again is not None and again.priority_spearman == prof.priority_spearman


def test_stored_profiles_without_recorded_priorities_still_load():
    from pathlib import Path

    import sim.data

    paths = list(Path(sim.data.__file__).parent.glob("*.profile.json"))
    assert paths
    for path in paths:
        text = path.read_text()
        prof = SiteProfile.from_json(text, str(path))
        assert prof.priority in PRIORITY_SETTINGS
        assert prof.slurm_conf() == json.loads(text)["slurm_conf"]


def test_a_replay_with_no_flags_takes_the_limits_the_log_shows(tmp_path, capsys):
    """No stored profile: ``hpcsim replay LOG`` still holds the per-user limits the recorded
    concurrency shows (not where ``--qos-limits`` is given), and the replay obeys them."""
    import pandas as pd

    from sim.replay_cli import main as replay_main
    from sim.traces import write_swf

    trace = recorded_log(QosLimits(max_jobs_per_user=3, max_nodes_per_user=8))
    log, out = tmp_path / "rec.swf", tmp_path / "s.csv"
    write_swf(trace, log)
    assert replay_main([str(log), "--no-progress", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "per-user limits from the recorded concurrency: MaxJobsPerUser=3" in err
    s = pd.read_csv(out)
    t = np.sort(s.start.to_numpy())
    running = [((s.user == u) & (s.start <= x) & (s.end > x)).sum() for x in t for u in (0, 1)]
    assert max(running) == 3
    assert replay_main([str(log), "--no-progress", "--qos-limits", "MaxJobsPerUser=5"]) == 0
    assert "from the recorded concurrency" not in capsys.readouterr().err


def test_a_replay_with_no_flags_names_the_users_with_limits_of_their_own(tmp_path, capsys):
    from sim.replay_cli import main as replay_main
    from sim.traces import write_swf

    limits = QosLimits(max_jobs_per_user=3, max_nodes_per_user=8, user_limits=((7, 6, 20, None),))
    trace = recorded_log(limits, total=64)
    write_swf(trace, tmp_path / "rec.swf")
    assert replay_main([str(tmp_path / "rec.swf"), "--no-progress"]) == 0
    name = read_trace(tmp_path / "rec.swf").user_names[7]
    err = capsys.readouterr().err
    # (the log's whole seconds let a user's jobs overlap by one: MaxJobsPerUser=4)
    assert re.search(
        f"\\(user {name} at [4-7] jobs(, \\d+ nodes)?: their recorded schedule ran past them\\)",
        err,
    ), err


def test_a_parallel_fit_chooses_as_the_serial_one():
    """``fit(workers=2)`` scores each search step's candidates in forked processes: the same
    profile and the same log of scores, in the same order."""
    trace = recorded_log(QosLimits(max_jobs_per_user=3), n=600)
    one = fit(trace, jitters=1)
    two = fit(trace, jitters=1, workers=2)
    assert two.describe() == one.describe()
    assert [(s["setting"], s["loss"]) for s in two.steps] == [
        (s["setting"], s["loss"]) for s in one.steps
    ]


@pytest.mark.parametrize("limited", [True, False])
def test_a_guarded_replay_schedules_as_one_run(limited):
    """The fit's replays run in stretches, looking at the queue between them: the schedule
    is the one a single run gives (fair share, an availability timeline, and with a
    per-user limit the Python passes, without it the compiled loop)."""
    from sim.availability import fitted

    trace = recorded_log(QosLimits(max_jobs_per_user=3), n=800)
    cfg = SlurmConfig.from_text("\n".join(priority_lines("fairshare-1d")) + "\n", "t")
    limits = QosLimits(max_jobs_per_user=2) if limited else None
    avail = fitted(recorded_usage(trace), 32, window=3600.0)

    def sim() -> Simulator:
        return Simulator(trace, cfg, total_units=32, limits=limits, availability=avail)

    one = simulated_waits(sim(), len(trace))
    guarded = simulated_waits(sim(), len(trace), max_pending=10**6)
    assert np.isfinite(one).all()
    assert np.array_equal(one, guarded, equal_nan=True)


def test_a_runaway_setting_is_stopped_and_scored_the_worst(monkeypatch):
    """A replay whose queue outgrows its bound is stopped as soon as the guard sees it; the
    fit scores such a setting infinite instead of replaying it to the end, and one that
    keeps up as before (the bound made tiny here, so that this loaded log outgrows it)."""
    import sim.fit

    trace = recorded_log(None, n=800)
    peak = recorded_max_pending(trace)
    tiny = Simulator(trace, SlurmConfig(), total_units=8)  # a quarter of the recorded size
    with pytest.raises(RunawayReplay, match="jobs pending at t="):
        simulated_waits(tiny, len(trace), max_pending=peak)
    mask, _, _ = split(trace)
    rec = trace.recorded_start - trace.submit
    prof = fit(trace, jitters=1)
    kept, _ = setting_loss(trace, prof, mask, rec, 1)
    assert math.isfinite(kept)
    monkeypatch.setattr(sim.fit, "RUNAWAY_FACTOR", 0.01)
    lost, figures = setting_loss(trace, prof, mask, rec, 1)
    assert lost == math.inf and "jobs pending at t=" in figures["runaway"]


def test_the_narrowed_window_is_stored_and_an_older_profile_loads_without_it():
    from dataclasses import replace

    old = json.loads(load_shipped().to_json())
    old.pop("narrow_s")
    assert SiteProfile.from_json(json.dumps(old)).narrow_s is None
    prof = replace(load_shipped(), window_s=6 * 3600.0, clamp=None, narrow_s=3600.0)
    back = SiteProfile.from_json(prof.to_json())
    assert back.narrow_s == 3600.0
    assert "1 h while a job waited beside idle units" in back.describe()


def test_the_fit_searches_the_narrowed_window_as_a_setting_of_its_own():
    """The fit's axis for the window narrowed beside idle units, and its score cache keeps
    the two worlds apart (one key for both would score the narrowed one as the other)."""
    from dataclasses import replace

    from sim.fit import NARROWS, _Scores

    prof = replace(load_shipped(), clamp=None, narrow_s=None)
    keys = {_Scores.key(replace(prof, narrow_s=n)) for n in NARROWS}
    assert None in NARROWS and len(keys) == len(NARROWS)
