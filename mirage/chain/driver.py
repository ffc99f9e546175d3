"""One step of driving a chain: follow its jobs, ask the policy, submit the next segment.

The segment ``k+1`` is pre-submitted when the policy says so while segment ``k`` runs, or
submitted at ``k``'s end otherwise ("forced", what ``reactive`` does). Only one segment is
ever ahead of the running one. A segment that ends other than COMPLETED or TIMEOUT (a
checkpointing job that runs to its limit ends in TIMEOUT) stops the chain, and cancels a
pre-submitted successor, unless the chain was submitted with ``--keep-going``.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from hpcbase.atomic import atomic_write
from hpcbase.slurm import JobInfo, SlurmClient, SlurmError, SlurmUnavailable
from mirage.chain import paths, tags
from mirage.chain.reconcile import ReconcileError, reconcile
from mirage.chain.store import (
    ACTIVE,
    CANCELLED,
    COMPLETED,
    ENDED,
    FAILED,
    INTENT,
    Chain,
    ChainStore,
    Segment,
)
from mirage.live.decisions import DecisionResult
from mirage.live.history import DEFAULT_MAX_LIMIT
from mirage.metrics import Metrics
from mirage.observation import ChainState

log = logging.getLogger(__name__)

#: Slurm end states of a segment that went as planned.
OK_STATES = frozenset({"COMPLETED", "TIMEOUT"})


class Decider(Protocol):
    """Where decisions come from: the in-process service or agentd over HTTP."""

    def decide(self, spec: str, chain: ChainState, step: int) -> DecisionResult: ...


def base_state(state: str | None) -> str:
    return (state or "").split()[0].rstrip("+") if state else ""


def segment_ok(seg: Segment) -> bool:
    return base_state(seg.slurm_state) in OK_STATES


def export_arg(chain: Chain, idx: int, prev: Segment | None, root: Path) -> str:
    """The ``--export`` value that tells segment ``idx`` where it stands."""
    env = {
        "MIRAGE_CHAIN_ID": chain.id,
        "MIRAGE_SEGMENT": str(idx),
        "MIRAGE_SEGMENTS": str(chain.segments),
        "MIRAGE_PREV_JOBID": str(prev.job_id) if prev and prev.job_id else "",
        "MIRAGE_PREV_RUNNING": "1" if prev is not None and prev.status != ENDED else "0",
        "MIRAGE_PREV_DONE_FILE": str(paths.done_marker(root, chain.id, idx - 1)) if prev else "",
    }
    return "--export=ALL," + ",".join(f"{k}={v}" for k, v in env.items())


def write_marker(path: Path, text: str) -> None:
    """Write a marker file atomically: a waiting segment never reads half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text)


def user_gave(args: list[str], *names: str) -> bool:
    return any(a == n or a.startswith(n + "=") for a in args for n in names)


class ChainDriver:
    """Drives the chains of one store with one Slurm client and one decider."""

    def __init__(
        self,
        store: ChainStore,
        client: SlurmClient,
        decider: Decider,
        *,
        decision_interval: float,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.time,
        poll_age: float = 5.0,
    ) -> None:
        self.store = store
        self.client = client
        self.decider = decider
        self.decision_interval = float(decision_interval)
        self.metrics = metrics
        self.clock = clock
        self.poll_age = poll_age
        self._last_decision: dict[tuple[str, int], float] = {}

    # ---- submission ----------------------------------------------------------------------
    def submit_segment(self, chain: Chain, idx: int, how: str, dependency: bool = False) -> int:
        """Record the intent, reconcile, then sbatch segment ``idx``; returns its job id."""
        now = self.clock()
        reconcile(self.store, self.client, chain.id, now)
        segs = {s.idx: s for s in self.store.segments(chain.id)}
        if idx in segs:  # already there (adopted by the reconciliation)
            return int(segs[idx].job_id or 0)
        prev = segs.get(idx - 1)
        prev_running = prev is not None and prev.status != ENDED
        self.store.record_intent(chain.id, idx, how, prev_running)
        args = list(chain.sbatch_args)
        if not user_gave(args, "-J", "--job-name"):
            args.append(f"--job-name={tags.job_name(chain.id, idx)}")
        if not user_gave(args, "-D", "--chdir"):
            args.append(f"--chdir={chain.workdir}")
        args += [
            f"--comment={tags.comment(chain.id, idx)}",
            export_arg(chain, idx, prev, self.store.root),
        ]
        if dependency and prev is not None and prev.job_id:
            args.append(f"--dependency=afterany:{prev.job_id}")
        try:
            jid = self.client.submit(Path(chain.script), args)
        except SlurmUnavailable:
            raise  # the intent stays: the next reconciliation finds the job or drops it
        except SlurmError as e:
            self.store.drop_intent(chain.id, idx)
            self.fail(chain.id, f"segment {idx}: sbatch refused it: {e}")
            raise
        self.store.record_submitted(chain.id, idx, jid, self.clock())
        self.store.event(
            chain.id,
            f"segment {idx}: submitted job {jid} ({how}"
            f"{', predecessor still running' if prev_running else ''})",
        )
        if self.metrics:
            self.metrics.submissions.labels(how).inc()
        return jid

    def fail(self, chain_id: str, reason: str, status: str = FAILED) -> None:
        self.store.set_status(chain_id, status, reason)
        if self.metrics:
            self.metrics.chains_finished.labels(status).inc()
        log.warning("chain %s %s: %s", chain_id, status, reason)

    def cancel(self, chain_id: str, reason: str = "cancelled by the user") -> list[int]:
        """Cancel the chain's unfinished jobs and mark it cancelled."""
        cancelled = []
        for seg in self.store.segments(chain_id):
            if seg.job_id and seg.status != ENDED:
                self.client.cancel(seg.job_id)
                self.store.update_segment(chain_id, seg.idx, status=ENDED, slurm_state="CANCELLED")
                cancelled.append(seg.job_id)
        self.fail(chain_id, reason, CANCELLED)
        return cancelled

    # ---- following jobs ------------------------------------------------------------------
    def _refresh(self, chain: Chain, segs: list[Segment]) -> list[Segment]:
        root = self.store.root
        for seg in segs:
            if seg.status == ENDED or not seg.job_id:
                continue
            job: JobInfo | None = self.client.job(seg.job_id, max_age=self.poll_age)
            if job is None:
                self.store.update_segment(chain.id, seg.idx, status=ENDED, slurm_state="LOST")
                self.store.event(chain.id, f"segment {seg.idx}: Slurm forgot job {seg.job_id}")
                continue
            fields: dict[str, object] = {}
            if job.start is not None and not job.pending and seg.start != job.start:
                fields["start"] = job.start
            if job.finished:
                fields.update(
                    status=ENDED,
                    slurm_state=base_state(job.state),
                    end_time=job.end if job.end is not None else self.clock(),
                    exit_code=job.exit_code,
                )
                write_marker(
                    paths.done_marker(root, chain.id, seg.idx),
                    f"{seg.job_id} {base_state(job.state)}\n",
                )
            elif base_state(job.state) != seg.slurm_state:
                fields["slurm_state"] = base_state(job.state)
            self.store.update_segment(chain.id, seg.idx, **fields)
            if "status" in fields:
                self.store.event(
                    chain.id,
                    f"segment {seg.idx}: job {seg.job_id} ended "
                    f"{fields['slurm_state']} (exit {job.exit_code})",
                )
        segs = self.store.segments(chain.id)
        by_idx = {s.idx: s for s in segs}
        for seg in segs:
            prev = by_idx.get(seg.idx - 1)
            if (
                seg.gap is None
                and seg.start is not None
                and prev is not None
                and prev.end_time is not None
                and prev.status == ENDED
            ):
                gap = float(seg.start - prev.end_time)
                self.store.update_segment(chain.id, seg.idx, gap=gap)
                self.store.event(chain.id, f"segment {seg.idx}: gap {gap:+.0f} s")
                if self.metrics:
                    self.metrics.observe_gap(gap)
        return self.store.segments(chain.id)

    # ---- one step ------------------------------------------------------------------------
    def tick(self, chain_id: str) -> bool:
        """Advance one chain; True while it is still active. Raises SlurmUnavailable."""
        chain = self.store.chain(chain_id)
        if chain.status == CANCELLED:  # a submission may have raced with the cancel
            self._cancel_live_segments(chain_id)
        if chain.status != ACTIVE:
            return False
        segs = self.store.segments(chain_id)
        if any(s.status == INTENT for s in segs):
            try:
                reconcile(self.store, self.client, chain_id, self.clock())
            except ReconcileError as e:
                self.fail(chain_id, str(e))
                return False
            segs = self.store.segments(chain_id)
        if not segs:
            self.submit_segment(chain, 0, "first")
            return True
        segs = self._refresh(chain, segs)
        bad = [s for s in segs if s.status == ENDED and not segment_ok(s)]
        if bad and not chain.keep_going:
            self._fail_after(chain_id, bad[0], segs)
            return False
        last = segs[-1]
        if last.status == ENDED:
            return self._after_last_ended(chain, last, bad)
        if last.idx == chain.segments - 1 or len(segs) >= 2 and segs[-2].status != ENDED:
            return True  # the last segment, or a successor already waits
        if last.start is None:
            return True  # decisions begin once the predecessor runs
        self._decide(chain, last)
        return True

    def _cancel_live_segments(self, chain_id: str) -> None:
        for seg in self.store.segments(chain_id):
            if seg.job_id and seg.status != ENDED:
                self.client.cancel(seg.job_id)
                self.store.update_segment(chain_id, seg.idx, status=ENDED, slurm_state="CANCELLED")

    def _fail_after(self, chain_id: str, s: Segment, segs: list[Segment]) -> None:
        """Segment ``s`` failed: cancel the later ones and fail the chain."""
        for later in segs:
            if later.idx > s.idx and later.job_id and later.status != ENDED:
                self.client.cancel(later.job_id)
                self.store.event(
                    chain_id,
                    f"segment {later.idx}: cancelled job {later.job_id} (predecessor failed)",
                )
        self.fail(
            chain_id,
            f"segment {s.idx} (job {s.job_id}) ended {s.slurm_state} "
            f"with exit code {s.exit_code}; use --keep-going to go on after failures",
        )

    def _after_last_ended(self, chain: Chain, last: Segment, bad: list[Segment]) -> bool:
        """The newest segment ended: the chain completes, or its next segment goes in now."""
        if last.idx == chain.segments - 1:
            note = f"{len(bad)} segment(s) failed" if bad else ""
            self.store.set_status(chain.id, COMPLETED, note)
            if self.metrics:
                self.metrics.chains_finished.labels(COMPLETED).inc()
            return False
        self.submit_segment(chain, last.idx + 1, "forced")
        return True

    def _estimate_start(self, chain: Chain) -> float:
        """Slurm's expected start of the next segment if it were submitted now
        (``sbatch --test-only``, once per decision), for the learned policies' start-estimate
        features; NaN for a baseline (which does not read them) or when Slurm cannot say."""
        from mirage.agents.baselines import BASELINES

        if chain.policy in BASELINES:
            return math.nan
        args = list(chain.sbatch_args)
        if not user_gave(args, "-D", "--chdir"):
            args.append(f"--chdir={chain.workdir}")
        try:
            est = self.client.test_only(Path(chain.script), args)
        except SlurmError as e:
            log.warning("chain %s: sbatch --test-only failed: %s", chain.id, e)
            return math.nan
        return math.nan if est is None else float(est)

    def _decide(self, chain: Chain, pred: Segment) -> None:
        key = (chain.id, pred.idx + 1)
        now = self.clock()
        if now - self._last_decision.get(key, -math.inf) < self.decision_interval - 0.5:
            return
        self._last_decision[key] = now
        job = self.client.job(int(pred.job_id or 0), max_age=self.poll_age)
        if job is None or job.start is None:
            return
        units = job.cpus if self.client.partition().units == "cpus" else job.nodes
        limit = float(job.time_limit) if job.time_limit else DEFAULT_MAX_LIMIT
        state = ChainState(
            now=now,
            pred_units=units,
            pred_limit=limit,
            pred_submit=float(job.submit or pred.submitted_at or now),
            pred_start=float(job.start),
            succ_units=units,
            succ_limit=limit,
            est_start=self._estimate_start(chain),
        )
        step = sum(1 for d in self.store.decisions(chain.id) if d["segment"] == pred.idx + 1)
        result = self.decider.decide(chain.policy, state, step)
        self.store.log_decision(
            chain.id, pred.idx + 1, result.time, result.policy, result.action, result.inputs
        )
        if self.metrics:
            self.metrics.count_decision(result.policy, result.action, bool(result.outside_support))
        model = result.inputs.get("model")
        log.info(
            "chain %s segment %d: %s by %s (remaining %.0f s)%s",
            chain.id,
            pred.idx + 1,
            result.action,
            f"{result.policy} [{model}]" if model else result.policy,
            state.pred_remaining,
            "; outside the model's training range: " + ", ".join(result.outside_support)
            if result.outside_support
            else "",
        )
        if result.submit:
            self.submit_segment(
                chain,
                pred.idx + 1,
                "afterany" if result.action == "afterany" else "policy",
                dependency=result.action == "afterany",
            )
