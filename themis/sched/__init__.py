"""Themis fair-share I/O scheduler core (no FUSE): policies, dispatchers, the Scheduler.

See docs/themis-sched-api.md.
"""

from themis.sched.dispatch import Dispatcher, FifoDispatcher, LotteryDispatcher, SfqDispatcher
from themis.sched.items import Chunk, Request
from themis.sched.policy import POLICIES, Policy, PolicyError, load_policy
from themis.sched.reference import ReferenceScheduler
from themis.sched.registry import DISPATCHERS, make_dispatcher
from themis.sched.scheduler import Scheduler, core_api
from themis.sched.stats import JobStats, MiB, SchedStats
from themis.sched.tags import JobTag
from themis.sched.throttle import GiftDispatcher, TbfDispatcher

__all__ = [
    "DISPATCHERS",
    "POLICIES",
    "Chunk",
    "Dispatcher",
    "FifoDispatcher",
    "GiftDispatcher",
    "JobStats",
    "JobTag",
    "LotteryDispatcher",
    "MiB",
    "Policy",
    "ReferenceScheduler",
    "PolicyError",
    "Request",
    "SchedStats",
    "Scheduler",
    "SfqDispatcher",
    "TbfDispatcher",
    "core_api",
    "load_policy",
    "make_dispatcher",
]
