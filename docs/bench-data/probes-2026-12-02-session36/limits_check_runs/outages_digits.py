import pickle, sys
# the logs where the two trees differ at three decimals, to six (seeds 13, 14, 18 of the outages kind)
# run in each tree: PYTHONPATH=. python outages_digits.py 13 14 18
from sim.fidelity import fidelity
from sim.fit import fit, replay_waits, split
for s in sys.argv[1:]:
    tr = pickle.load(open(f"/tmp/p36/ho/outages-{s}.pkl", "rb"))
    p = fit(tr); _, h, _ = split(tr); rec = tr.recorded_start - tr.submit
    f = fidelity(replay_waits(tr, p)[h], rec[h])
    print(s, f"{f.spearman:.6f} ks {f.ks:.6f}", flush=True)
