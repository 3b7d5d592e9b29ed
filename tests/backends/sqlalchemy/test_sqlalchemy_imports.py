"""The backend uses only pausetoken's public modules, as a third-party store would."""

from __future__ import annotations

import ast
from pathlib import Path

import pausetoken_sqlalchemy

PACKAGE = Path(pausetoken_sqlalchemy.__file__).parent
PUBLIC = {"pausetoken.exceptions", "pausetoken.plugins", "pausetoken.testing"}


def _imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_the_package_imports_pausetoken_only_through_its_public_modules() -> None:
    sources = sorted(PACKAGE.rglob("*.py"))
    assert sources
    core = {
        (path.name, module)
        for path in sources
        for module in _imported_modules(path)
        if module == "pausetoken" or module.startswith("pausetoken.")
    }
    assert core, "the scan no longer finds the package's imports"
    assert sorted((name, module) for name, module in core if module not in PUBLIC) == []
