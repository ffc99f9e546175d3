"""Replay a decision service's journal offline: the same queue samples pushed through a fresh
:class:`~mirage.observation.ObservationBuilder` (as the simulator's environment feeds it) and
the same policy, decision by decision. Equal actions show that the live path (``squeue`` ->
snapshot -> builder -> model) fed the model what the simulator's path would have. A decision
made by a model file that has since been replaced (``mirage retrain``; the journal keeps
each decision's model identity) cannot be replayed from the file there now: it is counted
apart, never as a mismatch."""

from __future__ import annotations

from dataclasses import dataclass

from mirage.agents import load_policy
from mirage.agents.common.policy import Decision, DecisionContext, Policy
from mirage.live.decisions import ACTIONS, JournalEntry, model_identity
from mirage.observation import ObservationBuilder


@dataclass(frozen=True, slots=True)
class AuditResult:
    """How many live decisions were replayed, and those whose offline action differed."""

    decisions: int
    mismatches: list[tuple[int, str, str]]  # (journal index, live action, offline action)
    replaced: int = 0  # decisions by a model file replaced since (not replayed)

    @property
    def agree(self) -> bool:
        return not self.mismatches


def audit(
    journal: list[JournalEntry],
    *,
    max_limit: float,
    window: int,
    sample_interval: float,
    decision_interval: float,
    time_scale: float = 1.0,
) -> AuditResult:
    """Replay ``journal`` with the live service's settings (intervals on the cluster's clock,
    ``max_limit`` on the site's); each policy spec is loaded afresh."""
    builder: ObservationBuilder | None = None
    policies: dict[str, Policy] = {}
    now_serving: dict[str, str] = {}
    decisions = replaced = 0
    mismatches: list[tuple[int, str, str]] = []
    for i, e in enumerate(journal):
        if e.kind == "sample" and e.snapshot is not None:
            if builder is None:
                builder = ObservationBuilder(
                    e.snapshot.total_units,
                    max_limit,
                    window,
                    sample_interval * time_scale,
                    time_scale=time_scale,
                )
            builder.push(e.snapshot)
            continue
        if e.kind != "decide" or e.chain is None:
            continue
        decisions += 1
        if e.model and e.model != now_serving.setdefault(e.spec, model_identity(e.spec)):
            replaced += 1
            continue
        if builder is None:  # the service waits until it has a sample
            offline = "wait"
        else:
            policy = policies.get(e.spec)
            if policy is None:
                policy = policies[e.spec] = load_policy(e.spec)
            if e.step == 0:
                policy.reset()
            ctx = DecisionContext.from_builder(builder, e.chain, decision_interval, step=e.step)
            offline = ACTIONS[Decision(policy.decide(ctx))]
        if offline != e.action:
            mismatches.append((i, e.action, offline))
    return AuditResult(decisions, mismatches, replaced)
