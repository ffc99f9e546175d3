"""Train Mirage models for the toy live cluster of ``bench/live_chain.py`` from its recorded
load (:mod:`mirage.sitemodel`); by default the load recorded on 2026-11-24 (25 min, 308 jobs).

    .venv/bin/python bench/live_toy_model.py [runs/toy/live-load.swf] --out runs/toy

Ends with ``RESULT best=AGENT validation_abs_gap_s=... test_abs_gap_s=...``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout, without an install

from mirage.sitemodel import main  # noqa: E402

RECORDED = Path(__file__).resolve().parents[1] / "docs" / "bench-data" / "live_load_toy.swf"

if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        args = [str(RECORDED), *args]
    raise SystemExit(main(args))
