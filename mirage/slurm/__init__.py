"""The suite's one interface to Slurm: :func:`get_client` returns a :class:`SlurmClient`.

Example::

    from mirage.slurm import get_client
    slurm = get_client()                     # SLURM_CONF from the environment
    jid = slurm.submit("sleep 60", {"n": 2, "time": "5:00", "J": "demo"})
    slurm.job(jid).state, slurm.snapshot().total_units
"""

from mirage.slurm.client import DEFAULT_MIN_INTERVAL, CliClient, SlurmClient, options_to_args
from mirage.slurm.errors import SlurmError, SlurmUnavailable
from mirage.slurm.factory import get_client
from mirage.slurm.models import JobInfo, PartitionInfo
from mirage.slurm.runner import CommandRunner, RetryPolicy
from mirage.slurm.timefmt import format_duration, parse_duration, parse_timestamp

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
    "format_duration",
    "get_client",
    "options_to_args",
    "parse_duration",
    "parse_timestamp",
]
