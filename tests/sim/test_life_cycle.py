"""The compiled life cycle (sim/_lifecycle.c: trace arrivals, starts, ends) gives the same
records and the same state as its Python reference (``compiled_life_cycle = False``)."""

from __future__ import annotations

from dataclasses import astuple, replace

from hypothesis import given, settings
from hypothesis import strategies as st

from hpcbase.jobs import JobSpec
from sim.availability import Availability
from sim.config import Partition
from sim.engine import Simulator
from sim.generate import generate
from sim.limits import QosLimits
from tests.sim.simhelpers import make_trace
from tests.sim.test_quiet_ticks import FAIRSHARE
from tests.sim.test_quiet_ticks import job as quiet_job

# test_quiet_ticks' (submit, runtime, limit, units, user), with an exit code (FAILED ends)
job = st.tuples(quiet_job, st.sampled_from([0, 0, 0, 1])).map(lambda r: (*r[0], r[1]))

limits = st.sampled_from(
    [
        None,
        QosLimits(max_nodes_per_user=12),
        QosLimits(max_jobs_per_user=2, max_cpus_per_user=20),
        QosLimits(max_nodes_per_user=6, larger_jobs_exempt=True),
    ]
)


def records(sim: Simulator) -> list[tuple]:
    return [astuple(r) for r in sim.records]


def pair(make) -> tuple[Simulator, Simulator]:  # type: ignore[no-untyped-def]
    """The same simulator twice: compiled life cycle, and the Python reference."""
    fast, slow = make(), make()
    slow.compiled_life_cycle = False
    return fast, slow


@settings(max_examples=80, deadline=None)
@given(
    st.lists(job, min_size=1, max_size=50),
    st.sampled_from([0.0, 3.0]),  # batch_sched_delay
    st.sampled_from([0.0, 60.0]),  # sched_interval
    st.sampled_from([1.0, 60.0]),  # bf_resolution
    st.booleans(),  # age and fair-share weights, or basic priority
    limits,
    st.lists(st.tuples(st.integers(1, 20000), st.integers(0, 16)), max_size=4),  # availability
    # two partitions (the trace names none: all go to the default one), or a MaxTime (the
    # Python event loop with the compiled starts and ends)
    st.sampled_from([None, "two", "max_time"]),
)
def test_compiled_life_cycle_gives_the_same_records(
    rows, delay, sched, res, multifactor, lim, steps, parts
):
    rows.sort(key=lambda r: r[0])
    cfg = replace(FAIRSHARE, batch_sched_delay=delay, sched_interval=sched, bf_resolution=res)
    if not multifactor:
        cfg = replace(cfg, priority_type="priority/basic")
    if parts == "two":
        two = {"a": Partition("a", default=True), "b": Partition("b", priority_tier=2)}
        cfg = replace(cfg, partitions=two)
    elif parts == "max_time":
        cfg = replace(cfg, partitions={"a": Partition("a", default=True, max_time=3000.0)})
    times = sorted({float(t) for t, _ in steps})
    av = Availability(tuple(times), tuple(u for _, u in steps[: len(times)])) if times else None
    fast, slow = pair(
        lambda: Simulator(make_trace(rows, total=16), cfg, limits=lim, availability=av)
    )
    half = float(rows[len(rows) // 2][0])
    fast.run(until=half)
    slow.run(until=half)
    assert fast.snapshot() == slow.snapshot()
    fast.run()
    slow.run()
    assert records(fast) == records(slow)
    assert fast.snapshot() == slow.snapshot()


@settings(max_examples=40, deadline=None)
@given(st.lists(job, min_size=2, max_size=30), st.booleans(), st.booleans())
def test_named_and_dependent_jobs_take_the_python_path(rows, named, cancel):
    """Trace jobs with names (singleton groups), an injected job waiting on a trace job's
    start and one on its end, and a cancelled job: the compiled cycle hands those jobs to
    Python, in order, and the schedule is unchanged."""
    rows.sort(key=lambda r: r[0])
    names = ["grp" if named and i % 2 else "" for i in range(len(rows))]

    def make() -> Simulator:
        return Simulator(make_trace(rows, total=16, names=names), FAIRSHARE)

    fast, slow = pair(make)
    for sim in (fast, slow):
        sim.run(until=float(rows[0][0]))  # job 1 has arrived
        sim.submit(JobSpec(units=2, limit=100.0, runtime=50.0, user=1, dependency="after:1+1"))
        sim.submit(JobSpec(units=1, limit=100.0, runtime=50.0, user=2, dependency="afterok:1"))
        sim.submit(JobSpec(units=1, limit=100.0, runtime=5.0, name="grp", dependency="singleton"))
        sim.run(until=float(rows[0][0]) + 1.0)
        if cancel and (sim.state.running or sim.state.pending):
            sim.cancel(min(sim.state.running or sim.state.pending))
        sim.run()
    assert records(fast) == records(slow)
    assert fast.snapshot() == slow.snapshot()


def test_compiled_life_cycle_on_a_generated_workload():
    """Thousands of jobs under fair share and a per-user limit: the same records, and a
    restored snapshot goes on as the reference does."""
    trace = generate(3000, 256, seed=11, load=0.95)
    cfg = replace(FAIRSHARE, calc_period=300.0, decay_half_life=86400.0, batch_sched_delay=3.0)
    lim = QosLimits(max_nodes_per_user=200)
    fast, slow = pair(lambda: Simulator(trace, cfg, limits=lim))
    half = float(trace.submit[1500])
    fast.run(until=half)
    slow.run(until=half)
    blob = fast.snapshot()
    assert blob == slow.snapshot()
    fast.run()
    slow.run()
    assert records(fast) == records(slow)
    fast.restore(blob)
    fast.run()
    assert records(fast) == records(slow)
