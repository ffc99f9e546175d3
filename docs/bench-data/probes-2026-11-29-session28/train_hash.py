"""Train one agent on the study's hindsight data, as the study does, and hash its weights."""
import hashlib, sys, time
import numpy as np
from mirage.dataset import load
from mirage.train import train_hindsight
agent, seed = sys.argv[1], int(sys.argv[2])
d = "/tmp/s28study-out/data/"
t = time.time()
model, meta = train_hindsight(agent, load(d + "train.parquet"), load(d + "validation.parquet"), seed, drop_features=())
h = hashlib.sha256()
pol = model.policy if hasattr(model, "policy") else model
try:
    for k, v in pol.state_dict().items():
        h.update(k.encode()); h.update(v.detach().cpu().numpy().tobytes())
except Exception as e:
    print("no state_dict", e)
print(agent, seed, h.hexdigest()[:16], f"{time.time()-t:.0f} s", {k: meta[k] for k in meta if "threshold" in k or "valid" in k})
