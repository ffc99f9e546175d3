"""The `mirage` command: training, evaluation, job chains and the site daemon."""

from __future__ import annotations

from collections.abc import Sequence

from hpcbase.cli import dispatch

COMMANDS = {
    "train": ("mirage.train", "train an agent in the simulator"),
    "eval": ("mirage.evaluate", "evaluate agents and baselines on the same seeded episodes"),
    "chain": ("mirage.chain.cli", "submit, list, inspect and cancel job chains on a live cluster"),
    "agentd": ("mirage.agentd", "the site daemon: queue sampling, chain driving, metrics"),
}


def main(argv: Sequence[str] | None = None) -> int:
    return dispatch("mirage", COMMANDS, argv)


if __name__ == "__main__":
    raise SystemExit(main())
