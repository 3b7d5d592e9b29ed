"""The documentation stays in step with the code it describes."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import re
import sys
import tomllib
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import pytest

from pausetoken import Claims, MemoryStoreWarning, Settings, exceptions
from pausetoken import _install as install_module
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


def _section(page: str, heading: str) -> str:
    return (DOCS / page).read_text().split(heading, 1)[1].split("\n## ", 1)[0]


def test_every_token_code_is_explained_where_it_is_checked() -> None:
    # Security's verification order and the redeem order of Concepts name each check's code;
    # the class's catch-all default names no check.
    explained = _section("security.md", "## Verification order") + _section(
        "concepts.md", "## The redeem order"
    )
    codes = {*exceptions.InvalidToken.codes, *exceptions.TokenExpired.codes}
    codes.discard(exceptions.InvalidToken.default_code)
    assert sorted(code for code in codes if f"`{code}`" not in explained) == []


def test_every_code_in_the_verification_order_table_is_declared_on_invalid_token() -> None:
    section = _section("security.md", "## Verification order")
    codes = set(re.findall(r"`(token_[a-z_]+)`", section))
    assert len(codes) > 10, "the verification order table was not found"
    declared = set(exceptions.InvalidToken.codes) | set(exceptions.TokenExpired.codes)
    assert sorted(codes - declared) == []


def test_every_settings_code_and_variable_is_documented() -> None:
    page = (DOCS / "configuration.md").read_text()
    codes = {code for code in exceptions.InvalidSettings.codes if code.startswith("settings_")}
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


# -- one changelog per distribution, all three on the Changelog page -------------------------

# The part of a distribution's CHANGELOG.md that the docs page includes (snippet sections).
_CHANGES = re.compile(
    r"^<!-- --8<-- \[start:changes\] -->\n(.*?)^<!-- --8<-- \[end:changes\] -->$",
    flags=re.DOTALL | re.MULTILINE,
)
_HEADING = re.compile(r"^(#+) (.+)$", flags=re.MULTILINE)


def _distributions() -> dict[str, Path]:
    """Each workspace member's distribution name and its directory, relative to the root."""
    members = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]["workspace"]
    found: dict[str, Path] = {}
    for pattern in members["members"]:
        for directory in sorted(ROOT.glob(pattern)):
            project = tomllib.loads((directory / "pyproject.toml").read_text())["project"]
            found[project["name"]] = directory.relative_to(ROOT)
    return found


DISTRIBUTIONS = _distributions()


def test_the_workspace_has_the_three_distributions() -> None:
    expected = {"pausetoken", "pausetoken-sqlalchemy", "pausetoken-langgraph"}
    assert expected <= DISTRIBUTIONS.keys()


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_each_distribution_has_a_changelog_on_the_changelog_page(distribution: str) -> None:
    path = (DISTRIBUTIONS[distribution] / "CHANGELOG.md").as_posix()
    changes = _CHANGES.search((ROOT / path).read_text())
    assert changes is not None, f"{path} marks no changes section"
    headings = _HEADING.findall(changes.group(1))
    # The section nests under the page's h1: the distribution is an h2, all else below it.
    assert headings[0] == ("##", distribution)
    assert all(len(level) > len("##") for level, _ in headings[1:])
    assert ("###", "Unreleased") in headings
    assert f'--8<-- "{path}:changes"' in (DOCS / "changelog.md").read_text()


def test_the_root_changelog_points_at_each_distribution() -> None:
    index = (ROOT / "CHANGELOG.md").read_text()
    for directory in DISTRIBUTIONS.values():
        assert f"({(directory / 'CHANGELOG.md').as_posix()})" in index


def test_the_front_page_example_runs() -> None:
    page = (DOCS / "index.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
    assert blocks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        exec(compile(blocks[0], "docs/index.md", "exec"), {"__name__": "docs_example"})  # noqa: S102


# -- the Errors page, generated from the classes' codes and actions --------------------------


def _rendered(page: str) -> str:
    return str(_hooks().on_page_markdown((DOCS / page).read_text()))


def _class_sections(page: str) -> dict[str, str]:
    """The generated ``### ClassName`` sections of a rendered page, by class name."""
    sections = {}
    for part in page.split("\n### ")[1:]:
        name, _, body = part.partition("\n")
        sections[name] = body.split("\n## ", 1)[0]
    return sections


def test_the_errors_page_shows_every_code_with_its_status_meaning_and_action() -> None:
    hooks = _hooks()
    page = _rendered("errors.md")
    assert "<!--" not in page
    sections = _class_sections(page)
    # In the order the module defines them, and every one of them.
    assert list(sections) == [cls.__name__ for cls in hooks.error_classes()]
    assert set(sections) == {cls.__name__ for cls in _error_classes()}
    for cls in _error_classes():
        section = sections[cls.__name__]
        assert f"HTTP **{cls.http_status}**" in section
        assert f"**What to do:** {hooks._plain(cls.action)}" in section
        for code, meaning in cls.codes.items():
            [row] = [line for line in section.splitlines() if line.startswith(f"| `{code}` |")]
            assert hooks._plain(meaning) in row
            assert row.endswith(f"| {hooks._plain(cls.actions[code])} |")


def test_the_errors_page_summarises_every_class_with_its_status_and_action() -> None:
    page = _rendered("errors.md")
    for cls in _error_classes():
        row = f"| [`{cls.__name__}`](#{cls.__name__.lower()}) | {cls.http_status} | {cls.title} |"
        assert row in page


def test_the_errors_page_links_the_command_lines_exit_statuses() -> None:
    assert "## Exit status and errors" in (DOCS / "cli.md").read_text()
    assert "(cli.md#exit-status-and-errors)" in (DOCS / "errors.md").read_text()


def test_only_the_errors_page_lists_every_code() -> None:
    codes = {code for cls in _error_classes() for code in cls.codes}
    for page in sorted(DOCS.glob("*.md")):
        shown = {code for code in codes if f"`{code}`" in _rendered(page.name)}
        if page.name == "errors.md":
            assert shown == codes
        else:  # a page explains the codes it meets in context and links the Errors page
            assert len(shown) < len(codes) / 2, f"{page.name} repeats the list of codes"


@pytest.mark.parametrize("page", ["concepts.md", "security.md", "troubleshooting.md"])
def test_the_pages_about_errors_link_the_errors_page(page: str) -> None:
    assert "](errors.md" in (DOCS / page).read_text()


def test_generated_cells_show_markdown_characters_as_written() -> None:
    hooks = _hooks()
    assert hooks._plain("config['a']['b'] *x* <y>") == r"config\['a'\]\['b'\] \*x\* &lt;y>"


# -- the HTTP page ---------------------------------------------------------------------------


def _python_blocks(page: str) -> list[str]:
    text = (DOCS / page).read_text()
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)


# -- the Operations page: every logger and message -------------------------------------------

_LOG_LEVELS = {"debug", "info", "warning", "error", "exception", "critical"}


def _log_messages() -> list[tuple[str, str]]:
    """(logger name, message) for every literal message logged in the sources."""
    found = []
    files = [*SDK.rglob("*.py"), *(ROOT / "backends").glob("*/src/**/*.py")]
    for path in files:
        tree = ast.parse(path.read_text())
        names = re.findall(r'getLogger\("([\w.]+)"\)', path.read_text())
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            logged = node.func.attr in _LOG_LEVELS and ast.unparse(node.func.value) == "logger"
            if (logged or node.func.attr == "_lose") and isinstance(node.args[0], ast.Constant):
                found += [(name, str(node.args[0].value)) for name in names]
    return found


def test_the_operations_page_explains_every_log_message() -> None:
    page = (DOCS / "operations.md").read_text()
    messages = _log_messages()
    assert len(messages) > 25, "the scan no longer finds the log calls"
    missing = []
    for logger_name, message in messages:
        shown = "<[^`<>]+>".join(re.escape(part) for part in re.split(r"%[sdr]", message))
        row = rf"^\| `{re.escape(logger_name)}` \| [A-Z]+ \| `{shown}` \|"
        if not re.search(row, page, flags=re.MULTILINE):
            missing.append((logger_name, message))
    assert missing == []


def test_the_operations_page_names_every_logger() -> None:
    page = (DOCS / "operations.md").read_text()
    sources = [*SDK.rglob("*.py"), *(ROOT / "backends").glob("*/src/**/*.py")]
    names = {
        name
        for path in sources
        for name in re.findall(r'getLogger\("([\w.]+)"\)', path.read_text())
    }
    assert "pausetoken.service" in names
    assert sorted(name for name in names - {"pausetoken"} if f"`{name}`" not in page) == []


# -- the new pages name only what exists -----------------------------------------------------

_NEW_PAGES = ("errors.md", "http.md", "operations.md", "troubleshooting.md")


@pytest.mark.parametrize("page", _NEW_PAGES)
def test_every_code_and_name_on_the_page_exists_in_the_sources(page: str) -> None:
    sources = "".join(
        path.read_text()
        for path in [*SDK.rglob("*.py"), *(ROOT / "backends").glob("*/src/**/*.py")]
    )
    text = (DOCS / page).read_text()
    names = set(re.findall(r"`([a-z]+(?:_[a-z0-9]+)+)`", text))
    assert names, page
    # Error codes are declared as constants (InvalidKeys.KEY_TOO_SHORT is "key_too_short").
    codes = " ".join(code for cls in _error_classes() for code in cls.codes)
    defined = sources + codes + "".join(_python_blocks(page))  # and the page's own code
    assert sorted(name for name in names if name not in defined) == []


def test_no_page_mentions_a_store_that_does_not_exist_yet() -> None:
    planned = {"redis": "pausetoken-redis", "mongo": "pausetoken-mongo"}
    missing = [word for word, distribution in planned.items() if distribution not in DISTRIBUTIONS]
    stale = [
        page.name
        for page in sorted(DOCS.glob("*.md"))
        if missing and re.search("|".join(missing), page.read_text(), flags=re.IGNORECASE)
    ]
    assert stale == []


def test_security_stores_and_operations_agree_on_what_a_row_is_keyed_by() -> None:
    member = inspect.getattr_static(Claims, "pause_key")
    source = inspect.getsource(getattr(member, "fget", None) or member.func)
    fields = set(re.findall(r"self\.(\w+)", source))
    words = {
        "iss": "issuer",
        "aud": "audience",
        "ns": "`ns`",
        "thread_id": "thread",
        "checkpoint_id": "checkpoint",
        "interrupt_id": "interrupt",
    }
    assert fields, "Claims.pause_key no longer lists what it binds"
    sections = {
        "security.md": "## Single use",
        "stores.md": "## One row per pause",
        "operations.md": "## Several graphs and applications on one table",
    }
    for page, heading in sections.items():
        section = (DOCS / page).read_text().split(heading, 1)[1].split("\n## ", 1)[0]
        sentence = " ".join(section.split())
        for field in fields:
            assert words[field] in sentence, (page, field)
        assert "never" in sentence
        assert "scope" in sentence


def test_the_plugin_example_is_the_plugin_the_suite_installs_and_tests() -> None:
    page = (DOCS / "plugins.md").read_text()
    plugin = ROOT / "tests" / "plugins" / "pausetoken-inhouse" / "src" / "pausetoken_inhouse"
    assert (plugin / "__init__.py").read_text() in page


# -- the benchmark report ------------------------------------------------------------------


def _benchmark_report() -> Any:
    spec = importlib.util.spec_from_file_location(
        "benchmark_report", ROOT / "benchmarks" / "report.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return module


def test_the_benchmark_page_is_generated_from_its_data_not_edited() -> None:
    report = _benchmark_report()
    page = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    data = report.data_of(page)
    assert report.render(data) == page
    assert data["quick"] is False  # the published page comes from full runs


def test_the_benchmark_page_covers_every_benchmark_script() -> None:
    report = _benchmark_report()
    data = report.data_of((DOCS / "benchmarks.md").read_text(encoding="utf-8"))
    scripts = {
        path.name
        for path in (ROOT / "benchmarks").glob("*.py")
        # report.py and compare.py run the benchmarks; they measure nothing themselves.
        if not path.name.startswith("_") and path.name not in {"report.py", "compare.py"}
    }
    run = {Path(run["command"].split()[1]).name for run in data["runs"]}
    assert scripts == run
    assert {Path(command[0]).name for command in report.commands()} == scripts
    assert all(run["results"] for run in data["runs"])


def test_every_backend_has_a_core_extra_and_install_hints_from_a_checkout() -> None:
    # `pip install "pausetoken[x]"` pulls in each backend; until they are published the
    # hints (errors, CLI, docs) name the backend's directory instead, so both lists must
    # know every backend of the workspace.
    extras = tomllib.loads((ROOT / "sdk" / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    pulled = {
        name: requirement
        for name, (requirement, *others) in extras.items()
        if requirement.startswith("pausetoken-") and not others
    }
    backends = {name for name in DISTRIBUTIONS if name.startswith("pausetoken-")}
    assert backends - {req.split("[")[0].split("=")[0] for req in pulled.values()} == set()
    assert {
        dist: f"./{path}" for dist, path in DISTRIBUTIONS.items()
    } == install_module._CHECKOUT_PATHS
    hinted = {
        name: f"{dist}[{extra}]" if extra else dist
        for name, (dist, extra) in install_module._BACKEND_EXTRAS.items()
    }
    assert hinted == {name: req.split("=")[0] for name, req in pulled.items()}
