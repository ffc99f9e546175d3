"""Reconciliation of a chain's recorded segments with the jobs Slurm knows, by their tag.

Run before any submission: an *intent* (recorded before ``sbatch``) whose tagged job exists is
adopted; one with no job is dropped so the segment is submitted again; tagged jobs beyond the
recorded one of a segment (which the protocol should never create) are cancelled.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from hpcbase.slurm import JobInfo, SlurmClient
from mirage.chain import tags
from mirage.chain.store import INTENT, ChainStore

log = logging.getLogger(__name__)

#: An intent older than this with no tagged job in Slurm cannot be told apart from a job that
#: ran and was forgotten (``MinJobAge``): the chain stops and says so rather than guess.
INTENT_GRACE = 300.0


class ReconcileError(RuntimeError):
    """The store and Slurm disagree in a way that needs a person."""


@dataclass(slots=True)
class Reconciled:
    adopted: list[int] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    cancelled: list[int] = field(default_factory=list)


def tagged_jobs(
    client: SlurmClient, chain_id: str, max_age: float = 0.0
) -> dict[int, list[JobInfo]]:
    """Segment -> the jobs Slurm remembers with this chain's tag, oldest id first."""
    found: dict[int, list[JobInfo]] = {}
    for job in client.recent_jobs(max_age=max_age):
        tag = tags.parse_comment(job.comment)
        if tag and tag[0] == chain_id:
            found.setdefault(tag[1], []).append(job)
    for jobs in found.values():
        jobs.sort(key=lambda j: j.id)
    return found


def reconcile(store: ChainStore, client: SlurmClient, chain_id: str, now: float) -> Reconciled:
    """Bring the store in line with Slurm for ``chain_id`` (see the module's doc)."""
    out = Reconciled()
    segs = store.segments(chain_id)
    found = tagged_jobs(client, chain_id)
    for seg in segs:
        jobs = found.get(seg.idx, [])
        if seg.status == INTENT:
            if jobs:
                job = jobs[0]
                store.record_submitted(chain_id, seg.idx, job.id, job.submit)
                store.event(chain_id, f"segment {seg.idx}: adopted job {job.id} after restart")
                out.adopted.append(seg.idx)
                keep: int | None = job.id
            elif now - seg.intent_at > INTENT_GRACE:
                raise ReconcileError(
                    f"segment {seg.idx}: submission intended at {seg.intent_at:.0f} but Slurm "
                    "has no tagged job; it may have run and been forgotten. Check sacct for "
                    f"comment {tags.comment(chain_id, seg.idx)!r}"
                )
            else:
                store.drop_intent(chain_id, seg.idx)
                store.event(chain_id, f"segment {seg.idx}: sbatch never created a job; retrying")
                out.dropped.append(seg.idx)
                continue
        else:
            keep = seg.job_id
        for job in jobs:
            if job.id != keep and not job.finished:
                client.cancel(job.id)
                store.event(chain_id, f"segment {seg.idx}: cancelled duplicate job {job.id}")
                out.cancelled.append(job.id)
    recorded = {s.idx for s in segs}
    for idx, jobs in found.items():
        if idx not in recorded:
            live = [j for j in jobs if not j.finished]
            for job in live:
                client.cancel(job.id)
                store.event(chain_id, f"segment {idx}: cancelled unrecorded job {job.id}")
                out.cancelled.append(job.id)
    return out
