"""Seed ensembles: several trained models of one agent, scored as one.

Picking the seed that scores best on validation picks, in part, the one whose errors
happened to suit the validation days (the winner's curse): on the LS6 study the best
moe-dqn seed on validation was its worst on the test month. Averaging the seeds' scores
keeps what they agree on. Each member's scores are first put on a common scale (minus its
median, over its 10-90 % range on the validation data), then averaged; the ensemble gets
its own threshold and guard on the validation data (:func:`tune_rule`), like any model.

An ensemble is one ``.zip``: Mirage's ``mirage.json`` (with an ``ensemble`` entry: member
names and scales) and the members' own ``.zip`` files under ``members/``.
:func:`mirage.agents.common.model_io.load_model` loads it like any other model.

    mirage ensemble --validation data/validation.parquet --out moe-dqn-ens.zip \\
        models/moe-dqn-s0.zip models/moe-dqn-s1.zip models/moe-dqn-s2.zip
"""

from __future__ import annotations

import argparse
import json
import zipfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from hpcbase.atomic import atomic_path
from mirage.agents.common.model_io import MEMBERS_DIR, META_NAME, ModelError, load_model
from mirage.agents.common.support import masked
from mirage.dataset import HindsightData

_PER_MODEL = (
    "seed",
    "pretrain",
    "train_cpu_seconds",
    "created",
    "validation",
    "threshold",
    "support",
)


def scale_of(scores: np.ndarray) -> tuple[float, float]:
    """A member's ``(median, 10-90 % range)`` on the validation data (range 1 if flat)."""
    lo, mid, hi = np.quantile(np.asarray(scores, float), [0.1, 0.5, 0.9])
    return float(mid), float(hi - lo) if hi > lo else 1.0


def build_ensemble(
    paths: Sequence[str | Path],
    validation: HindsightData,
    out: str | Path,
    objective: str | None = None,
    max_overlap: float | None = None,
) -> dict[str, Any]:
    """Write the ensemble of the saved models ``paths`` to ``out``; returns its metadata."""
    from mirage.agents.common.hindsight import tune_rule
    from mirage.train import guard_in_hours

    if len(paths) < 2:
        raise ModelError("an ensemble needs at least two models")
    members = [load_model(p) for p in paths]
    first = members[0].meta
    for p, m in zip(paths, members, strict=True):
        if "ensemble" in m.meta or m.threshold is None:
            raise ModelError(f"{p}: not a single model with a tuned threshold")
        for key in ("agent", "feature_version", "obs_shape", "max_limit"):
            if m.meta.get(key) != first.get(key):
                raise ModelError(f"{p}: {key} {m.meta.get(key)!r} differs from {first.get(key)!r}")
    names = [Path(p).name for p in paths]
    if len(set(names)) != len(names):
        raise ModelError("the members' file names must differ")
    obs_idx = np.arange(len(validation))
    raw = [
        np.concatenate(
            [
                m.score(validation.obs(obs_idx[i : i + 4096]))
                for i in range(0, len(validation), 4096)
            ]
        )
        for m in members
    ]
    scales = [scale_of(s) for s in raw]
    score = np.mean([(s - mid) / k for s, (mid, k) in zip(raw, scales, strict=True)], axis=0)
    if objective is None:  # the members' own rule objective and overlap budget
        objective = str(first.get("objective") or "abs_gap")
        max_overlap = first.get("max_overlap_hours")
    support = None  # the union of the members' (each was trained on its own data)
    if all(m.support is not None for m in members):
        for m in members:
            assert m.support is not None
            support = m.support if support is None else support.union(m.support)
    threshold, guard, val = tune_rule(
        validation, masked(support, validation, score), objective, max_overlap
    )
    meta = {k: v for k, v in first.items() if k not in _PER_MODEL}
    meta.update(
        threshold=threshold,
        guard=guard,
        guard_hours=guard_in_hours(guard, first.get("max_limit")),
        objective=objective,
        max_overlap_hours=max_overlap,
        support=support.to_meta() if support else None,
        validation={k: getattr(val, k) for k in val.__slots__},
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        ensemble={
            "members": names,
            "scales": [list(s) for s in scales],
            "member_validation": [m.meta.get("validation", {}).get("abs_gap") for m in members],
        },
    )
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out, suffix=".zip") as tmp, zipfile.ZipFile(tmp, "w") as zf:
        zf.writestr(META_NAME, json.dumps(meta, indent=1, sort_keys=True))
        for name, p in zip(names, paths, strict=True):
            zf.write(p, MEMBERS_DIR + name)
    return meta


def main(argv: Sequence[str] | None = None) -> int:
    from mirage.dataset import load

    p = argparse.ArgumentParser(prog="mirage ensemble", description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="+", help="saved models of one agent (e.g. its seeds)")
    p.add_argument("--validation", required=True, help="hindsight data to tune the rule on")
    p.add_argument("--objective", choices=("abs_gap", "uninterrupted"), default=None)
    p.add_argument("--max-overlap-hours", type=float, default=None)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    try:
        meta = build_ensemble(
            args.models, load(args.validation), args.out, args.objective, args.max_overlap_hours
        )
    except ModelError as e:
        raise SystemExit(f"mirage ensemble: {e}") from None
    v = meta["validation"]
    each = ", ".join(f"{g:.2f}" for g in meta["ensemble"]["member_validation"])
    print(
        f"{args.out}: {meta['agent']} x {len(args.models)}, validation mean |gap| "
        f"{v['abs_gap']:.2f} h (members {each})"
    )
    return 0
