"""The boundary between the core and everything built on it.

Backends, benchmarks, examples and documented code use public names only
(``pausetoken``, ``pausetoken.plugins``, ``pausetoken.exceptions``, ``pausetoken.testing``);
``import pausetoken`` loads nothing it does not need; the core's modules import each other
without cycles.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from docs_blocks import ROOT, blocks, pages

if TYPE_CHECKING:
    from pathlib import Path

SDK = ROOT / "sdk" / "src" / "pausetoken"


def _private_imports(tree: ast.AST) -> list[str]:
    """Every ``pausetoken._*`` module a piece of code imports, however it is spelt."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("pausetoken._")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            if node.module.startswith("pausetoken._"):
                found.append(node.module)
            elif node.module == "pausetoken":
                found += [f"pausetoken.{a.name}" for a in node.names if a.name.startswith("_")]
    return found


def _first_party_code() -> dict[str, ast.AST]:
    """What is built on the core: backends, benchmarks, examples, plugins and doc blocks."""
    files = [
        *(ROOT / "backends").glob("*/src/**/*.py"),
        *(ROOT / "benchmarks").glob("*.py"),
        *(ROOT / "examples").glob("*.py"),
        *(ROOT / "tests" / "plugins").glob("*/src/**/*.py"),
    ]
    code = {path.relative_to(ROOT).as_posix(): ast.parse(path.read_text()) for path in files}
    for page in pages():
        for block in blocks(page):
            try:
                code[block.id] = ast.parse(block.code)
            except SyntaxError:  # a console session (>>>): its lines are checked below
                code[block.id] = ast.parse(
                    "\n".join(
                        line[4:]
                        for line in block.code.splitlines()
                        if line.startswith((">>> ", "... "))
                    )
                )
    return code


def test_backends_benchmarks_examples_and_docs_import_no_private_module() -> None:
    code = _first_party_code()
    assert any(name.startswith("backends/") for name in code)
    assert any(name.startswith("benchmarks/") for name in code)
    assert any(name.startswith("docs/") for name in code)
    offenders = {name: found for name, tree in code.items() if (found := _private_imports(tree))}
    assert offenders == {}


def test_the_private_import_check_sees_every_spelling() -> None:
    tree = ast.parse(
        "import pausetoken._claims\n"
        "from pausetoken._hashing import to_json_value\n"
        "from pausetoken import _registry, Scope\n"
        "from pausetoken.plugins import fingerprint\n"
    )
    assert _private_imports(tree) == [
        "pausetoken._claims",
        "pausetoken._hashing",
        "pausetoken._registry",
    ]


# Loaded only when a signer, an asymmetric key or a converter is needed.
_LAZY = (
    "joserfc._rfc7518.ec_key",
    "joserfc._rfc7518.rsa_key",
    "joserfc._rfc8037.okp_key",
    "cryptography.hazmat.primitives.asymmetric",
    "cattrs.preconf",
)
_BACKENDS = (
    "sqlalchemy",
    "langgraph",
    "redis",
    "pymongo",
    "asyncpg",
    "asyncmy",
    "aiosqlite",
    "starlette",
    "opentelemetry",
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "statement",
    ["import pausetoken", "import pausetoken.exceptions", "from pausetoken import Scope"],
)
def test_importing_the_core_loads_no_backend_key_types_or_converters(statement: str) -> None:
    code = (
        f"import json, sys; {statement}; "
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({_LAZY + _BACKENDS!r}))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def _module_imports(path: Path) -> set[str]:
    """The ``pausetoken`` modules a core module imports when it is imported.

    Imports inside functions and under ``if TYPE_CHECKING:`` run later or never, so they
    cannot form a cycle at import time.
    """
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if isinstance(inner, ast.ImportFrom) and inner.level == 0 and inner.module:
                if inner.module == "pausetoken" or inner.module.startswith("pausetoken."):
                    # ``from package import name`` imports the submodule when there is one.
                    for alias in inner.names:
                        submodule = f"{inner.module}.{alias.name}"
                        found.add(submodule if submodule in _MODULES else inner.module)
            elif isinstance(inner, ast.Import):
                found |= {a.name for a in inner.names if a.name.startswith("pausetoken.")}
    return found


def _module_name(path: Path) -> str:
    parts = path.relative_to(SDK.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


_MODULES = frozenset(_module_name(path) for path in SDK.rglob("*.py"))


def test_core_modules_import_each_other_without_cycles() -> None:
    graph = {_module_name(path): _module_imports(path) for path in SDK.rglob("*.py")}
    # Functions are skipped above, so only module-level imports count; the package itself
    # imports its names lazily and must not be imported back by a private module.
    back_to_package = sorted(name for name, deps in graph.items() if "pausetoken" in deps)
    assert back_to_package == []
    cycles = []
    state: dict[str, int] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for dep in sorted(graph.get(name, ())):
            if state.get(dep) == 1:
                cycles.append([*trail[trail.index(dep) :], dep] if dep in trail else [name, dep])
            elif dep not in state:
                visit(dep, [*trail, dep])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []


def test_library_code_knows_nothing_of_the_test_suites_variables() -> None:
    sources = [*SDK.rglob("*.py"), *(ROOT / "backends").glob("*/src/**/*.py")]
    assert [p.name for p in sources if "PAUSETOKEN_TEST" in p.read_text()] == []
