"""HPC2N's first fitted profile (git show 5a18e24:sim/data/hpc2n-excerpt.swf.profile.json >
/tmp/hpc2n-first.profile.json) and the shipped refit: fit part and held-out third."""
from pathlib import Path

from heldout import ROOT, report, trace_and_profile

hpc2n = ROOT.parent / "shared/traces/hpc2n-excerpt.swf"
for name, path in (("first fit (5a18e24)", Path("/tmp/hpc2n-first.profile.json")), ("shipped refit", None)):
    tr, prof = trace_and_profile(hpc2n, path)
    print(name, "|", prof.describe())
    report(name, tr, prof)
