"""``mirage support``: store a model's training support (:mod:`mirage.agents.common.support`)
in an older model, from its training data; the model then waits on chains unlike those it was
trained on.

    mirage support models/moe-dqn-ens.zip --data data/train.parquet
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mirage.agents.common.model_io import ModelError, read_meta, write_meta
from mirage.agents.common.support import Support
from mirage.dataset import DatasetError, load


def add_to_model(model: str | Path, data: Any, out: str | Path | None = None) -> dict[str, Any]:
    """Store the support of ``data`` (the model's training data) in ``model``'s metadata
    (at ``out`` if given, else in place); returns the new metadata."""
    meta = read_meta(model)
    version = int(meta["feature_version"])
    if int(data.meta.get("feature_version", version)) < version:
        raise ValueError(f"{model}: its feature version {version} is newer than the data's")
    meta["support"] = Support.of_data(data, version).to_meta()
    meta["support_data"] = {k: data.meta.get(k) for k in ("trace", "split", "episodes_asked")}
    write_meta(model, meta, out)
    return meta


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="mirage support", description=__doc__.split("\n")[0])
    p.add_argument("model", help="a saved model (.zip)")
    p.add_argument("--data", required=True, help="the model's training data (mirage dataset)")
    p.add_argument("--out", default=None, help="write here instead of rewriting the model")
    args = p.parse_args(argv)
    try:
        meta = add_to_model(args.model, load(args.data), args.out)
    except (ModelError, DatasetError, ValueError, OSError) as e:
        raise SystemExit(f"mirage support: {e}") from None
    print(
        f"{args.out or args.model}: support of {len(meta['support']['lo'])} features from "
        f"{args.data}"
    )
    return 0
