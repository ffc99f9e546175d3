"""Every epilog slurmctld logged with ``DebugFlags=TraceJobs`` (``job_epilog_complete:
enter``), from its job's end (``_job_complete: JobId=N done``), over the saved runs that have
both lines: the distribution that ``sim.realcheck.REPLAY_EPILOG`` stands for in a run
without them."""

import statistics
from pathlib import Path

from hpcbase.slurm.ctldlog import read_events

lengths = []
for log in sorted(Path("docs/bench-data").glob("sim_fidelity_real_*.ctld.log.gz")):
    ev = read_events(log)
    end = {j: w for w, j in ev["end"]}
    ms = [round((w - end[j]) * 1000) for w, j in ev["epilog"] if j in end]
    if len(ms) >= len(end) - 1 and ms:  # every end has its epilog: a TraceJobs log
        lengths += ms
        print(
            f"{log.name:<60} {len(ms):3} epilogs, median {statistics.median(ms):.0f} ms, max {max(ms)} ms"
        )
q = statistics.quantiles(lengths, n=10)
print(
    f"all: {len(lengths)} epilogs, median {statistics.median(lengths):.0f} ms, "
    f"p10 {q[0]:.0f}, p90 {q[-1]:.0f}, max {max(lengths)} ms"
)
