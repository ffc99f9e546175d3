"""Backtest dev origins with training data limited to the last K weeks before the origin
(a sliding window instead of all history); labels reused from a finished run."""
import sys, json, shutil
from pathlib import Path
ROOT = __import__('pathlib').Path(__file__).resolve().parents[3]; sys.path.insert(0, str(ROOT))
import mirage.backtest.origin as O
src, dst, K = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
roles = sys.argv[4].split(',') if len(sys.argv) > 4 else ['dev']
if not dst.exists():
    dst.mkdir(parents=True)
    shutil.copytree(src / 'labels', dst / 'labels')
    for f in ('plan.json', 'fidelity.json'):
        if (src / f).exists(): shutil.copy(src / f, dst / f)
orig_known = O.known_data
def known_data(out, plan, week, epoch, K=K):
    from dataclasses import replace
    keep = tuple(w for w in plan.weeks if w.end > week.start - K * 7 * 86400.0)
    return orig_known(out, replace(plan, weeks=keep), week, epoch)
O.known_data = known_data
from sim.traces import read_trace
EPOCH = read_trace(json.loads((dst / 'plan.json').read_text())['trace'], cache=True).start_epoch
plan = O.plan_from_json(json.loads((dst / 'plan.json').read_text()))
pj = json.loads((dst / 'plan.json').read_text())
from tqdm import tqdm
todo = [w for w in plan.origins if w.role in roles and not O.origin_path(dst, w).exists()]
for w in tqdm(todo, desc=f"K={K}"):
    O.run_origin((str(dst), pj, plan.weeks.index(w), EPOCH))
