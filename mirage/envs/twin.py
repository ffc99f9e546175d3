"""The simulator a Mirage world replays a site's log in, and how closely it follows the log.

Where ``hpcsim fit`` stored a site profile for the log (:func:`sim.profile.load`: its size,
availability timeline, per-user limits and priority), ``mirage backtest``, ``mirage
retrain`` and ``mirage study`` replay the log in it; otherwise in the project's default
simulator (Slurm's defaults, priority by age: :func:`mirage.envs.world.default_simulator`).
Each prints, beside every table, which of the two it used and the replay's fidelity against
the recorded schedule (:mod:`sim.fidelity`: mean, median and p90 waits, the per-job median
``|simulated - recorded|`` wait, Spearman's rank correlation and the KS distance).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mirage.envs.world import default_simulator, estimate_total_units
from sim.fidelity import Fidelity, fidelity
from sim.fit import simulated_waits
from sim.profile import SiteProfile, load
from sim.traces.model import Trace

NO_PROFILE = "none stored; `hpcsim fit TRACE` makes one"


@dataclass(frozen=True, slots=True)
class Twin:
    """The site profile the world replays the log in (None: the default simulator), and
    why there is none."""

    profile: SiteProfile | None = None
    why_not: str = NO_PROFILE

    def units(self, default: int) -> int:
        """The cluster size to simulate: the profile's, else ``default``."""
        return self.profile.units if self.profile is not None else int(default)

    def make_simulator(self, trace: Trace, total_units: int, seed: int) -> Any:
        """A simulator of ``trace`` (the ``make_simulator`` of a ``ChainWorld``)."""
        if self.profile is None:
            return default_simulator(trace, total_units, seed)
        return self.profile.simulator(trace, total_units=total_units, seed=seed)

    def describe(self, total_units: int, unit: str) -> str:
        if self.profile is not None:
            name = Path(self.profile.path).name or self.profile.trace
            return f"site profile {name} ({self.profile.describe()})"
        return (
            f"Slurm's defaults, priority by age, {total_units} {unit} "
            f"(no site profile: {self.why_not})"
        )

    def to_json(self) -> dict[str, Any]:
        p = self.profile
        return {"profile": p.path if p is not None else None, "why_not": "" if p else self.why_not}


def add_profile_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-profile",
        action="store_true",
        help="ignore the log's stored site profile (hpcsim fit); --total-units does too",
    )


def why_no_profile(args: argparse.Namespace) -> str:
    """Why the command's options rule the site profile out ("" when they do not): as in
    ``hpcsim replay``, a size given is a world of one's own."""
    if args.no_profile:
        return "--no-profile"
    return "--total-units given" if args.total_units else ""


def site_twin(trace: Trace, why_not: str = "") -> Twin:
    """The trace's stored site profile, or the default simulator: ``why_not`` says why a
    profile is not even looked for (e.g. ``"--no-profile"``)."""
    if why_not:
        return Twin(None, why_not)
    prof = load(trace)
    return Twin(prof, "" if prof is not None else NO_PROFILE)


def site_world(trace: Trace, args: argparse.Namespace, given: int | None) -> tuple[Twin, int]:
    """The simulator of a command's world (:func:`site_twin`, ruled out as
    :func:`why_no_profile` says) and its cluster size: ``given`` (the command's
    ``--total-units``), else the profile's, else the log's (``estimate_total_units``)."""
    twin = site_twin(trace, why_no_profile(args))
    return twin, given or twin.units(estimate_total_units(trace))


def replay_fidelity(trace: Trace, total_units: int, twin: Twin) -> Fidelity | None:
    """The whole log replayed in ``twin``'s simulator against its recorded schedule, job by
    job; None when the log records no start times."""
    rec = trace.recorded_start - trace.submit
    if not np.isfinite(rec).any():
        return None
    return fidelity(simulated_waits(twin.make_simulator(trace, total_units, 0), len(trace)), rec)


def fidelity_line(simulator: str, fid: Fidelity | dict[str, Any] | None) -> str:
    """One line: the simulator, and the replay's fidelity (``fid`` or its ``as_dict``)."""
    head = f"Simulator: {simulator}. "
    if fid is None:
        return head + "Replay fidelity: the log records no start times to compare with."
    f = fid.as_dict() if isinstance(fid, Fidelity) else fid
    return head + (
        f"Replay against the recorded schedule ({f['jobs']} jobs), simulated vs recorded: "
        f"mean wait {f['sim_mean_h']:.2f} vs {f['rec_mean_h']:.2f} h, median "
        f"{f['sim_median_h']:.2f} vs {f['rec_median_h']:.2f} h, p90 {f['sim_p90_h']:.2f} vs "
        f"{f['rec_p90_h']:.2f} h; per job: median |simulated - recorded| "
        f"{f['median_abs_h']:.2f} h, Spearman {f['spearman']:.3f}; KS distance {f['ks']:.3f}."
    )


def world_report(trace: Trace, total_units: int, twin: Twin) -> dict[str, Any]:
    """What ``fidelity.json`` keeps: the simulator in words, the profile, the figures and
    the line printed beside the tables."""
    fid = replay_fidelity(trace, total_units, twin)
    simulator = twin.describe(total_units, trace.unit)
    return {
        **twin.to_json(),
        "simulator": simulator,
        "fidelity": fid.as_dict() if fid is not None else None,
        "line": fidelity_line(simulator, fid),
    }
