"""Suite-wide fixtures: the local real Slurm cluster (scripts/slurm-cluster.sh).

``slurm_cluster`` (session): a one-node cluster with 16 CPUs on free loopback ports (Slurm's
scheduler defaults but ``bf_interval=5``). For the whole session ``SLURM_CONF`` names it and
``SBATCH_OUTPUT`` sends job output into its folder, not the working tree. Yields a
:class:`hpcbase.slurm.localcluster.LocalCluster`: ``conf_path``, ``env``, ``dir``,
``jobcomp_path``, ``stop_slurmctld()``, ``restart_slurmctld()``, ``start()``. Skips when
Slurm or munge is not installed (CI installs them with scripts/setup.sh, so there the tests
run).

``slurmctld_control`` (function): the same object, for tests that stop slurmctld; it is
started again after the test whatever happened.

A test that uses either must be marked ``slurm``: ``make test`` (scripts/test.sh) runs the
``slurm`` tests in a pytest process of their own, beside the others, so an unmarked one
would start a second cluster in the other process. Collection fails on such a test.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hpcbase.slurm.errors import SlurmError
from hpcbase.slurm.localcluster import LocalCluster, missing_programs

# Slurm's defaults, except a backfill pass every 5 s rather than 30 s, so that start
# estimates and backfilled starts show up within a test's patience.
SESSION_CONF_EXTRA = "SchedulerParameters=bf_interval=5\n"
# Unix sockets (munge, slurmd's step sockets) need short paths.
_MAX_DIR_LEN = 60


CLUSTER_FIXTURES = frozenset({"slurm_cluster", "slurmctld_control"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Fail collection on a test that uses the Slurm cluster without the ``slurm`` mark."""
    unmarked = [
        item.nodeid
        for item in items
        if CLUSTER_FIXTURES & set(getattr(item, "fixturenames", ()))
        and item.get_closest_marker("slurm") is None
    ]
    if unmarked:
        raise pytest.UsageError(
            "tests that use the Slurm cluster must be marked slurm: " + ", ".join(unmarked)
        )


def _cluster_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("slurm")
    if len(str(d)) <= _MAX_DIR_LEN:
        return d
    return Path(tempfile.mkdtemp(prefix="mslurm-", dir="/tmp"))


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    missing = missing_programs()
    if missing:
        pytest.skip(
            "the local Slurm cluster needs Slurm and munge (scripts/setup.sh installs them); "
            f"missing: {', '.join(missing)}"
        )
    directory = _cluster_dir(tmp_path_factory)
    extra = directory / "conf-extra.conf"
    extra.write_text(SESSION_CONF_EXTRA)
    cluster = LocalCluster(directory, cpus=16, conf_extra=extra)
    try:
        cluster.start()
    except (SlurmError, subprocess.TimeoutExpired) as e:
        with contextlib.suppress(SlurmError, subprocess.TimeoutExpired):
            cluster.stop()
        pytest.fail(f"could not start the local Slurm cluster:\n{e}", pytrace=False)
    saved = {k: os.environ.get(k) for k in cluster.env}
    os.environ.update(cluster.env)
    try:
        yield cluster
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        cluster.stop()
        if not str(directory).startswith(str(tmp_path_factory.getbasetemp())):
            shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def slurmctld_control(slurm_cluster: LocalCluster) -> Iterator[LocalCluster]:
    """The session cluster, for tests that stop or restart slurmctld; it runs again after
    the test."""
    try:
        yield slurm_cluster
    finally:
        slurm_cluster.start()
