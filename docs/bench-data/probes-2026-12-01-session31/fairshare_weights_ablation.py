"""Each saved fair-share run re-simulated with the session-31 model, without Fair Tree's
divisor counting root's association (the users alone, session 30's rule), and with classic
fair share instead of Fair Tree. The runs weighed 1000 (``--fairshare 1000``, as age and
size) and 100000 (session 30's, where only the users' order counts).

    PYTHONPATH=. .venv/bin/python \
        docs/bench-data/probes-2026-12-01-session31/fairshare_weights_ablation.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from sim import engine
from sim.config import SlurmConfig
from sim.realcheck import compare, replay, run_timing, simulate
from sim.realslurm import as_job

DATA = Path(__file__).resolve().parents[3]


def figures(path: Path, variant: str) -> str:
    saved = json.loads(path.read_text())
    rows = saved["real"]
    jobs = [as_job(j, i) for i, j in enumerate(saved["jobs"])]
    text = saved["slurm_conf"] + ("PriorityFlags=NO_FAIR_TREE\n" if variant == "classic" else "")
    with tempfile.TemporaryDirectory() as d:
        conf = Path(d) / "slurm.conf"
        conf.write_text(text)
        timing = replay(run_timing(path, saved, rows, jobs, SlurmConfig.from_file(conf)))
        init = engine.Simulator.__init__

        def patched(self, *a, **k):  # type: ignore[no-untyped-def]
            if variant == "users only":
                k["associations"] = 0
            init(self, *a, **k)

        engine.Simulator.__init__ = patched  # type: ignore[method-assign]
        try:
            f = compare(rows, simulate(jobs, rows, conf, timing), table=False)
        finally:
            engine.Simulator.__init__ = init  # type: ignore[method-assign]
    verdict = "met" if f.met else "missed"
    return f"{100 * f.same:5.1f} % / {f.median:4.1f} s / max {f.max:5.1f} s {verdict}"


def main() -> int:
    paths = sorted((DATA / "docs/bench-data").glob("sim_fidelity_real_fairshare*_seed*.json"))
    variants = ("model", "users only", "classic")
    print("run".ljust(26) + "".join(v.ljust(40) for v in variants))
    for path in paths:
        line = path.stem.removeprefix("sim_fidelity_real_").ljust(26)
        print(line + "".join(figures(path, v).ljust(40) for v in variants), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
