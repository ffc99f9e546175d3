"""The per-node usage report each daemon publishes every window (small JSON, with a TTL)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from themis.sched.allocation import NodeUsage
from themis.sched.tags import JobTag

VERSION = 1


class RecordError(ValueError):
    """A report that cannot be decoded (another version, or damaged)."""


@dataclass(frozen=True)
class Report:
    """One node's window: when it closed (Unix time), its usage, and the caps it applied
    (bytes/s; missing = uncapped)."""

    node: str
    time: float
    seconds: float
    usage: tuple[NodeUsage, ...]
    caps: dict[str, float]


def encode(report: Report) -> bytes:
    """``{"v":1,"n":node,"t":time,"s":seconds,"j":[[job,user,group,nodes,bytes,ops,queued,
    backlogged,cap],...]}``; cap is 0 when uncapped."""
    jobs = [
        [
            u.tag.job_id,
            u.tag.user,
            u.tag.group,
            u.tag.nodes,
            u.bytes,
            u.ops,
            u.queued,
            int(u.backlogged),
            round(report.caps.get(u.tag.job_id, 0.0)),
        ]
        for u in report.usage
    ]
    doc = {
        "v": VERSION,
        "n": report.node,
        "t": round(report.time, 3),
        "s": round(report.seconds, 4),
        "j": jobs,
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def decode(raw: bytes | str) -> Report:
    """The report in ``raw``; raises :class:`RecordError` naming what is wrong."""
    try:
        doc = json.loads(raw)
        if doc.get("v") != VERSION:
            raise RecordError(f"report version {doc.get('v')!r}, expected {VERSION}")
        node, seconds = str(doc["n"]), float(doc["s"])
        if not (seconds > 0 and math.isfinite(seconds)):
            raise RecordError(f"report of {node}: window {seconds!r} s")
        when = float(doc["t"])
        if not math.isfinite(when):
            raise RecordError(f"report of {node}: time {when!r}")
        usage, caps = [], {}
        for job, user, group, nodes, nbytes, ops, queued, backlogged, cap in doc["j"]:
            tag = JobTag(str(job), str(user), str(group), int(nodes))
            counts = (int(nbytes), int(ops), int(queued))
            if tag.nodes < 1 or min(counts) < 0 or not (math.isfinite(cap) and cap >= 0):
                raise RecordError(
                    f"report of {node}: job {tag.job_id}: nodes {tag.nodes}, bytes, operations "
                    f"and queued bytes {counts}, cap {cap!r} (nodes >= 1, the rest >= 0)"
                )
            usage.append(NodeUsage(tag, node, *counts, seconds, bool(backlogged)))
            if cap:
                caps[tag.job_id] = float(cap)
        return Report(node, when, seconds, tuple(usage), caps)
    except RecordError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise RecordError(f"undecodable report: {exc}") from None
