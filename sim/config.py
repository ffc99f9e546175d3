"""The subset of ``slurm.conf`` that the simulator models, with Slurm 22.05's defaults.

An admin can point the simulator at the site's real ``slurm.conf``: unknown keys are
ignored, known ones are validated with errors that name the file and line.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hpcbase.config import ConfigError, read_config
from hpcbase.slurmtime import parse_duration


@dataclass(slots=True)
class Partition:
    """A partition's scheduling-relevant settings."""

    name: str
    max_time: float = math.inf
    priority_job_factor: int = 1
    priority_tier: int = 1
    default: bool = False
    nodes: tuple[str, ...] = ()  # its node pool (``Nodes=``, expanded); () = every node


@dataclass(slots=True)
class SlurmConfig:
    """Scheduling parameters; every default is Slurm 22.05's.

    Durations are in seconds. ``priority_type`` is ``"priority/basic"`` (FIFO by submission)
    or ``"priority/multifactor"``. ``units`` says what the cluster is counted in: ``"nodes"``
    (whole-node GPU partitions), ``"cpus"`` (``SelectTypeParameters=CR_CPU``/``CR_Core``),
    or ``None`` to follow the trace. ``nodes``/``cpus`` are the cluster size from the
    ``NodeName`` lines (0 if none), ``node_names``/``node_cpus`` the nodes themselves; a
    partition's ``nodes`` is its node pool (``Nodes=``). ``enforce_part_limits``: a job over
    its partition's ``MaxTime`` is rejected at submission (``EnforcePartLimits=ALL|ANY|YES``);
    by default (``NO``, Slurm's default) it is accepted and stays pending
    (``PartitionTimeLimit``). ``accounting``: whether an accounting backend exists
    (``AccountingStorageType`` other than ``accounting_storage/none``). Without one, Slurm
    never sets a job's accrue time and has no usage per association, so the age and
    fair-share factors stay 0 (measured on Slurm 22.05: see bench/sim_fidelity.py). A config
    built in code assumes a site with accounting; one read from a file follows the file,
    and Slurm's default there is none. ``fair_tree``: fair share by Fair Tree's rank, Slurm's
    default since 19.05, rather than classic ``2^(-U/S)`` (``PriorityFlags=NO_FAIR_TREE``);
    likewise a config built in code keeps classic, and one read from a file follows the
    file, where Slurm's default is Fair Tree.
    """

    priority_type: str = "priority/basic"
    weight_age: int = 0
    weight_fairshare: int = 0
    weight_job_size: int = 0
    weight_partition: int = 0
    weight_qos: int = 0
    max_age: float = 7 * 86400.0
    decay_half_life: float = 7 * 86400.0
    calc_period: float = 300.0
    favor_small: bool = False
    accrue_always: bool = False
    fair_tree: bool = False
    scheduler_type: str = "sched/backfill"
    default_queue_depth: int = 100
    sched_interval: float = 60.0
    batch_sched_delay: float = 3.0
    bf_interval: float = 30.0
    bf_window: float = 1440 * 60.0
    bf_resolution: float = 60.0
    bf_max_job_test: int = 500
    bf_window_linear: float = 0.0
    units: str | None = None
    accounting: bool = True
    nodes: int = 0
    cpus: int = 0
    partitions: dict[str, Partition] = field(default_factory=dict)
    node_names: list[str] = field(default_factory=list)  # NodeName lines, expanded, in order
    node_cpus: list[int] = field(default_factory=list)  # CPUs of each of node_names
    enforce_part_limits: bool = False  # EnforcePartLimits other than NO: reject at submit
    source: str = ""

    @property
    def multifactor(self) -> bool:
        return self.priority_type == "priority/multifactor"

    @property
    def backfill(self) -> bool:
        return self.scheduler_type == "sched/backfill" and self.bf_interval > 0

    def partition(self, name: str) -> Partition:
        """The named partition, the default one for ``""``, or a neutral one."""
        if name and name in self.partitions:
            return self.partitions[name]
        for p in self.partitions.values():
            if p.default and not name:
                return p
        if name and self.partitions:
            raise ConfigError(f"unknown partition {name!r} (known: {', '.join(self.partitions)})")
        return _NEUTRAL

    @classmethod
    def from_file(cls, path: str | Path) -> SlurmConfig:
        """Read a slurm.conf (``Include`` lines followed)."""
        cfg = cls(source=str(path), accounting=False, fair_tree=True)
        reader = _Reader(cfg)
        reader.read(Path(path))
        reader.finish()
        return cfg

    @classmethod
    def from_text(cls, text: str, name: str = "<slurm.conf>") -> SlurmConfig:
        cfg = cls(source=name, accounting=False, fair_tree=True)
        reader = _Reader(cfg)
        reader.read_text(text, name, Path("."))
        reader.finish()
        return cfg


_NEUTRAL = Partition(name="")
_SCHED_INT = {
    "default_queue_depth": "default_queue_depth",
    "bf_max_job_test": "bf_max_job_test",
}
_SCHED_SECONDS = {
    "sched_interval": "sched_interval",
    "bf_interval": "bf_interval",
    "bf_resolution": "bf_resolution",
    "batch_sched_delay": "batch_sched_delay",
    "bf_window_linear": "bf_window_linear",
}
_WEIGHTS = {
    "priorityweightage": "weight_age",
    "priorityweightfairshare": "weight_fairshare",
    "priorityweightjobsize": "weight_job_size",
    "priorityweightpartition": "weight_partition",
    "priorityweightqos": "weight_qos",
}
_HOSTLIST = re.compile(r"\[([^\]]+)\]")


def expand_hosts(expr: str) -> list[str]:
    """The host names of a Slurm hostlist such as ``gpu[001-084],login1`` (one bracket group
    per name; zero padding kept)."""
    names: list[str] = []
    for part in re.split(r",(?![^\[]*\])", expr):
        m = _HOSTLIST.search(part)
        if not m:
            names.append(part)
            continue
        head, tail = part[: m.start()], part[m.end() :]
        for rng in m.group(1).split(","):
            lo, _, hi = rng.partition("-")
            width = len(lo)
            for i in range(int(lo), int(hi or lo) + 1):
                names.append(f"{head}{i:0{width}d}{tail}")
    return names


class _Reader:
    def __init__(self, cfg: SlurmConfig) -> None:
        self.cfg = cfg
        self.depth = 0
        self.where = ""
        self.part_where: dict[str, str] = {}  # partition -> file:line of its line

    def read(self, path: Path) -> None:
        self.read_text(read_config(path, "slurm.conf"), str(path), path.parent)

    def read_text(self, text: str, name: str, base: Path) -> None:
        for lineno, raw in enumerate(text.splitlines(), 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            where = self.where = f"{name}:{lineno}"
            if line.lower().startswith("include "):
                self._include(line.split(None, 1)[1].strip(), base, where)
                continue
            try:
                tokens = shlex.split(line)
            except ValueError as e:
                raise ConfigError(f"{where}: {e}") from None
            pairs = []
            for tok in tokens:
                key, eq, value = tok.partition("=")
                if not eq:
                    raise ConfigError(f"{where}: expected Key=Value, got {tok!r}")
                pairs.append((key.strip(), value.strip()))
            try:
                self._apply(pairs)
            except ConfigError as e:
                raise ConfigError(f"{where}: {e}") from None
            except ValueError as e:
                raise ConfigError(f"{where}: {pairs[0][0]}: {e}") from None

    def _include(self, target: str, base: Path, where: str) -> None:
        if self.depth > 8:
            raise ConfigError(f"{where}: Include nested too deeply")
        path = Path(target)
        if not path.is_absolute():
            path = base / path
        self.depth += 1
        try:
            self.read(path)
        finally:
            self.depth -= 1

    def _apply(self, pairs: list[tuple[str, str]]) -> None:
        """One line's ``Key=Value`` pairs (the first names the setting; unknown ones are
        ignored, as a site's slurm.conf holds many the simulator does not model)."""
        key, value = pairs[0]
        k = key.lower()
        attrs = {a.lower(): v for a, v in pairs[1:]}
        if k == "nodename":
            self._node(value, attrs)
        elif k == "partitionname":
            self._partition(value, attrs)
        elif k in _WEIGHTS:
            w = int(value)
            if w < 0:
                raise ConfigError(f"{key} must be >= 0, got {value}")
            setattr(self.cfg, _WEIGHTS[k], w)
        elif k in _SETTINGS:
            _SETTINGS[k](self.cfg, value)
        elif k == "schedulerparameters":
            self._sched_params(value)

    def _node(self, value: str, attrs: dict[str, str]) -> None:
        if value.upper() == "DEFAULT":
            return
        hosts = expand_hosts(value)
        cpus = int(attrs.get("cpus", attrs.get("procs", "1")))
        self.cfg.nodes += len(hosts)
        self.cfg.cpus += len(hosts) * cpus
        self.cfg.node_names.extend(hosts)
        self.cfg.node_cpus.extend([cpus] * len(hosts))

    def _partition(self, value: str, attrs: dict[str, str]) -> None:
        if value.upper() == "DEFAULT":
            return
        part = Partition(name=value)
        if "maxtime" in attrs:
            part.max_time = parse_duration(attrs["maxtime"])
        part.priority_job_factor = int(attrs.get("priorityjobfactor", 1))
        part.priority_tier = int(attrs.get("prioritytier", 1))
        part.default = attrs.get("default", "NO").upper() == "YES"
        nodes = attrs.get("nodes", "ALL")
        if nodes.upper() != "ALL":
            part.nodes = tuple(dict.fromkeys(expand_hosts(nodes)))
        self.cfg.partitions[value] = part
        self.part_where[value] = self.where

    def finish(self) -> None:
        """Checks that need the whole file: every partition's nodes are on NodeName lines
        (Slurm reads those first, wherever they are in the file)."""
        known = set(self.cfg.node_names)
        for name, part in self.cfg.partitions.items():
            unknown = [n for n in part.nodes if n not in known]
            if unknown:
                raise ConfigError(
                    f"{self.part_where[name]}: PartitionName={name}: Nodes: {unknown[0]} is on "
                    "no NodeName line"
                )

    def _sched_params(self, value: str) -> None:
        cfg = self.cfg
        for item in value.split(","):
            name, _, v = item.strip().partition("=")
            name = name.lower()
            if name in _SCHED_INT:
                n = int(v)
                if n < 1:
                    raise ConfigError(f"SchedulerParameters {name}={v}: must be >= 1")
                setattr(cfg, _SCHED_INT[name], n)
            elif name in _SCHED_SECONDS:
                setattr(cfg, _SCHED_SECONDS[name], float(int(v)))
            elif name == "bf_window":
                cfg.bf_window = int(v) * 60.0


def _priority_type(cfg: SlurmConfig, value: str) -> None:
    if value not in ("priority/basic", "priority/multifactor"):
        raise ConfigError(
            f"PriorityType={value}: the simulator models priority/basic and priority/multifactor"
        )
    cfg.priority_type = value


def _scheduler_type(cfg: SlurmConfig, value: str) -> None:
    if value not in ("sched/backfill", "sched/builtin"):
        raise ConfigError(f"SchedulerType={value}: expected sched/backfill or sched/builtin")
    cfg.scheduler_type = value


def _max_age(cfg: SlurmConfig, value: str) -> None:
    cfg.max_age = parse_duration(value)


def _half_life(cfg: SlurmConfig, value: str) -> None:
    cfg.decay_half_life = parse_duration(value)


def _calc_period(cfg: SlurmConfig, value: str) -> None:
    cfg.calc_period = max(60.0, parse_duration(value))


def _favor_small(cfg: SlurmConfig, value: str) -> None:
    cfg.favor_small = value.upper() == "YES"


def _priority_flags(cfg: SlurmConfig, value: str) -> None:
    flags = value.upper().split(",")
    cfg.accrue_always = "ACCRUE_ALWAYS" in flags
    cfg.fair_tree = "NO_FAIR_TREE" not in flags


def _accounting(cfg: SlurmConfig, value: str) -> None:
    cfg.accounting = value.lower() != "accounting_storage/none"


def _enforce_part_limits(cfg: SlurmConfig, value: str) -> None:
    v = value.upper()
    if v not in ("NO", "YES", "ALL", "ANY"):
        raise ConfigError(f"EnforcePartLimits={value}: expected NO, YES, ANY or ALL")
    cfg.enforce_part_limits = v != "NO"


def _select_params(cfg: SlurmConfig, value: str) -> None:
    v = value.upper()
    cfg.units = "cpus" if ("CR_CPU" in v or "CR_CORE" in v) else "nodes"


# Settings of one value each: lower-case key -> what it sets.
_SETTINGS: dict[str, Callable[[SlurmConfig, str], None]] = {
    "prioritytype": _priority_type,
    "prioritymaxage": _max_age,
    "prioritydecayhalflife": _half_life,
    "prioritycalcperiod": _calc_period,
    "priorityfavorsmall": _favor_small,
    "priorityflags": _priority_flags,
    "schedulertype": _scheduler_type,
    "accountingstoragetype": _accounting,
    "enforcepartlimits": _enforce_part_limits,
    "selecttypeparameters": _select_params,
}
