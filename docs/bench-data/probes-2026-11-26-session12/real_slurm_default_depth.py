import sys; sys.path.insert(0,'.')
from pathlib import Path
from sim.realslurm import WorkloadJob, run_workload
from sim.realcheck import simulate
tmp=Path('/tmp/s12/realdeep'); tmp.mkdir(exist_ok=True)
extra=tmp/'sched.conf'; extra.write_text("SchedulerParameters=bf_interval=1,bf_resolution=1\n")
jobs=[WorkloadJob("A",1,180,20),WorkloadJob("B",2,60,3,submit_offset_s=1),WorkloadJob("D",2,60,3,submit_offset_s=2),WorkloadJob("E",1,60,3,submit_offset_s=3)]
rows=run_workload(jobs,extra,cpus=2,conf_out=tmp/'slurm.conf',progress=False)
t0=min(r['submit'] for r in rows)
real={r['name']:float(r['start'])-t0 for r in rows}
sim={k:v-t0 for k,v in simulate(jobs,rows,tmp/'slurm.conf').items()}
print("default depth, real:",real); print("default depth, sim:",sim)
