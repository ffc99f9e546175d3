"""The import graph of the four packages: no cycle, arrows only as docs/architecture.md draws
them, and no package imports a sibling's private (underscore) names. ``tests/`` and ``bench/``
depend on the packages only: neither imports the other, and no package imports either.

Every import counts, also those inside functions and ``if TYPE_CHECKING:`` blocks.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hpcbase", "sim", "mirage", "themis")
# The arrows of docs/architecture.md: a package may import itself and these.
ALLOWED = {
    "hpcbase": set(),
    "sim": {"hpcbase"},
    "mirage": {"hpcbase", "sim"},
    "themis": {"hpcbase"},
}
# Cycles tolerated for now (none): an entry must name a cycle that exists.
KNOWN_CYCLES: list[list[str]] = []


@dataclass(frozen=True)
class Edge:
    source: str  # importing module
    target: str  # imported module (a module or package of the tree)
    names: tuple[str, ...]  # names taken from it (``from target import names``)
    where: str  # file:line


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    out = {}
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            out[module_name(root, path)] = path
    return out


def _resolve(mod: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def edges(root: Path, packages: tuple[str, ...] = PACKAGES) -> Iterator[Edge]:
    """Every import of a module of ``packages`` by a module of ``packages``."""
    known = modules(root, packages)
    for mod, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in packages:
                        yield Edge(mod, alias.name, (), where)
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(mod, path, node)
                if target.split(".")[0] not in packages:
                    continue
                plain = []
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in known:  # ``from pkg import module``
                        yield Edge(mod, sub, (), where)
                    else:
                        plain.append(alias.name)
                if plain:
                    yield Edge(mod, target, tuple(plain), where)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (or a self-import)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def problems(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """Cycles, arrows the architecture does not draw, and imports of a sibling's privates."""
    found = []
    graph: dict[str, set[str]] = {}
    for e in edges(root, packages):
        graph.setdefault(e.source, set()).add(e.target)
        src, dst = e.source.split(".")[0], e.target.split(".")[0]
        if src == dst:
            continue
        if dst not in ALLOWED.get(src, set()):
            found.append(f"{e.where}: {src} may not import {dst} ({e.target})")
        private = [p for p in e.target.split(".")[1:] if p.startswith("_") and p != "__init__"]
        private += [n for n in e.names if n.startswith("_")]
        if private:
            found.append(f"{e.where}: private name(s) of {dst}: {', '.join(private)}")
    for comp in cycles(graph):
        found.append(f"import cycle: {' -> '.join(comp)}")
    return found


CONSUMERS = ("tests", "bench")  # import the packages; never each other


def _imported_tops(path: Path) -> Iterator[tuple[str, int]]:
    """The top-level name of every absolute import in ``path``, with its line."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node.module.split(".")[0], node.lineno


def consumer_problems(root: Path) -> list[str]:
    """Imports of ``tests`` or ``bench`` by a package, and by each other."""
    found = []
    for top in (*PACKAGES, *CONSUMERS):
        for path in sorted((root / top).rglob("*.py")) if (root / top).is_dir() else []:
            banned = set(CONSUMERS) - {top}
            for name, line in _imported_tops(path):
                if name in banned:
                    found.append(f"{path.relative_to(root)}:{line}: {top} may not import {name}")
    return found


@functools.cache
def tree_problems() -> tuple[str, ...]:
    return tuple(problems(ROOT) + consumer_problems(ROOT))


def test_the_tree_has_no_cycle_no_backward_arrow_and_no_private_import() -> None:
    known = {f"import cycle: {' -> '.join(c)}" for c in KNOWN_CYCLES}
    assert [p for p in tree_problems() if p not in known] == []


def test_known_cycles_still_exist() -> None:
    """An exception that no longer applies must go (so the list cannot hide a new cycle)."""
    found = tree_problems()
    for comp in KNOWN_CYCLES:
        assert f"import cycle: {' -> '.join(comp)}" in found


def test_the_walk_sees_the_tree() -> None:
    """The checker is looking at real imports (a vacuous pass would prove nothing)."""
    found = {(e.source, e.target) for e in edges(ROOT)}
    assert ("themis.tagging", "hpcbase.slurm") in found  # inside a function
    assert ("sim.engine", "sim.state") in found
    assert ("mirage.envs.episode", "hpcbase.jobs") in found


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.mark.parametrize(
    ("files", "needle"),
    [
        (
            {
                "sim/__init__.py": "",
                "sim/a.py": "from sim.b import x\n",
                "sim/b.py": "def f():\n    from sim import a\n",
            },
            "import cycle: sim.a -> sim.b",
        ),
        (
            {"sim/__init__.py": "", "sim/a.py": "from . import b\n", "sim/b.py": "import sim.a\n"},
            "import cycle: sim.a -> sim.b",
        ),
        (
            {"sim/__init__.py": "from sim.engine import _Job\n", "sim/engine.py": ""},
            "",  # a package's own private names are its business
        ),
        (
            {"mirage/__init__.py": "from sim.engine import _Job\n", "sim/engine.py": ""},
            "private name(s) of sim: _Job",
        ),
        (
            {"mirage/__init__.py": "import sim._backfill\n", "sim/_backfill.py": ""},
            "private name(s) of sim: _backfill",
        ),
        (
            {"hpcbase/__init__.py": "from sim import engine\n", "sim/engine.py": ""},
            "hpcbase may not import sim",
        ),
        (
            {"themis/x.py": "if True:\n    from mirage.slurm import get_client\n"},
            "themis may not import mirage",
        ),
        ({"bench/b.py": "from tests.fixtures import x\n"}, "bench may not import tests"),
        ({"tests/t.py": "def f():\n    import bench.sim_speed\n"}, "tests may not import bench"),
        ({"sim/x.py": "from tests import helpers\n"}, "sim may not import tests"),
        ({"tests/t.py": "from tests.sim import simhelpers\n"}, ""),
    ],
)
def test_the_checker_finds_what_it_looks_for(tmp_path: Path, files: dict, needle: str) -> None:
    _write(tmp_path, files)
    found = problems(tmp_path) + consumer_problems(tmp_path)
    if needle:
        assert any(needle in p for p in found), found
    else:
        assert found == []
