"""The decision service: a policy, the live queue history and a chain's state -> submit the
successor now or wait. Used in process by the user's watcher and over HTTP by agentd."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hpcbase.slurm import SlurmClient
from hpcbase.snapshot import QueueSnapshot
from mirage.agents import default_model_path, load_policy
from mirage.agents.common.model_io import ModelError
from mirage.agents.common.policy import Decision, DecisionContext, Policy
from mirage.live.history import QueueHistory
from mirage.observation import ChainState

log = logging.getLogger(__name__)

#: Used for ``default`` when the shipped model is not installed (said in every decision).
FALLBACK_POLICY = "average"
ACTIONS = {Decision.WAIT: "wait", Decision.SUBMIT: "submit", Decision.SUBMIT_AFTERANY: "afterany"}
#: Queue features copied into each decision's logged inputs.
SUMMARY_FEATURES = (
    "pend_count",
    "run_count",
    "pend_units",
    "run_units",
    "pend_wait_p50",
    "started_count",
    "started_wait_mean",
)


class PolicyError(ValueError):
    """A policy that cannot be used; the message names it and says why."""


def resolve_policy(spec: str) -> tuple[Policy, str]:
    """Load a policy by name or model path; returns it and the name to log. ``default``
    without the shipped model falls back to :data:`FALLBACK_POLICY`, and the name says so."""
    spec = spec.strip()
    if not spec:
        raise PolicyError("empty policy name")
    if spec == "default" and not default_model_path().is_file():
        log.warning(
            "the default model %s is not installed; using %s", default_model_path(), FALLBACK_POLICY
        )
        return load_policy(FALLBACK_POLICY), f"{FALLBACK_POLICY} (default model missing)"
    looks_like_file = spec.endswith(".zip") or "/" in spec
    if looks_like_file and not Path(spec).is_file():
        raise PolicyError(f"policy model {spec}: no such file")
    try:
        policy = load_policy(spec)
    except ModelError as e:
        raise PolicyError(f"policy model {e}") from None
    except ValueError as e:
        raise PolicyError(str(e)) from None
    except Exception as e:  # a model zip that SB3 cannot read
        raise PolicyError(f"policy model {spec}: cannot load ({type(e).__name__}: {e})") from None
    return policy, getattr(policy, "name", spec)


def model_file(spec: str) -> Path | None:
    """The model file behind ``spec``; None for a baseline."""
    spec = spec.strip()
    if spec == "default":
        return default_model_path()
    return Path(spec) if spec.endswith(".zip") or "/" in spec else None


def model_stamp(spec: str) -> tuple[int, ...] | None:
    """What identifies the model file behind ``spec`` on disk (inode, size, mtime), None
    for a baseline or a missing file: a new file put in place by a rename changes it."""
    path = model_file(spec)
    try:
        st = path.stat() if path is not None else None
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns) if st is not None else None


def model_identity(spec: str) -> str:
    """The model behind ``spec`` as ``sha256:`` and the first 16 hex digits of its file's
    SHA-256 (what ``sha256sum`` prints): the same file anywhere, a retrained one differs;
    "" for a baseline or a file that cannot be read."""
    path = model_file(spec)
    try:
        data = path.read_bytes() if path is not None else None
    except OSError:
        return ""
    return "sha256:" + hashlib.sha256(data).hexdigest()[:16] if data is not None else ""


@dataclass(frozen=True, slots=True)
class DecisionResult:
    """One decision and what it was based on."""

    action: str
    policy: str
    time: float
    inputs: dict[str, Any] = field(default_factory=dict)

    @property
    def submit(self) -> bool:
        return self.action != "wait"

    @property
    def outside_support(self) -> list[str]:
        """The features outside the model's training support (the model then waits)."""
        return list(self.inputs.get("outside_support", []))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One event of a :class:`DecisionService`'s journal: a queue sample (``snapshot``) or a
    decision (the policy spec, the chain as the service got it, the step, the action, and
    the model file that decided: :func:`model_identity`, "" for a baseline)."""

    kind: str  # "sample" or "decide"
    snapshot: QueueSnapshot | None = None
    spec: str = ""
    chain: ChainState | None = None
    step: int = 0
    action: str = ""
    model: str = ""


@dataclass(frozen=True, slots=True)
class _Loaded:
    policy: Policy
    name: str
    stamp: tuple[int, ...] | None  # model_stamp when loaded
    model: str  # model_identity


class DecisionService:
    """Decides for chains from one :class:`QueueHistory`; loaded policies are cached.

    ``allowed``: policy specs this service may load (None: any); agentd sets it so that users
    cannot make the daemon open arbitrary files. ``journal``: a list that receives every
    sample taken and every decision made, in order (:mod:`mirage.live.audit` replays it
    offline to show that the policy decided on what the simulator's path would feed it).
    """

    def __init__(
        self,
        history: QueueHistory,
        decision_interval: float,
        allowed: set[str] | None = None,
        journal: list[JournalEntry] | None = None,
    ) -> None:
        self.history = history
        self.decision_interval = float(decision_interval)
        self.allowed = allowed
        self.journal = journal
        self._policies: dict[str, _Loaded] = {}
        self._lock = threading.Lock()

    def policy(self, spec: str) -> tuple[Policy, str]:
        """The policy for ``spec`` (loaded once, and again when its model file is replaced,
        e.g. by ``mirage retrain``: a failed reload keeps the old one); raises
        :class:`PolicyError`."""
        loaded = self._loaded(spec)
        return loaded.policy, loaded.name

    def model(self, spec: str) -> str:
        """The identity (:func:`model_identity`) of the model now serving ``spec``."""
        return self._loaded(spec).model

    def _loaded(self, spec: str) -> _Loaded:
        with self._lock:
            stamp = model_stamp(spec)
            cached = self._policies.get(spec)
            if cached is not None and cached.stamp == stamp:
                return cached
            if self.allowed is not None and spec not in self.allowed:
                raise PolicyError(
                    f"policy {spec!r} is not served here; "
                    f"allowed: {', '.join(sorted(self.allowed))}"
                )
            try:
                loaded = self._load_stable(spec, stamp)
            except PolicyError as e:
                if cached is None:
                    raise
                log.error("model %s changed but cannot be loaded, keeping the old one: %s", spec, e)
                self._policies[spec] = _Loaded(cached.policy, cached.name, stamp, cached.model)
                return self._policies[spec]
            if cached is not None:
                log.info(
                    "model %s replaced on disk: loaded the new one (%s, was %s)",
                    spec,
                    loaded.model,
                    cached.model,
                )
            self._policies[spec] = loaded
            return loaded

    def _load_stable(self, spec: str, stamp: tuple[int, ...] | None) -> _Loaded:
        """Load ``spec`` with its identity, again if the file was replaced meanwhile."""
        for _ in range(3):
            model = model_identity(spec)
            policy, name = self._load(spec)
            after = model_stamp(spec)
            if after == stamp:
                break
            stamp = after
        return _Loaded(policy, name, stamp, model)

    def _load(self, spec: str) -> tuple[Policy, str]:
        policy, name = resolve_policy(spec)
        shape = getattr(policy, "obs_shape", None)
        want = (self.history.window + 1, None)
        if shape is not None and shape[0] != want[0]:
            raise PolicyError(
                f"policy {spec}: trained with a history window of {shape[0] - 1} "
                f"samples, this history keeps {self.history.window}; set "
                "history.window to match"
            )
        return policy, name

    def sample(self, client: SlurmClient, partition: str | None = None) -> None:
        """Take one queue sample into the history (under the service's lock) and save it."""
        with self._lock:
            self.history.sample(client, partition)
            self.history.save()
            if self.journal is not None and self.history.last_snapshot is not None:
                self.journal.append(JournalEntry("sample", self.history.last_snapshot))

    def decide(self, spec: str, chain: ChainState, step: int) -> DecisionResult:
        """Ask the policy about the chain now; WAIT until the history has a sample."""
        loaded = self._loaded(spec)
        policy, name = loaded.policy, loaded.name
        now = time.time()
        inputs: dict[str, Any] = {
            "now": round(chain.now, 1),
            "pred_elapsed_s": round(chain.pred_elapsed, 1),
            "pred_remaining_s": round(chain.pred_remaining, 1),
            "pred_limit_s": chain.pred_limit,
            "succ_units": chain.succ_units,
            "step": step,
        }
        if loaded.model:
            inputs["model"] = loaded.model
        builder = self.history.builder
        if builder is None or not self.history.ready:
            inputs["note"] = "no queue sample yet"
            return DecisionResult("wait", name, now, inputs)
        with self._lock:
            if step == 0:  # a new predecessor (the policies in use keep no state across)
                policy.reset()
            ctx = DecisionContext.from_builder(builder, chain, self.decision_interval, step=step)
            feats = self.history.latest_features()
            try:
                decision = policy.decide(ctx)
            except ModelError as e:
                raise PolicyError(str(e)) from None
            support = getattr(policy, "support", None)
            outside = support.explain(ctx.obs) if support is not None else []
            action = ACTIONS[Decision(decision)]
            if self.journal is not None:  # in order with the samples, under the same lock
                self.journal.append(
                    JournalEntry("decide", None, spec, chain, step, action, loaded.model)
                )
        if outside:  # the model waits: this cluster is unlike its training data here
            inputs["outside_support"] = outside
        waits = ctx.recent_waits
        inputs["recent_waits_n"] = int(waits.shape[0])
        inputs["recent_waits_mean_s"] = round(float(waits.mean()), 1) if waits.shape[0] else 0.0
        inputs["queue"] = {k: feats[k] for k in SUMMARY_FEATURES if k in feats}
        inputs["history_samples"] = self.history.samples
        return DecisionResult(action, name, now, inputs)
