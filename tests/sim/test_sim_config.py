"""slurm.conf parsing: the scheduling subset, defaults, and errors that name file:line."""

from __future__ import annotations

import math

import pytest

from hpcbase.config import ConfigError
from hpcbase.slurmtime import parse_duration
from sim.config import SlurmConfig

CONF = """
# a site's slurm.conf (excerpt)
ClusterName=test
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=10,bf_window=2880,bf_resolution=30,bf_max_job_test=200,default_queue_depth=50,sched_interval=20,bf_window_linear=90
PriorityType=priority/multifactor
PriorityWeightAge=1000
PriorityWeightFairshare=10000   # comment
PriorityWeightJobSize=500
PriorityMaxAge=1-0
PriorityDecayHalfLife=14-0
PriorityCalcPeriod=2
SelectTypeParameters=CR_Core
NodeName=gpu[001-084] CPUs=128 State=UNKNOWN
PartitionName=gpu-a100 Nodes=gpu[001-084] Default=YES MaxTime=2-00:00:00 PriorityJobFactor=2
PartitionName=dev Nodes=gpu[001-004] MaxTime=02:00:00
"""


def test_reads_the_scheduling_subset(tmp_path):
    path = tmp_path / "slurm.conf"
    path.write_text(CONF)
    cfg = SlurmConfig.from_file(path)
    assert cfg.bf_interval == 10 and cfg.bf_window == 2880 * 60 and cfg.bf_resolution == 30
    assert cfg.bf_window_linear == 90
    assert cfg.bf_max_job_test == 200 and cfg.default_queue_depth == 50 and cfg.sched_interval == 20
    assert cfg.multifactor and cfg.weight_fairshare == 10000 and cfg.weight_job_size == 500
    assert cfg.max_age == 86400 and cfg.decay_half_life == 14 * 86400 and cfg.calc_period == 120
    assert cfg.nodes == 84 and cfg.cpus == 84 * 128 and cfg.units == "cpus"
    assert cfg.partition("").name == "gpu-a100" and cfg.partition("dev").max_time == 7200


def test_defaults_are_slurms():
    cfg = SlurmConfig()
    assert (cfg.bf_interval, cfg.bf_window, cfg.bf_resolution, cfg.bf_max_job_test) == (
        30,
        86400,
        60,
        500,
    )
    assert (cfg.default_queue_depth, cfg.sched_interval, cfg.calc_period) == (100, 60, 300)
    assert cfg.priority_type == "priority/basic" and cfg.max_age == 7 * 86400


@pytest.mark.parametrize(
    "line, needle",
    [
        ("PriorityWeightAge=lots", "slurm.conf:2"),
        ("PriorityType=priority/fancy", "priority/basic"),
        ("SchedulerParameters=bf_interval=abc", "slurm.conf:2"),
        ("just words", "expected Key=Value"),
    ],
)
def test_bad_values_name_file_and_line(tmp_path, line, needle):
    path = tmp_path / "slurm.conf"
    path.write_text("ClusterName=x\n" + line + "\n")
    with pytest.raises(ConfigError, match=needle):
        SlurmConfig.from_file(path)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        SlurmConfig.from_file(tmp_path / "nope.conf")


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("2-00:00:00", 172800),
        ("2880", 172800),
        ("30:00", 1800),
        ("01:00:00", 3600),
        ("1-12", 129600),
        ("UNLIMITED", math.inf),
        ("Partition_Limit", math.inf),
    ],
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds
