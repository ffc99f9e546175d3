"""Sharing policies as nested share trees (ThemisIO's job/user/group/size fairness).

A policy is a list of internal tree levels (``group``, ``user``) above the jobs, plus how a job's
leaf weight is computed (``equal`` = 1 per job, ``nodes`` = the job's node count).  Every active
internal node splits its parent's share equally (times an optional weight override); the leaves
split their parent's share by leaf weight.  Idle jobs (no queued requests) are not in the tree.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from themis.sched.tags import JobTag

# name -> (internal levels from the root, leaf weight)
POLICIES: dict[str, tuple[tuple[str, ...], str]] = {
    "fifo": ((), "equal"),
    "job-fair": ((), "equal"),
    "size-fair": ((), "nodes"),
    "user-fair": (("user",), "equal"),
    "user-then-size-fair": (("user",), "nodes"),
    "group-user-size-fair": (("group", "user"), "nodes"),
}


class PolicyError(ValueError):
    """A policy name or policy file is invalid; the message names the file and field."""


def _frozen(d: Mapping[str, float] | None) -> Mapping[str, float]:
    return MappingProxyType(dict(d or {}))


@dataclass(frozen=True)
class Policy:
    """A sharing policy.  Build with :meth:`from_name` or :func:`load_policy`."""

    name: str
    levels: tuple[str, ...]
    leaf: str
    user_weights: Mapping[str, float] = field(default_factory=lambda: _frozen(None))
    group_weights: Mapping[str, float] = field(default_factory=lambda: _frozen(None))

    @classmethod
    def from_name(
        cls,
        name: str,
        user_weights: Mapping[str, float] | None = None,
        group_weights: Mapping[str, float] | None = None,
    ) -> Policy:
        """The named policy (one of :data:`POLICIES`), with optional weight overrides."""
        if name not in POLICIES:
            raise PolicyError(f"unknown policy {name!r}; choose from {', '.join(POLICIES)}")
        levels, leaf = POLICIES[name]
        for what, weights in (("user", user_weights), ("group", group_weights)):
            for key, w in (weights or {}).items():
                if not isinstance(w, int | float) or isinstance(w, bool) or not w > 0:
                    raise PolicyError(f"{what} weight for {key!r} must be a number > 0, got {w!r}")
        return cls(name, levels, leaf, _frozen(user_weights), _frozen(group_weights))

    @property
    def fifo(self) -> bool:
        """True for the ``fifo`` policy: requests go in arrival order, shares are not enforced."""
        return self.name == "fifo"

    def with_weights(
        self, users: Mapping[str, float] | None = None, groups: Mapping[str, float] | None = None
    ) -> Policy:
        """A copy with other weight overrides."""
        return replace(self, user_weights=_frozen(users), group_weights=_frozen(groups))

    # -- the tree ---------------------------------------------------------------------------
    def path(self, tag: JobTag) -> tuple[str, ...]:
        """The keys of the tree nodes from the root down to the job's leaf, e.g.
        ``("g:phys", "u:alice", "j:42")``; globally unique per node."""
        keys = []
        for level in self.levels:
            keys.append("g:" + tag.group if level == "group" else "u:" + tag.user)
        keys.append("j:" + tag.job_id)
        return tuple(keys)

    def node_weight(self, level: str, tag: JobTag) -> float:
        """Weight of the internal node at ``level`` (``group``/``user``) that holds ``tag``."""
        if level == "group":
            return float(self.group_weights.get(tag.group, 1.0))
        return float(self.user_weights.get(tag.user, 1.0))

    def leaf_weight(self, tag: JobTag) -> float:
        """Weight of the job among its siblings; overrides for levels the policy lacks apply
        here."""
        w = float(tag.nodes) if self.leaf == "nodes" else 1.0
        if "user" not in self.levels:
            w *= self.user_weights.get(tag.user, 1.0)
        if "group" not in self.levels:
            w *= self.group_weights.get(tag.group, 1.0)
        return w

    def tree_shares(self, active: Iterable[JobTag]) -> dict[tuple[str, ...], float]:
        """Absolute target share of every node (keyed by its path prefix) for the active jobs."""
        tags = list({t.job_id: t for t in active}.values())
        out: dict[tuple[str, ...], float] = {}
        self._split(tags, (), 0, 1.0, out)
        return out

    def _split(
        self,
        tags: list[JobTag],
        prefix: tuple[str, ...],
        depth: int,
        share: float,
        out: dict[tuple[str, ...], float],
    ) -> None:
        if depth == len(self.levels):
            total = sum(self.leaf_weight(t) for t in tags)
            for t in tags:
                out[prefix + ("j:" + t.job_id,)] = share * self.leaf_weight(t) / total
            return
        level = self.levels[depth]
        groups: dict[str, list[JobTag]] = {}
        for t in tags:
            groups.setdefault(("g:" + t.group) if level == "group" else ("u:" + t.user), []).append(
                t
            )
        weights = {k: self.node_weight(level, v[0]) for k, v in groups.items()}
        total = sum(weights.values())
        for key, members in groups.items():
            sub = share * weights[key] / total
            out[prefix + (key,)] = sub
            self._split(members, prefix + (key,), depth + 1, sub, out)

    def shares(self, active: Iterable[JobTag]) -> dict[str, float]:
        """Target share of each active job (job_id -> share), summing to 1 (empty if none).

        ``fifo`` enforces nothing; its shares are reported as an equal split per job."""
        return {p[-1][2:]: s for p, s in self.tree_shares(active).items() if p[-1].startswith("j:")}


_TOP_KEYS = {"policy", "weights"}


def load_policy(source: str | Path | Mapping[str, Any]) -> Policy:
    """A policy from a TOML file path or an already-parsed mapping::

    policy = "user-then-size-fair"
    [weights.users]
    alice = 2.0
    [weights.groups]
    physics = 0.5
    """
    where = "policy mapping"
    if isinstance(source, str | Path):
        where = str(source)
        try:
            with open(source, "rb") as f:
                data: Mapping[str, Any] = tomllib.load(f)
        except OSError as e:
            raise PolicyError(f"{where}: cannot read policy file: {e.strerror or e}") from None
        except tomllib.TOMLDecodeError as e:
            raise PolicyError(f"{where}: invalid TOML: {e}") from None
    else:
        data = source
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise PolicyError(
            f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(_TOP_KEYS)}"
        )
    name = data.get("policy")
    if not isinstance(name, str):
        raise PolicyError(f"{where}: field 'policy' must be a string, one of {', '.join(POLICIES)}")
    if name not in POLICIES:
        raise PolicyError(
            f"{where}: field 'policy': unknown policy {name!r}; choose from {', '.join(POLICIES)}"
        )
    weights = data.get("weights", {})
    if not isinstance(weights, Mapping):
        raise PolicyError(f"{where}: field 'weights' must be a table")
    bad = set(weights) - {"users", "groups"}
    if bad:
        raise PolicyError(
            f"{where}: unknown key(s) in 'weights': {sorted(bad)}; allowed: groups, users"
        )
    parsed: dict[str, dict[str, float]] = {}
    for kind in ("users", "groups"):
        table = weights.get(kind, {})
        if not isinstance(table, Mapping):
            raise PolicyError(f"{where}: field 'weights.{kind}' must be a table")
        for key, w in table.items():
            if isinstance(w, bool) or not isinstance(w, int | float) or not w > 0:
                raise PolicyError(
                    f"{where}: field 'weights.{kind}.{key}' must be a number > 0, got {w!r}"
                )
        parsed[kind] = {str(k): float(v) for k, v in table.items()}
    return Policy.from_name(name, parsed["users"], parsed["groups"])
