"""The `hpcsim` command."""

from __future__ import annotations

from collections.abc import Sequence

from hpcbase.cli import dispatch

COMMANDS = {
    "replay": ("sim.replay_cli", "replay a trace through the simulator and report"),
    "calibrate": (
        "sim.calibrate_cli",
        "find the cluster size that reproduces a trace's recorded waits",
    ),
    "fit": ("sim.fit_cli", "infer a site profile (size, availability, limits...) from a log"),
    "generate": ("sim.generate", "write a synthetic Lublin-Feitelson-like workload (SWF)"),
}


def main(argv: Sequence[str] | None = None) -> int:
    return dispatch("hpcsim", COMMANDS, argv)


if __name__ == "__main__":
    raise SystemExit(main())
