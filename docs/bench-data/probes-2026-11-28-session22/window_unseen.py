"""bench/unseen_sites.py with the flag-free default availability window set (hours).
    python window_unseen.py HOURS [unseen_sites.py args]"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import sim.replay_cli as rc  # noqa: E402
import unseen_sites  # noqa: E402

rc.DEFAULT_WINDOW_S = float(sys.argv[1]) * 3600.0
sys.exit(unseen_sites.main(sys.argv[2:]))
