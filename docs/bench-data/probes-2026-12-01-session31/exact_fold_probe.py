"""How much would the exact fair-share fold move a site replay? (What is left from session
30: the default timing folds the usage lazily, at the next priority refresh, to the instant;
``FairShare.decay_runs`` folds it at every decay run, in whole seconds, as slurmctld does.)

Each trace replayed with its stored profile (``hpcsim replay TRACE``), the life cycle in
Python in both variants (the compiled one folds lazily only), once with the lazy fold and
once with the usage folded at every ``PriorityCalcPeriod`` multiple (phase 0). Exploratory:
the whole log, seen many times.

    PYTHONPATH=. .venv/bin/python docs/bench-data/probes-2026-12-01-session31/exact_fold_probe.py \
        ../shared/traces/ls6-a100.log ../shared/traces/hpc2n-excerpt.swf
"""

from __future__ import annotations

import sys

from sim import engine
from sim.replay_cli import main as replay

init = engine.Simulator.__init__


def variant(exact: bool):  # type: ignore[no-untyped-def]
    def patched(self, *a, **k):  # type: ignore[no-untyped-def]
        init(self, *a, **k)
        self.compiled_life_cycle = False
        if exact:
            fs = self.prio.fairshare
            fs.decay_runs = (self.cfg.calc_period, 0.0, self.prio.n_users, self.epoch)

    return patched


for trace in sys.argv[1:]:
    for exact in (False, True):
        print(f"\n=== {trace}: {'exact fold at every decay run' if exact else 'lazy fold'}")
        engine.Simulator.__init__ = variant(exact)  # type: ignore[method-assign]
        replay([trace])
engine.Simulator.__init__ = init  # type: ignore[method-assign]
