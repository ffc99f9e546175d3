"""The `themis` command: the FUSE proxy daemon and the I/O-sharing simulator."""

from __future__ import annotations

from collections.abc import Sequence

from hpcbase.cli import dispatch

COMMANDS = {
    "mount": ("themis.daemon", "mount the fair-sharing FUSE proxy over a backing directory"),
    "sim": ("themis.iosim.cli", "simulate I/O sharing policies at scale"),
}


def main(argv: Sequence[str] | None = None) -> int:
    return dispatch("themis", COMMANDS, argv)


if __name__ == "__main__":
    raise SystemExit(main())
