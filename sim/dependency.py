"""sbatch ``--dependency`` expressions.

Supported: ``after:ID[+MIN][:ID[+MIN]...]``, ``afterany:ID[:ID...]``, ``afterok:...``,
``afternotok:...`` and ``singleton``, joined by ``,`` (all must hold). ``?`` (any of) is
not modelled and is rejected with a clear error.
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("after", "afterany", "afterok", "afternotok", "singleton")


@dataclass(frozen=True, slots=True)
class Dependency:
    kind: str
    target: int | None = None
    minutes: float = 0.0


def parse_dependency(text: str) -> list[Dependency]:
    """Parse a dependency expression; raises ``ValueError`` naming the bad part."""
    text = (text or "").strip()
    if not text:
        return []
    if "?" in text:
        raise ValueError(f"dependency {text!r}: '?' (any of) is not supported")
    deps: list[Dependency] = []
    for clause in text.split(","):
        clause = clause.strip()
        if clause == "singleton":
            deps.append(Dependency("singleton"))
            continue
        kind, sep, rest = clause.partition(":")
        if kind not in KINDS or not sep or not rest:
            raise ValueError(f"dependency clause {clause!r}: expected one of {', '.join(KINDS)} with job ids")
        for item in rest.split(":"):
            jid, plus, minutes = item.partition("+")
            try:
                target = int(jid)
                mins = float(minutes) if plus else 0.0
            except ValueError:
                raise ValueError(f"dependency clause {clause!r}: bad job id or minutes {item!r}") from None
            if plus and kind != "after":
                raise ValueError(f"dependency clause {clause!r}: '+minutes' only goes with 'after'")
            deps.append(Dependency(kind, target, mins))
    return deps
