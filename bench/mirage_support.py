"""Where the shipped LS6 default (or ``--model``) lies outside its training support, on
LS6's own chains.

For the study's splits (validation, and the test month: seed 2, 200 chains, 1- and 8-node,
as ``mirage study`` draws them), every decision point of every chain is observed by a policy
that only records and waits. Waiting does not change the world, so these are the
observations any model sees before it fires: where none is outside the support, the
default's decisions, and so its figures, are the same with and without it. No gap is looked
at. Also counts the decision points where any feature (not only the chain's shape, which
gates) lies beyond its training range.

    .venv/bin/python bench/mirage_support.py [--episodes 200] [--splits validation,test]
        [--validation-data STUDY/data/validation.parquet] [--model MODEL.zip]

With ``--validation-data`` (labelled chains, e.g. a ``mirage study``'s validation set) it
also prints the model's exact offline outcome on them with and without its support.

Ends with ``RESULT gated_outside=N decisions=M ...``; about 3 minutes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mirage.agents import default_model_path  # noqa: E402
from mirage.agents.common.model_io import load_model  # noqa: E402
from mirage.agents.common.policy import Decision, DecisionContext  # noqa: E402
from mirage.agents.common.support import CHECKED, Support  # noqa: E402
from mirage.envs import ChainEpisode, ChainSpec, ChainWorld, play  # noqa: E402
from mirage.observation import DECISION_INTERVAL  # noqa: E402
from sim.traces.read import read_trace  # noqa: E402

LS6 = Path(__file__).resolve().parents[2] / "shared" / "traces" / "ls6-a100.log"


class Recorder:
    """Waits at every decision and counts the decisions outside ``support``."""

    name = "recorder"

    def __init__(self, support: Support) -> None:
        self.support = support
        self.seen = self.gated = self.any_beyond = 0
        self.beyond: dict[str, int] = {}

    def reset(self) -> None:
        pass

    def decide(self, ctx: DecisionContext) -> Decision:
        self.seen += 1
        every = self.support.explain(ctx.obs, every=True)
        self.gated += any(name in CHECKED for name in every)
        self.any_beyond += bool(every)
        for name in every:
            self.beyond[name] = self.beyond.get(name, 0) + 1
        return Decision.WAIT


def with_and_without(path: Path, model: Path) -> None:
    """``model``'s offline outcome on labelled chains, with and without its support."""
    import tempfile

    from mirage.agents.common.hindsight import GapStats
    from mirage.agents.common.model_io import read_meta, write_meta
    from mirage.dataset import load
    from mirage.eval.offline import rule_gaps

    data = load(path)
    meta = read_meta(model)
    meta.pop("support", None)
    with tempfile.TemporaryDirectory() as d:
        bare = write_meta(model, meta, Path(d) / "bare.zip")
        for label, spec in (("with support", model), ("without", bare)):
            st = GapStats.of(rule_gaps(data, spec)[0])
            print(f"{path}: {model.name} {label}: mean |gap| {st.abs_gap:.4f} h over {st.chains}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trace", type=Path, default=LS6)
    p.add_argument("--episodes", type=int, default=200)
    p.add_argument("--splits", default="validation,test")
    p.add_argument("--seed", type=int, default=2, help="the study's test seed")
    p.add_argument("--validation-data", type=Path, default=None)
    p.add_argument("--model", type=Path, default=None, help="default: the shipped default")
    args = p.parse_args(argv)
    model = args.model or Path(default_model_path())
    if args.validation_data:
        with_and_without(args.validation_data, model)
    support = load_model(model).support
    if support is None:
        raise SystemExit(f"{model} has no training support")
    world = ChainWorld(read_trace(args.trace), total_units=72, progress=True)
    total = gated = 0
    for split in args.splits.split(","):
        for units in (1, 8):
            rng = np.random.default_rng(args.seed)
            starts = sorted(world.sample_start(split, rng) for _ in range(args.episodes))
            chain = ChainSpec(units=units).resolved(world.max_limit)
            rec = Recorder(support)
            for t0 in tqdm(starts, desc=f"{split}, {units}-node chains", unit="chain"):
                play(ChainEpisode(world, chain, t0, DECISION_INTERVAL), rec)
            beyond = ", ".join(
                f"{k} {v}" for k, v in sorted(rec.beyond.items(), key=lambda kv: -kv[1])[:4]
            )
            print(
                f"{split:10} {units}-node: {rec.seen} decision points, {rec.gated} outside the "
                f"support (chain shape); {rec.any_beyond} with any feature beyond its range "
                f"({beyond or 'none'})"
            )
            total += rec.seen
            gated += rec.gated
    print(f"RESULT gated_outside={gated} decisions={total} splits={args.splits}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
