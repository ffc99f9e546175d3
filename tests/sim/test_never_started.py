"""A job that can never start ends the run with a report, under every priority type."""

from __future__ import annotations

import numpy as np
import pytest

from hpcbase.jobs import JobSpec
from sim.config import SlurmConfig
from sim.engine import BackfillCycle, Simulator
from sim.limits import QosLimits
from tests.sim.simhelpers import make_trace

PRIORITIES = {
    "basic": "",
    # fair share and age count only with accounting, as in Slurm 22.05
    "multifactor": "AccountingStorageType=accounting_storage/slurmdbd\n"
    "PriorityType=priority/multifactor\nPriorityWeightAge=1000\n"
    "PriorityWeightFairshare=10000\nPriorityWeightJobSize=100\n",
}
NODES = "NodeName=n[1-64]\nPartitionName=all Nodes=ALL Default=YES MaxTime=10\n"
# (case, extra slurm.conf, the job that never starts, the reason reported)
CASES = [
    ("over the per-user node cap", "", dict(units=20), "QOSMaxNodePerUserLimit"),
    (
        "larger than its partition",
        "NodeName=n[1-64]\nPartitionName=all Nodes=ALL Default=YES\n"
        "PartitionName=two Nodes=n[1-2]\n",
        dict(units=3, partition="two"),
        "rejected: Requested node configuration is not available",
    ),
    ("over MaxTime", NODES, dict(units=2, limit=3600), "PartitionTimeLimit"),
    ("afterok on a failed job", "", dict(units=2, dependency="afterok:1"), "Dependency"),
]


@pytest.mark.parametrize("kind", sorted(PRIORITIES))
@pytest.mark.parametrize(("case", "conf", "spec", "why"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("cycle", [None, BackfillCycle(phase=0.5, cost=0.2)], ids=["", "cycle"])
def test_a_job_that_can_never_start_ends_the_run(kind, case, conf, spec, why, cycle):
    fields = dict(limit=200, units=2, partition="") | spec
    # trace jobs 1 (it fails) and 3, and the job that never starts: job 2 of the trace, or
    # injected when it has a dependency (a trace has none)
    rows = [
        (0, 100, 200, 2, 0, 1),
        (10, 100, fields["limit"], fields["units"], 1),
        (20, 100, 200, 2, 2),
    ]
    trace = make_trace(rows, total=64)
    dep = fields.get("dependency")
    if dep:
        trace = trace.select(np.array([True, False, True]))
    elif conf:
        trace.partitions = ["", str(fields["partition"]), ""]
    sim = Simulator(
        trace,
        SlurmConfig.from_text(PRIORITIES[kind] + conf),
        limits=QosLimits(max_nodes_per_user=16),
        cycle=cycle,
    )
    stuck = 2
    if dep:
        sim.advance(5)  # job 1 is known
        stuck = sim.submit(
            JobSpec(units=2, limit=200, runtime=100, user=1, submit=10, dependency=str(dep))
        )
    sim.run()  # returns: the test would hang otherwise
    assert sim.never_started() == {stuck: why}
    assert {r.job_id for r in sim.records if r.start >= 0} == {1, 3}
    assert sim.next_event_time() == float("inf")
