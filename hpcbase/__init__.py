"""The shared layer of the suite: what ``sim``, ``mirage`` and ``themis`` all build on.

The Slurm client and its parsers (:mod:`hpcbase.slurm`), Slurm's time grammar
(:mod:`hpcbase.slurmtime`), the job and queue types the simulator and the live client share
(:mod:`hpcbase.jobs`, :mod:`hpcbase.snapshot`), the configuration machinery
(:mod:`hpcbase.config`), atomic file writes (:mod:`hpcbase.atomic`) and the command-line
dispatcher (:mod:`hpcbase.cli`). It imports none of the three packages.
"""
