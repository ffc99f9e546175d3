"""agentd's configuration: ``/etc/mirage/mirage.toml``, validated with errors naming the field.

Every key is optional; ``systemd/mirage.toml`` is a commented example and
docs/mirage-live.md lists them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hpcbase.config import ConfigError, build_sections, parse_toml, read_config
from mirage.observation import DECISION_INTERVAL, SAMPLE_INTERVAL, WINDOW

LOG_LEVELS = ("debug", "info", "warning", "error")


@dataclass(frozen=True)
class SlurmSection:
    conf: str = ""  # SLURM_CONF ("" = the environment's)
    backend: str = "cli"
    partition: str = ""  # "" = the default partition
    min_interval: float = 10.0  # floor between two real queries of a kind (s)
    retry_attempts: int = 4
    retry_timeout: float = 30.0


@dataclass(frozen=True)
class HistorySection:
    state_dir: str = "/var/lib/mirage"
    sample_interval: float = SAMPLE_INTERVAL  # s; must match the model's training
    window: int = WINDOW  # samples; must match the model's training
    max_limit: float = 0.0  # s, normalisation; 0 = the partition's MaxTime (48 h if none)


@dataclass(frozen=True)
class DecisionsSection:
    decision_interval: float = DECISION_INTERVAL
    default_policy: str = "default"
    policies: list[str] = field(
        default_factory=lambda: ["default", "reactive", "average", "dependency", "quantile"]
    )  # the only policies served to watchers and used for chains


@dataclass(frozen=True)
class HttpSection:
    listen: str = "127.0.0.1"
    port: int = 9465


@dataclass(frozen=True)
class ChainsSection:
    state_dirs: list[str] = field(default_factory=list)  # opted-in users' state directories
    poll_interval: float = 30.0


@dataclass(frozen=True)
class LogSection:
    level: str = "info"


@dataclass(frozen=True)
class Config:
    slurm: SlurmSection = field(default_factory=SlurmSection)
    history: HistorySection = field(default_factory=HistorySection)
    decisions: DecisionsSection = field(default_factory=DecisionsSection)
    http: HttpSection = field(default_factory=HttpSection)
    chains: ChainsSection = field(default_factory=ChainsSection)
    log: LogSection = field(default_factory=LogSection)
    path: str = ""


_CLASSES = {
    "slurm": SlurmSection,
    "history": HistorySection,
    "decisions": DecisionsSection,
    "http": HttpSection,
    "chains": ChainsSection,
    "log": LogSection,
}


def _positive(path: str, where: str, value: float) -> None:
    if value <= 0:
        raise ConfigError(f"{path}: {where}: must be > 0, got {value:g}")


def validate(cfg: Config) -> Config:
    p = cfg.path or "<config>"
    if cfg.slurm.backend not in ("auto", "cli", "pyslurm"):
        raise ConfigError(
            f"{p}: slurm.backend: must be auto, cli or pyslurm, got {cfg.slurm.backend!r}"
        )
    for where, value in (
        ("slurm.retry_timeout", cfg.slurm.retry_timeout),
        ("slurm.retry_attempts", cfg.slurm.retry_attempts),
        ("history.sample_interval", cfg.history.sample_interval),
        ("history.window", cfg.history.window),
        ("decisions.decision_interval", cfg.decisions.decision_interval),
        ("chains.poll_interval", cfg.chains.poll_interval),
    ):
        _positive(p, where, value)
    if cfg.slurm.min_interval < 0:
        raise ConfigError(f"{p}: slurm.min_interval: must be >= 0")
    if cfg.history.max_limit < 0:
        raise ConfigError(f"{p}: history.max_limit: must be >= 0 (0: the partition's MaxTime)")
    if cfg.decisions.decision_interval < cfg.history.sample_interval:
        raise ConfigError(
            f"{p}: decisions.decision_interval: must be at least "
            f"history.sample_interval ({cfg.history.sample_interval:g} s)"
        )
    if not cfg.decisions.policies:
        raise ConfigError(f"{p}: decisions.policies: must name at least one policy")
    if cfg.decisions.default_policy not in cfg.decisions.policies:
        raise ConfigError(
            f"{p}: decisions.default_policy: {cfg.decisions.default_policy!r} "
            "is not in decisions.policies"
        )
    if not 0 <= cfg.http.port <= 65535:
        raise ConfigError(f"{p}: http.port: must be 0..65535, got {cfg.http.port}")
    if cfg.log.level not in LOG_LEVELS:
        raise ConfigError(f"{p}: log.level: must be one of {', '.join(LOG_LEVELS)}")
    if not cfg.history.state_dir:
        raise ConfigError(f"{p}: history.state_dir: must not be empty")
    return cfg


def parse(text: str, path: str = "<config>") -> Config:
    """A validated configuration from TOML text."""
    sections = build_sections(parse_toml(text, path), path, _CLASSES)
    return validate(Config(**sections, path=path))


def load(path: str | Path) -> Config:
    """Read and validate a configuration file."""
    return parse(read_config(path), str(path))
