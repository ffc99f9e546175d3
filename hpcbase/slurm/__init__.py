"""The suite's one interface to Slurm: :func:`get_client` returns a :class:`SlurmClient`.

Example::

    from hpcbase.slurm import get_client
    slurm = get_client()                     # SLURM_CONF from the environment
    jid = slurm.submit("sleep 60", {"n": 2, "time": "5:00", "J": "demo"})
    slurm.job(jid).state, slurm.snapshot().total_units
"""

from hpcbase.slurm.client import DEFAULT_MIN_INTERVAL, CliClient, SlurmClient, options_to_args
from hpcbase.slurm.errors import SlurmError, SlurmUnavailable
from hpcbase.slurm.factory import get_client
from hpcbase.slurm.models import JobInfo, PartitionInfo
from hpcbase.slurm.runner import CommandRunner, RetryPolicy

__all__ = [
    "DEFAULT_MIN_INTERVAL",
    "CliClient",
    "CommandRunner",
    "JobInfo",
    "PartitionInfo",
    "RetryPolicy",
    "SlurmClient",
    "SlurmError",
    "SlurmUnavailable",
    "get_client",
    "options_to_args",
]
