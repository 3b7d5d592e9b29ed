"""Importing the SDK pulls in no backend."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

import pytest

BACKEND_MODULES = ("sqlalchemy", "langgraph", "redis", "pymongo", "asyncpg", "asyncmy")


@pytest.mark.slow
def test_import_pausetoken_imports_no_backend() -> None:
    code = (
        "import json, sys, pausetoken; "
        f"print(json.dumps([m for m in {BACKEND_MODULES!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_every_public_name_is_exported_and_documented() -> None:
    import pausetoken

    assert sorted(pausetoken.__all__) == pausetoken.__all__
    for name in pausetoken.__all__:
        obj = getattr(pausetoken, name)
        assert getattr(obj, "__doc__", None), f"{name} has no docstring"


def test_the_version_is_the_installed_distributions_and_unknown_names_are_refused() -> None:
    from importlib.metadata import version

    import pausetoken

    assert pausetoken.__version__ == version("pausetoken")
    assert {"PauseTokens", "__version__", "__all__"} <= set(dir(pausetoken))
    with pytest.raises(AttributeError, match="PauseToken"):
        getattr(pausetoken, "PauseToken")  # noqa: B009 - a name the stub does not declare


# The core never imports a backend: backends import the core (and plug in through entry
# points), so an import the other way would be a cycle between distributions.
_BACKENDS = frozenset({"pausetoken_sqlalchemy", "pausetoken_langgraph", "langgraph", "sqlalchemy"})
_SDK = Path(__file__).resolve().parents[2] / "sdk" / "src"


def _imported_modules(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Every module a source imports, at any depth, by statement or by name to import_module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.lineno, node.module
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.lineno, node.args[0].value


def test_the_core_imports_no_backend() -> None:
    sources = sorted(_SDK.rglob("*.py"))
    assert len(sources) > 20, "the scan no longer finds the core's sources"
    found = [
        f"{path.relative_to(_SDK)}:{line} imports {module}"
        for path in sources
        for line, module in _imported_modules(ast.parse(path.read_text(), str(path)))
        if module.split(".")[0] in _BACKENDS
    ]
    assert found == []


def test_the_backend_import_scan_sees_every_form_of_import() -> None:
    source = (
        "import sqlalchemy.ext\n"
        "def f():\n"
        "    from pausetoken_langgraph._demo import run_demo\n"
        "    importlib.import_module('langgraph.graph')\n"
    )
    modules = [module for _, module in _imported_modules(ast.parse(source))]
    assert modules == ["sqlalchemy.ext", "pausetoken_langgraph._demo", "langgraph.graph"]


def test_defining_an_interrupt_loads_no_converter_and_using_one_does() -> None:
    code = (
        "import sys\n"
        "from pausetoken import Interrupt\n"
        "refund = Interrupt('refund', payload=dict, response=dict)\n"
        "assert 'cattrs' not in sys.modules and 'pausetoken._structure' not in sys.modules\n"
        "assert refund.structure_response({'ok': True}) == {'ok': True}\n"
        "assert refund.to_json(refund.structure_payload({'a': [1]})) == {'a': [1]}\n"
        "assert 'pausetoken._structure' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
