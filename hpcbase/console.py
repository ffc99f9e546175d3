"""Consoles for the command lines: their text is printed as it is, never read as markup.

Messages carry file names, job names and fields of the logs users bring, which may hold
``[/x]`` (rich markup: a crash) or ``:1234:`` (an emoji code: a line number turned into a
picture). So the consoles read no markup and no emoji codes, and the labels ``note:``,
``warning:`` and ``error:`` get their colour from a style instead (:func:`say`).
"""

from __future__ import annotations

from typing import Any, Literal

from rich.console import Console
from rich.text import Text

_STYLES = {"note": "cyan", "warning": "yellow", "error": "red"}


def plain_console(**kwargs: Any) -> Console:
    """A :class:`rich.console.Console` that prints strings as they are."""
    return Console(markup=False, emoji=False, highlight=False, **kwargs)


def say(console: Console, kind: Literal["note", "warning", "error"], text: object) -> None:
    """Print ``kind: text`` with the label coloured, the text as it is, unwrapped."""
    console.print(Text.assemble((f"{kind}:", _STYLES[kind]), " ", str(text)), soft_wrap=True)
