"""How chain jobs are recognised in Slurm: ``--comment=mirage:<chain>:<segment>``."""

from __future__ import annotations

import re

_TAG = re.compile(r"^mirage:([0-9a-f]{4,32}):(\d+)$")


def comment(chain_id: str, segment: int) -> str:
    return f"mirage:{chain_id}:{segment}"


def job_name(chain_id: str, segment: int) -> str:
    return f"mirage-{chain_id}-{segment}"


def parse_comment(text: str | None) -> tuple[str, int] | None:
    """(chain id, segment) of a tagged job's comment, None for any other comment."""
    m = _TAG.match((text or "").strip())
    return (m.group(1), int(m.group(2))) if m else None
