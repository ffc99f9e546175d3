"""The one interface every Mirage policy implements, learned or not.

A driver (the simulated episode, or the live chain daemon) calls :meth:`Policy.reset` when a
new predecessor starts and :meth:`Policy.decide` at every decision point until the policy
submits. The context carries the observation plus optional helpers that only some drivers
can offer (``estimate_start``, ``what_if``); policies that need a missing helper fall back
to submitting reactively and say so in their docs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Protocol, runtime_checkable

import numpy as np

from mirage.observation import ChainState, ObservationBuilder


class Decision(IntEnum):
    """What to do with the successor now. ``WAIT`` and ``SUBMIT`` are the RL actions."""

    WAIT = 0
    SUBMIT = 1
    SUBMIT_AFTERANY = 2
    """Submit now with ``--dependency=afterany:<predecessor>``."""


@dataclass(slots=True)
class DecisionContext:
    """Everything a policy may look at for one decision.

    ``obs``: the :class:`~mirage.observation.ObservationBuilder` matrix. ``recent_waits``:
    waits (s) of jobs started over the builder's ``wait_horizon``. ``step``: decisions so far
    for this chain (0 at the first). ``estimate_start()``: expected start (same clock as
    ``chain.now``) of a successor submitted now, like ``sbatch --test-only``; None where
    unknown. ``what_if(k)``: the gap (s) if the successor were submitted ``k`` decisions
    from now (simulator only; ``k >= n_left`` means at the predecessor's end).
    """

    chain: ChainState
    obs: np.ndarray
    recent_waits: np.ndarray
    decision_interval: float
    step: int = 0
    estimate_start: Callable[[], float | None] | None = None
    what_if: Callable[[int], float] | None = None

    @classmethod
    def from_builder(
        cls,
        builder: ObservationBuilder,
        chain: ChainState,
        decision_interval: float,
        step: int = 0,
        estimate_start: Callable[[], float | None] | None = None,
        what_if: Callable[[int], float] | None = None,
    ) -> DecisionContext:
        """The context for ``chain`` from a builder fed with the queue samples so far (the
        live-cluster path: push a ``QueueSnapshot`` every sample interval, then call this).
        ``chain`` and ``decision_interval`` are on the snapshots' clock; the context is on the
        site's (the builder's ``time_scale``), as the observation is."""
        return cls(
            chain=builder.site_chain(chain),
            obs=builder.observe(chain),
            recent_waits=builder.recent_waits(),
            decision_interval=decision_interval * builder.time_scale,
            step=step,
            estimate_start=estimate_start,
            what_if=what_if,
        )

    @property
    def n_left(self) -> int:
        """Decisions left before the predecessor's limit (the forced submit comes after)."""
        rem = self.chain.pred_remaining
        return max(int(np.ceil(rem / self.decision_interval)), 1)


@runtime_checkable
class Policy(Protocol):
    """A submission policy."""

    name: str

    def reset(self) -> None:
        """Forget the previous chain."""

    def decide(self, ctx: DecisionContext) -> Decision:
        """WAIT, SUBMIT or SUBMIT_AFTERANY for the successor, now."""
        ...
