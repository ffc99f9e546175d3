"""Dispatchers: which job's queued chunk goes next.  FIFO, lottery (ThemisIO) and SFQ."""

from __future__ import annotations

import heapq
import itertools
import random
from collections import deque
from collections.abc import Mapping

from themis.sched.items import QUEUED, Chunk, JobState
from themis.sched.policy import Policy
from themis.sched.tree import Node, ShareTree


class Dispatcher:
    """The interface the :class:`~themis.sched.scheduler.Scheduler` drives.

    ``activate`` is called when a job's queue becomes non-empty, ``pick`` names the job to serve
    (it must have queued chunks), ``served`` reports the dispatched chunk and whether the job still
    has queued chunks, ``deactivate`` removes a job whose queue was emptied by a cancel.
    Time-based dispatchers set ``timed`` and may return None from ``pick`` while work is queued;
    ``wakeup`` then says when to try again.  ``job.d`` is the dispatcher's per-job slot.
    """

    name = "base"
    ordered = False  # True: wants every chunk through enqueue()
    timed = False
    work_conserving = True

    def attach(self, policy: Policy) -> None:
        """Start over under ``policy``; the scheduler then re-activates the queued jobs."""
        self.policy = policy

    def enqueue(self, chunk: Chunk) -> None:  # noqa: B027 - optional hook
        """A chunk was queued (FIFO keeps global arrival order with this)."""

    def activate(self, job: JobState, now: float) -> None:
        raise NotImplementedError

    def deactivate(self, job: JobState, now: float) -> None:
        raise NotImplementedError

    def pick(self, now: float) -> JobState | None:
        raise NotImplementedError

    def served(self, job: JobState, nbytes: int, active: bool, now: float) -> None:
        raise NotImplementedError

    def wakeup(self, now: float) -> float | None:
        """Earliest time ``pick`` may succeed when it returned None with work queued."""
        return None

    def set_boosts(self, boosts: Mapping[tuple[str, ...], float]) -> None:  # noqa: B027
        """Multiply tree-node weights by path (global-fairness feedback); default: ignored."""

    def forget(self, job: JobState) -> None:  # noqa: B027
        """Drop per-job state of an idle job."""


class FifoDispatcher(Dispatcher):
    """Arrival order across all jobs (the no-policy baseline)."""

    name = "fifo"
    ordered = True

    def attach(self, policy: Policy) -> None:
        self.policy = policy
        self._order: deque[Chunk] = deque()

    def enqueue(self, chunk: Chunk) -> None:
        self._order.append(chunk)

    def activate(self, job: JobState, now: float) -> None:
        pass

    def deactivate(self, job: JobState, now: float) -> None:
        pass

    def pick(self, now: float) -> JobState | None:
        order = self._order
        while order:
            chunk = order.popleft()
            if chunk.state == QUEUED:
                return chunk.job
        return None

    def served(self, job: JobState, nbytes: int, active: bool, now: float) -> None:
        pass


class TreeDispatcher(Dispatcher):
    """Shared plumbing for dispatchers that walk the policy's share tree."""

    def __init__(self) -> None:
        self._boosts: Mapping[tuple[str, ...], float] = {}

    def attach(self, policy: Policy) -> None:
        self.policy = policy
        self.tree = ShareTree(policy, self._boosts)

    def _leaf(self, job: JobState) -> Node:
        leaf = job.d
        if leaf is None:
            leaf = job.d = self.tree.leaf(job)
        return leaf

    def forget(self, job: JobState) -> None:
        if job.d is not None:
            self.tree.remove(job.d)
            job.d = None


class LotteryDispatcher(TreeDispatcher):
    """ThemisIO's statistical tokens: a weighted draw at each tree level among active children,
    so a job wins with probability equal to its share among jobs with queued requests."""

    name = "lottery"

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        self.seed = seed
        self.rng = random.Random(seed)

    def activate(self, job: JobState, now: float) -> None:
        node = self._leaf(job)
        parent = node.parent
        while parent is not None:
            node.on = True
            parent.fen.set(node.slot, node.weight)
            parent.nactive += 1
            if parent.nactive > 1:
                return
            node, parent = parent, parent.parent

    def deactivate(self, job: JobState, now: float) -> None:
        node = job.d
        parent = node.parent
        while parent is not None and node.on:
            node.on = False
            parent.fen.set(node.slot, 0.0)
            parent.nactive -= 1
            if parent.nactive > 0:
                return
            node, parent = parent, parent.parent

    def pick(self, now: float) -> JobState | None:
        node = self.tree.root
        if not node.nactive:
            return None
        rand = self.rng.random
        job = node.job
        while job is None:
            fen = node.fen
            node = node.slots[fen.find(rand() * fen.total)]  # type: ignore[assignment]
            job = node.job
        return job

    def served(self, job: JobState, nbytes: int, active: bool, now: float) -> None:
        if not active:
            self.deactivate(job, now)

    def set_boosts(self, boosts: Mapping[tuple[str, ...], float]) -> None:
        self._boosts = boosts
        parents: dict[int, Node] = {}
        for node in self.tree.set_boosts(boosts):
            if node.on and node.parent is not None:
                parents[id(node.parent)] = node.parent
        for parent in parents.values():
            parent.fen.rebuild([c.weight if c is not None and c.on else 0.0 for c in parent.slots])


class SfqDispatcher(TreeDispatcher):
    """Deterministic byte-fair start-time fair queuing, hierarchical over the share tree: each
    node serves the active child with the smallest start tag; a child's tags advance by
    bytes / weight."""

    name = "sfq"

    def __init__(self) -> None:
        super().__init__()
        self._seq = itertools.count()

    def activate(self, job: JobState, now: float) -> None:
        node = self._leaf(job)
        parent = node.parent
        while parent is not None:
            node.start = max(parent.vtime, node.finish)
            heap = parent.heap
            heapq.heappush(heap, (node.start, next(self._seq), node))
            if len(heap) > 1:
                return
            node, parent = parent, parent.parent

    def deactivate(self, job: JobState, now: float) -> None:
        node = job.d
        parent = node.parent
        while parent is not None:
            heap = parent.heap
            for i, entry in enumerate(heap):
                if entry[2] is node:
                    heap[i] = heap[-1]
                    heap.pop()
                    heapq.heapify(heap)
                    break
            else:
                return
            if heap:
                return
            node, parent = parent, parent.parent

    def pick(self, now: float) -> JobState | None:
        node = self.tree.root
        if not node.heap:
            return None
        while node.job is None:
            node = node.heap[0][2]
        return node.job

    def served(self, job: JobState, nbytes: int, active: bool, now: float) -> None:
        node = job.d
        parent = node.parent
        seq = self._seq
        while parent is not None:
            heap = parent.heap
            heapq.heappop(heap)  # ``node`` is on top: pick() just descended through it
            parent.vtime = node.start
            node.finish = node.start + nbytes / node.weight
            if active:
                node.start = node.finish
                heapq.heappush(heap, (node.start, next(seq), node))
            active = bool(heap)
            node, parent = parent, parent.parent

    def set_boosts(self, boosts: Mapping[tuple[str, ...], float]) -> None:
        self._boosts = boosts
        self.tree.set_boosts(boosts)
