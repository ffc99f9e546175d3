"""Errors raised by the Slurm clients."""

from __future__ import annotations


class SlurmError(RuntimeError):
    """A Slurm command or call failed; the message carries Slurm's own error text."""


class SlurmUnavailable(SlurmError):
    """slurmctld (or munged) could not be reached or did not answer in time, after retries."""
