"""Choose a Slurm client backend."""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
from typing import Any

from hpcbase.slurm.client import CliClient, SlurmClient
from hpcbase.slurm.errors import SlurmError

log = logging.getLogger(__name__)

BACKENDS = ("auto", "cli", "pyslurm")


def _pyslurm_present() -> bool:
    """Whether ``import pyslurm`` could work, without importing it."""
    if "pyslurm" in sys.modules:
        return sys.modules["pyslurm"] is not None
    try:
        return importlib.util.find_spec("pyslurm") is not None
    except (ImportError, ValueError):
        return False


def get_client(backend: str | None = None, **kwargs: Any) -> SlurmClient:
    """A client for the cluster ``SLURM_CONF`` (or ``conf=``) names.

    ``backend``: ``cli`` (Slurm's commands; the default and the tested one), ``pyslurm``
    (fails with a clear SlurmError when pyslurm is missing or built for another Slurm), or
    ``auto`` (pyslurm when it imports and matches, else cli). None reads
    ``MIRAGE_SLURM_BACKEND`` (default ``auto``). Other keyword arguments go to the client
    (``conf``, ``min_interval``, ``policy``).
    """
    name = (backend or os.environ.get("MIRAGE_SLURM_BACKEND") or "auto").lower()
    if name not in BACKENDS:
        raise SlurmError(f"unknown Slurm backend {name!r}; choose from {', '.join(BACKENDS)}")
    if name == "cli" or (name == "auto" and not _pyslurm_present()):
        return CliClient(**kwargs)
    from hpcbase.slurm.pyslurm_backend import PyslurmClient

    if name == "pyslurm":
        return PyslurmClient(**kwargs)
    try:
        return PyslurmClient(**kwargs)
    except SlurmError as e:
        log.debug("Slurm backend auto: using cli (%s)", e)
        return CliClient(**kwargs)
