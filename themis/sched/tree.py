"""The live share tree of one scheduler: nodes for the jobs it knows, per the policy's levels."""

from __future__ import annotations

from collections.abc import Mapping

from themis.sched.fenwick import Fenwick
from themis.sched.items import JobState
from themis.sched.policy import Policy


class Node:
    """A tree node: the root, a group or user, or a job leaf (``job`` set).

    Lottery state: ``fen`` (active children's weights by ``slot``), ``on``, ``nactive``.
    SFQ state: ``heap`` of active children, ``vtime``, and this node's ``start``/``finish`` tags.
    """

    __slots__ = (
        "path",
        "parent",
        "base",
        "boost",
        "weight",
        "children",
        "slot",
        "slots",
        "free",
        "fen",
        "nactive",
        "on",
        "heap",
        "vtime",
        "start",
        "finish",
        "job",
    )

    def __init__(self, path: tuple[str, ...], parent: Node | None, base: float, boost: float):
        self.path = path
        self.parent = parent
        self.base = base
        self.boost = boost
        self.weight = base * boost
        self.children: dict[str, Node] = {}
        self.slot = -1
        self.slots: list[Node | None] = []
        self.free: list[int] = []
        self.fen = Fenwick(2)
        self.nactive = 0
        self.on = False
        self.heap: list[tuple[float, int, Node]] = []
        self.vtime = 0.0
        self.start = 0.0
        self.finish = 0.0
        self.job: JobState | None = None


class ShareTree:
    """Nodes are created when a job first becomes active and removed by :meth:`remove`."""

    def __init__(self, policy: Policy, boosts: Mapping[tuple[str, ...], float] | None = None):
        self.policy = policy
        self.boosts: Mapping[tuple[str, ...], float] = boosts if boosts is not None else {}
        self.root = Node((), None, 1.0, 1.0)

    def _child(self, parent: Node, key: str, base: float) -> Node:
        path = parent.path + (key,)
        node = Node(path, parent, base, self.boosts.get(path, 1.0))
        parent.children[key] = node
        if parent.free:
            node.slot = parent.free.pop()
            parent.slots[node.slot] = node
        else:
            node.slot = len(parent.slots)
            parent.slots.append(node)
        return node

    def leaf(self, job: JobState) -> Node:
        """The job's leaf, creating the path to it if needed."""
        tag, policy, node = job.tag, self.policy, self.root
        for level in policy.levels:
            key = ("g:" + tag.group) if level == "group" else ("u:" + tag.user)
            child = node.children.get(key)
            if child is None:
                child = self._child(node, key, policy.node_weight(level, tag))
            node = child
        key = "j:" + tag.job_id
        leaf = node.children.get(key)
        if leaf is None:
            leaf = self._child(node, key, policy.leaf_weight(tag))
        leaf.job = job
        return leaf

    def remove(self, leaf: Node) -> None:
        """Drop an inactive leaf and any ancestors left without children."""
        node = leaf
        while node.parent is not None and not node.children:
            parent = node.parent
            del parent.children[node.path[-1]]
            parent.slots[node.slot] = None
            parent.free.append(node.slot)
            node = parent

    def set_boosts(self, boosts: Mapping[tuple[str, ...], float]) -> list[Node]:
        """Set multiplicative weight boosts by node path (missing = 1); returns changed nodes.
        The mapping is kept, not copied: pass a fresh one each time."""
        self.boosts = boosts
        changed = []
        stack = [self.root]
        while stack:
            node = stack.pop()
            stack.extend(node.children.values())
            if node.parent is None:
                continue
            b = self.boosts.get(node.path, 1.0)
            if b != node.boost:
                node.boost = b
                node.weight = node.base * b
                changed.append(node)
        return changed
