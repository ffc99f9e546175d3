"""Themis' metrics as a real Prometheus sees them (Debian's ``prometheus``, on loopback): the
per-job series arrive under the documented ``slurm_job`` label next to Prometheus' own
``job`` target label (no ``exported_job``), and ``promtool check metrics`` finds nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from hpcbase.netutil import free_port
from tests.themis.fusehelp import start_themis

pytestmark = pytest.mark.skipif(
    shutil.which("prometheus") is None or shutil.which("promtool") is None,
    reason="needs Debian's prometheus (scripts/setup.sh installs it)",
)


def _query(port: int, expr: str) -> list[dict]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=5) as r:
        return list(json.loads(r.read())["data"]["result"])


def test_a_real_prometheus_scrapes_the_per_job_series(fuse_root: Path, tmp_path: Path) -> None:
    mount = start_themis(fuse_root)
    prom = None
    try:
        with open(mount.mnt / "data", "wb") as f:
            f.write(os.urandom(1 << 20))
            os.fsync(f.fileno())
        text = mount.scrape()
        lint = subprocess.run(
            ["promtool", "check", "metrics"], input=text, capture_output=True, text=True
        )
        assert lint.returncode == 0, lint.stdout + lint.stderr
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n"
            "scrape_configs:\n  - job_name: themis\n"
            f"    static_configs:\n      - targets: ['127.0.0.1:{mount.port}']\n"
        )
        check = subprocess.run(["promtool", "check", "config", str(config)], capture_output=True)
        assert check.returncode == 0, check.stdout + check.stderr
        port = free_port()
        prom = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(tmp_path / "prometheus.log", "wb"),  # noqa: SIM115 - the child's
        )
        deadline = time.monotonic() + 60
        series: list[dict] = []
        while time.monotonic() < deadline and not series:
            time.sleep(1.0)
            try:
                series = _query(port, 'themis_io_bytes_total{op="write"}')
            except OSError:
                continue
        assert series, (tmp_path / "prometheus.log").read_text()[-2000:]
        for s in series:
            labels = s["metric"]
            assert labels["job"] == "themis" and "slurm_job" in labels, labels
            assert "exported_job" not in labels, labels
        assert sum(float(s["value"][1]) for s in series) >= 1 << 20
    finally:
        if prom is not None:
            prom.terminate()
            prom.wait(timeout=20)
        assert mount.stop() == 0
