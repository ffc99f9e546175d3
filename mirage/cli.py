"""The `mirage` command: training, evaluation, job chains and the site daemon."""

from __future__ import annotations

from collections.abc import Sequence

from hpcbase.cli import dispatch

COMMANDS = {
    "dataset": ("mirage.dataset", "hindsight labels (the gap of every submit time) as Parquet"),
    "train": ("mirage.train", "train an agent from hindsight data (or by RL in the simulator)"),
    "eval": ("mirage.eval.cli", "evaluate agents and baselines on the same seeded episodes"),
    "ensemble": ("mirage.ensemble", "one model from several seeds of an agent (mean scaled score)"),
    "support": ("mirage.support", "store a model's training support (it waits outside it)"),
    "study": ("mirage.study", "the whole study: data, 3 seeds per agent, validation, test tables"),
    "backtest": (
        "mirage.backtest.cli",
        "rolling-origin evaluation: retrain weekly, test the next week",
    ),
    "retrain": ("mirage.retrain", "retrain from recent accounting; promote only if it wins"),
    "chain": ("mirage.chain.cli", "submit, list, inspect and cancel job chains on a live cluster"),
    "live-check": (
        "mirage.livecheck",
        "a site's trace on real Slurm, time-compressed: live and simulated gaps, decisions audited",
    ),
    "agentd": ("mirage.agentd", "the site daemon: queue sampling, chain driving, metrics"),
}


def main(argv: Sequence[str] | None = None) -> int:
    return dispatch("mirage", COMMANDS, argv)


if __name__ == "__main__":
    raise SystemExit(main())
