"""bench/unseen_sites.py with the flag-free availability window set (seen probe, session 25).
Usage: unseen_sites_window.py WINDOW_H [unseen_sites.py options]"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import sim.replay_cli as rc  # noqa: E402

rc.DEFAULT_WINDOW_S = float(sys.argv.pop(1)) * 3600.0
import unseen_sites  # noqa: E402

raise SystemExit(unseen_sites.main(sys.argv[1:]))
