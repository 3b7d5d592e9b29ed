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


# -- the error-code table of security.md, generated from the classes' declarations -----------

_CODES_HEADER = "| `code` | Error | HTTP status | Meaning |"


def error_code_table() -> str:
    """Every declared code, class by class in definition order: what security.md must show."""
    rows = [_CODES_HEADER, "|---|---|---:|---|"]
    for cls in _error_classes():
        for code, meaning in cls.codes.items():
            rows.append(f"| `{code}` | `{cls.__name__}` | {cls.http_status} | {meaning} |")
    return "\n".join(rows)


def _documented_code_table() -> str:
    lines = (DOCS / "security.md").read_text().splitlines()
    assert _CODES_HEADER in lines, "security.md has no error-code table"
    start = lines.index(_CODES_HEADER)
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "\n".join(lines[start:end])


def test_the_error_code_table_in_security_md_is_generated_from_the_declarations() -> None:
    expected = error_code_table()
    assert _documented_code_table() == expected, (
        "docs/security.md's error-code table differs from the codes declared on the "
        f"exception classes; replace it with:\n{expected}"
    )


def test_every_code_in_the_verification_order_table_is_declared_on_invalid_token() -> None:
    page = (DOCS / "security.md").read_text()
    section = page.split("## Verification order", 1)[1].split("\n## ", 1)[0]
    codes = set(re.findall(r"`(token_[a-z_]+)`", section))
    assert len(codes) > 10, "the verification order table was not found"
    declared = set(exceptions.InvalidToken.codes) | set(exceptions.TokenExpired.codes)
    assert sorted(codes - declared) == []
