"""The core's modules import each other in one direction: no module imports one that
(directly or through others) imports it back, type-only imports included."""

from __future__ import annotations

import ast
from pathlib import Path

SOURCES = Path(__file__).parents[2] / "sdk" / "src"


def _modules() -> dict[str, Path]:
    found = {}
    for path in SOURCES.rglob("*.py"):
        parts = path.relative_to(SOURCES).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Each module's imports of other core modules (``from pkg import sub`` names ``sub``)."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in modules and not node.level:
                submodules = {f"{node.module}.{a.name}" for a in node.names} & modules.keys()
                # `from pkg import sub` imports the submodule; the package is only its home.
                graph[name] |= submodules or {node.module}
            elif isinstance(node, ast.Import):
                graph[name] |= {a.name for a in node.names} & modules.keys()
        graph[name].discard(name)
    return graph


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    pending = list(graph[start])
    while pending:
        node = pending.pop()
        if node not in seen:
            seen.add(node)
            pending.extend(graph[node])
    return seen


def _on_cycles(graph: dict[str, set[str]]) -> list[str]:
    """The modules that reach themselves through their imports."""
    return sorted(node for node in graph if node in _reachable(graph, node))


def test_no_core_module_imports_one_that_imports_it_back() -> None:
    graph = _imports(_modules())
    assert graph["pausetoken._lease"], "the import graph is empty: the test reads nothing"
    assert _on_cycles(graph) == []


def test_the_cycle_finder_finds_a_circle() -> None:
    assert _on_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c"]
