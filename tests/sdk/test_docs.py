"""The documentation stays in step with the code it describes."""

from __future__ import annotations

import importlib.util
import re
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from pausetoken import MemoryStoreWarning, Settings, exceptions
from pausetoken._cli import COMMANDS
from pausetoken._settings import ENV_PREFIX

if TYPE_CHECKING:
    from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SDK = ROOT / "sdk" / "src" / "pausetoken"


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _error_classes() -> list[type[exceptions.PauseTokenError]]:
    return [
        value
        for name in exceptions.__all__
        if isinstance(value := getattr(exceptions, name), type)
        and issubclass(value, exceptions.PauseTokenError)
    ]


def _rendered_concepts() -> str:
    return str(_hooks().on_page_markdown((DOCS / "concepts.md").read_text()))


def test_every_error_class_is_in_the_concepts_table_with_its_status() -> None:
    page = _rendered_concepts()
    assert "<!--" not in page
    for cls in _error_classes():
        assert f"| `{cls.__name__}` | `{cls.default_code}` | {cls.http_status} |" in page


def test_every_token_code_raised_by_the_verifier_is_documented() -> None:
    documented = (DOCS / "security.md").read_text() + _rendered_concepts()
    sources = "".join((SDK / name).read_text() for name in ("_jose.py", "_verify.py", "_keys.py"))
    codes = set(re.findall(r'"(token_[a-z_]+)"', sources))
    assert codes, "no token codes found: the pattern no longer matches the sources"
    missing = sorted(code for code in codes if f"`{code}`" not in documented)
    assert missing == []


def test_every_settings_code_and_variable_is_documented() -> None:
    page = (DOCS / "configuration.md").read_text()
    source = (SDK / "_settings.py").read_text()
    codes = set(re.findall(r'"(settings_[a-z_]+)"', source))
    assert codes
    assert sorted(code for code in codes if f"`{code}`" not in page) == []
    names = [a.name for a in attrs.fields(Settings)] + ["keys_file"]
    for name in names:
        assert f"`{ENV_PREFIX}{name.upper()}`" in page
        assert f"`{name}`" in page


def test_every_cli_command_has_a_section() -> None:
    page = (DOCS / "cli.md").read_text()
    for command in COMMANDS:
        assert f"\n## {command.name}\n" in page


def test_the_changelog_page_includes_the_root_changelog() -> None:
    assert (ROOT / "CHANGELOG.md").is_file()
    assert '--8<-- "CHANGELOG.md"' in (DOCS / "changelog.md").read_text()


def test_the_front_page_example_runs() -> None:
    page = (DOCS / "index.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
    assert blocks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        exec(compile(blocks[0], "docs/index.md", "exec"), {"__name__": "docs_example"})  # noqa: S102
