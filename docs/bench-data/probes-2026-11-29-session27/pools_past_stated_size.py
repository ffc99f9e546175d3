"""Exploratory (seen logs): the flag-free replay with the log's partitions as pools even where
their peaks pass the stated size."""
import sys
import numpy as np
import sim.log_inference as li
import sim.replay_cli as rc
from sim.traces import read_trace

def relaxed(trace):
    if not trace.total_units:
        return None
    return li.major_pools(trace)

if sys.argv[1] == "relaxed":
    li.stated_pools = relaxed
    # replay_cli imported the name at call time?
from sim.cli import main
sys.exit(main(["replay", *sys.argv[2:], "--no-progress"]))
