"""A tiny sub-command dispatcher with lazy imports, so `--help` stays fast."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence


def dispatch(prog: str, commands: dict[str, tuple[str, str]], argv: Sequence[str] | None) -> int:
    """Run ``prog CMD ...`` by importing the module named for CMD and calling its ``main``.

    ``commands`` maps a sub-command to ``("package.module", "one-line help")``; the module's
    ``main(argv)`` receives the remaining arguments and returns an exit status.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        width = max(map(len, commands))
        print(f"usage: {prog} COMMAND [ARGS...]\n\ncommands:")
        for name, (_, text) in commands.items():
            print(f"  {name:<{width}}  {text}")
        print(f"\n'{prog} COMMAND --help' shows a command's options.")
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in commands:
        print(
            f"{prog}: unknown command {name!r}; choose from {', '.join(commands)}", file=sys.stderr
        )
        return 2
    module = importlib.import_module(commands[name][0])
    return int(module.main(rest) or 0)
