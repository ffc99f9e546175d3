"""One chain placed into a replayed trace: the predecessor runs, a policy decides when to
submit the successor, and the gap between them is measured.

The gap is ``successor start - predecessor end``: > 0 is an interruption, < 0 an overlap.
If the policy never submits, the successor is submitted at the predecessor's end (what the
``reactive`` baseline does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hpcbase.jobs import JobSpec, JobState
from mirage.agents.common.policy import Decision, DecisionContext, Policy
from mirage.envs.world import ChainWorld, ResolvedChain
from mirage.observation import DECISION_INTERVAL, ChainState


class EpisodeError(RuntimeError):
    """An episode that cannot be played (e.g. the predecessor never starts)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one chain went. Times in seconds on the trace's clock."""

    t0: float
    gap: float
    pred_start: float
    pred_end: float
    succ_submit: float
    succ_start: float
    decisions: int
    forced: bool
    succ_units: int

    @property
    def interruption_hours(self) -> float:
        return max(0.0, self.gap) / 3600.0

    @property
    def overlap_node_hours(self) -> float:
        return max(0.0, -self.gap) / 3600.0 * self.succ_units

    def cost(self, interruption_weight: float = 1.0, overlap_weight: float = 1.0) -> float:
        """The weighted gap that the environment's reward is minus of."""
        return (
            interruption_weight * self.interruption_hours + overlap_weight * self.overlap_node_hours
        )


class ChainEpisode:
    """Drives one chain through the world's simulator; decisions every ``decision_interval``
    from the predecessor's start (or, with ``decide_within``, from that many seconds before
    its end)."""

    def __init__(
        self,
        world: ChainWorld,
        chain: ResolvedChain,
        t0: float,
        decision_interval: float = DECISION_INTERVAL,
        max_pred_wait: float = 14 * 86400.0,
        decide_within: float | None = None,
        estimate: bool = True,
    ) -> None:
        if decision_interval % world.sample_interval:
            raise ValueError("decision_interval must be a multiple of the sample interval")
        self.world = world
        self.sim = world.sim
        self.chain = chain
        self.t0 = t0
        self.decision_interval = decision_interval
        self.max_pred_wait = max_pred_wait
        self.decide_within = decide_within
        self.estimate = estimate
        self._est: tuple[float, float] = (math.nan, math.nan)  # (now, estimate) cache
        self.builder = world.new_builder()
        self.user = int(world.trace.user.max()) + 1 if len(world.trace) else 0
        self.outcome: Outcome | None = None
        self.decisions = 0
        self._begin()

    # -- simulation helpers -------------------------------------------------------------
    def _sample_to(self, t: float) -> None:
        """Advance sample by sample while the next sample time is <= t."""
        si = self.world.sample_interval
        sim, builder = self.sim, self.builder
        while self.now + si <= t + 1e-9:
            self.now += si
            sim.advance(self.now)
            builder.push(sim.queue_snapshot())

    def _spec(self, units: int, limit: float, runtime: float, name: str, dep: str = "") -> JobSpec:
        return JobSpec(
            units=units,
            limit=limit,
            runtime=runtime,
            user=self.user,
            name=name,
            dependency=dep,
            job_id=self.world.new_job_id(),
        )

    def _succ_spec(self, dep: str = "") -> JobSpec:
        c = self.chain
        return self._spec(c.succ_units, c.limit, c.runtime, "mirage-succ", dep)

    def _run_until_started(self, jid: int) -> float:
        sim = self.sim
        while True:
            view = sim.job(jid)
            if view.state != JobState.PENDING:
                return float(view.start)
            t = sim.next_event_time()
            if math.isinf(t):
                raise EpisodeError(f"job {jid} never starts (trace ends, t0={self.t0:.0f})")
            sim.advance(max(t, sim.now + 1800.0))

    def _begin(self) -> None:
        cp = self.world.checkpoint_before(self.t0)
        self.world.restore(cp)
        self.builder.set_state(cp.builder)
        self.now = cp.time
        self._sample_to(self.t0)
        c = self.chain
        self.pred_id = self.sim.submit(self._spec(c.units, c.limit, c.runtime, "mirage-pred"))
        self.pred_submit = self.now
        si = self.world.sample_interval
        while self.sim.job(self.pred_id).state == JobState.PENDING:
            if self.now - self.t0 > self.max_pred_wait:
                raise EpisodeError(f"predecessor still pending after {self.max_pred_wait} s")
            if math.isinf(self.sim.next_event_time()):
                raise EpisodeError("predecessor never starts (trace ends)")
            self._sample_to(self.now + si)
        self.pred_start = float(self.sim.job(self.pred_id).start)
        self.pred_end = self.pred_start + min(c.runtime, c.limit)
        # the first decision is at the first sample at or after the predecessor's start
        first = math.ceil(self.pred_start / si) * si
        if self.decide_within is not None:  # no decisions before the last decide_within s
            first = max(first, math.ceil((self.pred_end - self.decide_within) / si) * si)
        self._sample_to(max(self.now, first))
        if self.now >= self.pred_end:
            self._finish(Decision.SUBMIT, forced=True)

    # -- the decision interface ---------------------------------------------------------
    @property
    def done(self) -> bool:
        return self.outcome is not None

    def state(self) -> ChainState:
        """The chain's state now, with the start estimate when ``estimate`` is on."""
        if not self.estimate:
            return self._plain_state()
        return self._plain_state(self._estimate_now())

    def _plain_state(self, est_start: float = math.nan) -> ChainState:
        c = self.chain
        return ChainState(
            now=self.now,
            pred_units=c.units,
            pred_limit=c.limit,
            pred_submit=self.pred_submit,
            pred_start=self.pred_start,
            succ_units=c.succ_units,
            succ_limit=c.limit,
            est_start=est_start,
        )

    def _estimate_now(self) -> float:
        """:meth:`estimate_start` at the current time, computed once per decision."""
        if self._est[0] != self.now:
            est = self.estimate_start()
            self._est = (self.now, math.nan if est is None else est)
        return self._est[1]

    def observe(self):
        return self.builder.observe(self.state())

    def context(self, helpers: bool = False, features: bool = True) -> DecisionContext:
        """The context of the current decision; ``helpers`` adds the simulator-backed
        ``estimate_start`` and ``what_if`` (``what_if`` costs a snapshot and a restore);
        ``features=False`` leaves the start-estimate features out (a policy that does not
        read the observation need not pay for the probe)."""
        state = self.state() if features else self._plain_state()
        return DecisionContext.from_builder(
            self.builder,
            state,
            self.decision_interval,
            step=self.decisions,
            estimate_start=self.estimate_start if helpers else None,
            what_if=self.what_if if helpers else None,
        )

    def estimate_start(self) -> float | None:
        """Expected start of a successor submitted now: what a probe job submitted now would
        get (``Simulator.estimate_start_for``; the simulator is left as it is)."""
        est = self.sim.estimate_start_for(self._succ_spec())
        return None if est is None else float(est)

    def what_if(self, k: int) -> float:
        """The gap if the successor were submitted ``k`` decisions from now (restored after)."""
        sim = self.sim
        saved = sim.snapshot()
        try:
            target = min(self.now + k * self.decision_interval, self.pred_end)
            sim.advance(target)
            jid = sim.submit(self._succ_spec())
            return self._run_until_started(jid) - self.pred_end
        finally:
            sim.restore(saved)

    def step(self, decision: Decision) -> Outcome | None:
        """Apply one decision; returns the outcome once the successor has started."""
        if self.outcome is not None:
            raise EpisodeError("episode is over")
        self.decisions += 1
        if decision != Decision.WAIT:
            return self._finish(decision, forced=False)
        target = self.now + self.decision_interval
        if target >= self.pred_end:
            self._sample_to(self.pred_end)
            return self._finish(Decision.SUBMIT, forced=True)
        self._sample_to(target)
        return None

    def _finish(self, decision: Decision, forced: bool) -> Outcome:
        sim = self.sim
        submit_at = max(self.pred_end if forced else self.now, sim.now)
        sim.advance(submit_at)
        dep = f"afterany:{self.pred_id}" if decision == Decision.SUBMIT_AFTERANY else ""
        jid = sim.submit(self._succ_spec(dep))
        start = self._run_until_started(jid)
        self.outcome = Outcome(
            t0=self.t0,
            gap=start - self.pred_end,
            pred_start=self.pred_start,
            pred_end=self.pred_end,
            succ_submit=submit_at,
            succ_start=start,
            decisions=self.decisions,
            forced=forced,
            succ_units=self.chain.succ_units,
        )
        return self.outcome


def play(episode: ChainEpisode, policy: Policy, helpers: bool | None = None) -> Outcome:
    """Run ``policy`` on ``episode`` to the end. ``helpers`` defaults to what the policy
    needs (``estimate_start``/``what_if`` are only built for policies that use them)."""
    policy.reset()
    use = getattr(policy, "needs_simulator", False) if helpers is None else helpers
    features = getattr(policy, "needs_observation", False)
    while episode.outcome is None:
        episode.step(policy.decide(episode.context(helpers=use, features=features)))
    return episode.outcome
