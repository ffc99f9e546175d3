"""Configuration parsing: defaults, overrides, and errors that name the file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpcbase.config import ConfigError
from themis.config import ThemisConfig, load

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "themis.toml"
    path.write_text(text)
    return path


def test_defaults_and_a_full_file(tmp_path):
    assert load(None) == ThemisConfig()
    cfg = load(
        write(
            tmp_path,
            """
log_level = "debug"
[scheduler]
policy = "group-user-size-fair"
dispatcher = "sfq"
max_inflight = 8
[scheduler.user_weights]
alice = 2
[device]
bandwidth_bytes_per_second = 1e9
[metrics]
port = 9464
job_ttl_seconds = 60
""",
        )
    )
    assert cfg.scheduler.policy == "group-user-size-fair"
    assert cfg.scheduler.user_weights == {"alice": 2.0}
    assert cfg.device.bandwidth_bytes_per_second == 1e9
    assert (cfg.metrics.port, cfg.log_level) == (9464, "debug")


def test_the_shipped_example_is_valid():
    cfg = load(REPO / "systemd" / "themis.toml")
    assert cfg.scheduler.policy in ("size-fair", "user-then-size-fair", "group-user-size-fair")


@pytest.mark.parametrize(
    "text, field",
    [
        ('[scheduler]\npolicy = "fastest"\n', "scheduler.policy"),
        ('[scheduler]\ndispatcher = "coinflip"\n', "scheduler.dispatcher"),
        ('[scheduler]\ndispatcher = "tbf"\n', "scheduler.dispatcher_options"),
        (
            '[scheduler]\ndispatcher = "sfq"\n[scheduler.dispatcher_options]\nrate = 5\n',
            "scheduler.dispatcher_options",
        ),
        ("[scheduler]\nmax_inflight = 0\n", "scheduler.max_inflight"),
        ('[scheduler]\nmax_inflight = "4"\n', "scheduler.max_inflight"),
        ("[scheduler.user_weights]\nbob = -1\n", "scheduler.user_weights.bob"),
        ("[metrics]\nport = 70000\n", "metrics.port"),
        ("[metrics]\nprot = 1\n", "metrics.prot"),
        ("[mount]\nallow_other = 1\n", "mount.allow_other"),
        ("[tagging]\nenviron_timeout_seconds = 0\n", "tagging.environ_timeout_seconds"),
        ("[nonsense]\n", "[nonsense]"),
        ('log_level = "loud"\n', "log_level"),
    ],
)
def test_errors_name_the_file_and_field(tmp_path, text, field):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load(path)
    assert field in str(info.value) and str(path) in str(info.value)


def test_throttling_dispatcher_with_its_options(tmp_path):
    cfg = load(
        write(
            tmp_path,
            '[scheduler]\ndispatcher = "tbf"\n[scheduler.dispatcher_options]\nrate = 1e8\n',
        )
    )
    assert cfg.scheduler.dispatcher_options == {"rate": 1e8}


def test_unreadable_and_invalid_toml(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load(tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load(write(tmp_path, "[scheduler\n"))


def test_command_line_overrides(tmp_path):
    cfg = load(write(tmp_path, '[scheduler]\npolicy = "job-fair"\n'))
    cfg = cfg.with_overrides(scheduler={"policy": "user-fair", "max_inflight": None})
    assert cfg.scheduler.policy == "user-fair" and cfg.scheduler.max_inflight == 4
    with pytest.raises(ConfigError, match="scheduler.policy"):
        cfg.with_overrides(scheduler={"policy": "nope"})
