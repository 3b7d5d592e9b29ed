"""Run the Python code blocks of the READMEs and the documentation, and the examples.

Every fenced ``python`` block of ``README.md``, ``sdk/README.md``, ``backends/*/README.md``
and ``docs/*.md`` runs in the test suite, each on its own, as a reader would paste it:

* in a fresh namespace whose ``__name__`` is ``"__main__"``, in a fresh temporary working
  directory that holds ``pausetoken-keys.json`` (a key set as ``pausetoken keygen -o`` writes
  it), with ``PAUSETOKEN_KEYS_FILE`` naming that file, ``PAUSETOKEN_STORE_URL=memory://``
  and no other ``PAUSETOKEN_*`` variable, and ``MemoryStoreWarning`` silenced;
* a block may ``await`` at the top level, as in the ``python -m asyncio`` console;
* a block whose first line starts with ``>>>`` is a console session, checked with doctest.

A block that is deliberately partial (a shape, not a program) is marked on the line just
before its fence with ``<!-- docs-test: not run: REASON -->``; the reason is required and
the block must still compile. :data:`PRELUDES` may give a page code that defines the names
its fragments use (the way pytest's ``doctest_namespace`` does); complete blocks are better.

Pages whose blocks need the backends (pausetoken-sqlalchemy, LangGraph) are listed in
:data:`BACKEND_PAGES` and run by the LangGraph test session, which installs them; those
that need the HTTP extra are in :data:`HTTP_PAGES`, run by the http session; the others
run with the core alone. The same split holds for :data:`EXAMPLES`.
"""

from __future__ import annotations

import ast
import asyncio
import doctest
import json
import os
import re
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Final

import attrs

if TYPE_CHECKING:
    import pytest

ROOT: Final = Path(__file__).resolve().parents[1]

#: Pages whose blocks import the backends; every other page needs the core only.
BACKEND_PAGES: Final = frozenset(
    {
        "backends/langgraph/README.md",
        "backends/sqlalchemy/README.md",
        "docs/langchain.md",
        "docs/langgraph.md",
        "docs/sqlalchemy.md",
        "docs/stores.md",
    }
)

#: Pages whose blocks need the HTTP extra (Starlette, httpx): the http session runs them.
HTTP_PAGES: Final = frozenset({"docs/http.md", "docs/approval-page.md"})

#: Each example and whether it needs the backends.
EXAMPLES: Final = {
    "examples/quickstart.py": False,
    "examples/langgraph_approval.py": True,
    "examples/pydantic_ai_approval.py": True,
    "examples/openai_agents_approval.py": True,
    "examples/mcp_approval.py": True,
    "examples/agui_approval.py": True,
}

_REDEMPTION_PRELUDE: Final = """
import asyncio
import attrs
from pausetoken import Interrupt, KeyRing, PauseTokens, Scope, Settings

@attrs.frozen
class Refund:
    order_id: str

@attrs.frozen
class Decision:
    approved: bool

REFUND = Interrupt("refund", payload=Refund, response=Decision)

async def resume_the_run(response: Decision) -> None:
    await asyncio.sleep(0)

async def _paused():
    tokens = PauseTokens.from_settings(Settings(store_url="memory://", keys=KeyRing.generate()))
    tokens.register(REFUND)
    scope = Scope("acme")
    event = await tokens.mint(REFUND, Refund("order-1"), scope=scope, thread_id="t", run_id="r")
    return tokens, scope, event.token

tokens, scope, token = asyncio.run(_paused())
answer = {"approved": True}
"""

#: Code run before each block of a page, defining the names its fragments use.
PRELUDES: Final = {"docs/concepts.md": _REDEMPTION_PRELUDE}

_FENCE: Final = re.compile(r"^```python[^\n]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
_MARKER: Final = re.compile(r"<!--\s*docs-test:(?P<marker>.*?)-->")
_NOT_RUN: Final = re.compile(r"\s*not run:\s*(?P<reason>\S.*?)\s*")


@attrs.frozen
class Block:
    """One fenced ``python`` block."""

    page: str
    line: int
    code: str
    not_run: str | None  # the stated reason, for a block marked as partial

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[str]:
    """Every Markdown page whose blocks run, relative to the repository root."""
    found = [ROOT / "README.md", ROOT / "sdk" / "README.md"]
    found += sorted((ROOT / "backends").glob("*/README.md"))
    found += sorted((ROOT / "docs").glob("*.md"))
    return [path.relative_to(ROOT).as_posix() for path in found]


def blocks(page: str, text: str | None = None) -> list[Block]:
    """The page's ``python`` blocks, with the marker on the line before each, if any."""
    if text is None:
        text = (ROOT / page).read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _MARKER.search(before)
        not_run = None
        if marker is not None:
            reason = _NOT_RUN.fullmatch(marker["marker"])
            if reason is None:
                msg = f"{page}:{line}: write the marker as <!-- docs-test: not run: REASON -->"
                raise ValueError(msg)
            not_run = reason["reason"]
        found.append(Block(page, line, match[1], not_run))
    return found


def blocks_for(*, backends: bool = False, http: bool = False) -> list[Block]:
    """The blocks of the pages that need the HTTP extra, the backends, or neither."""
    return [
        block
        for page in pages()
        if (page in HTTP_PAGES) == http and (http or (page in BACKEND_PAGES) == backends)
        for block in blocks(page)
    ]


def write_key_file(path: Path) -> Path:
    """A fresh key set in ``path``, mode 0600, as ``pausetoken keygen -o`` writes it."""
    from pausetoken import KeyRing

    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump(KeyRing.generate().to_jwks(private=True), file)
    return path


def run_block(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run one block as described in the module docstring; its failure fails the test."""
    from pausetoken import MemoryStoreWarning

    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    # dont_inherit: a block runs as pasted, not under this module's `from __future__` imports
    # (postponed annotations would hide a name a class annotation needs at run time).
    filename = block.id
    # Pad so that tracebacks show the line numbers of the page.
    source = "\n" * block.line + block.code
    if block.not_run is not None:
        compile(source, filename, "exec", flags=flags, dont_inherit=True)
        return
    monkeypatch.chdir(tmp_path)
    for name in [name for name in os.environ if name.startswith("PAUSETOKEN_")]:
        monkeypatch.delenv(name)
    keys = write_key_file(tmp_path / "pausetoken-keys.json")
    monkeypatch.setenv("PAUSETOKEN_KEYS_FILE", str(keys))
    monkeypatch.setenv("PAUSETOKEN_STORE_URL", "memory://")
    namespace: dict[str, object] = {"__name__": "__main__"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        # As Python's default filters do: `open(path).read()` in a snippet is not an error.
        warnings.simplefilter("ignore", ResourceWarning)
        prelude = PRELUDES.get(block.page)
        if prelude is not None:
            exec(compile(prelude, f"{block.page} (prelude)", "exec", dont_inherit=True), namespace)  # noqa: S102
        if block.code.lstrip().startswith(">>>"):
            _run_console(block, namespace)
            return
        code = compile(source, filename, "exec", flags=flags, dont_inherit=True)
        result = eval(code, namespace)  # noqa: S307 - the documentation's own code
        if asyncio.iscoroutine(result):
            asyncio.run(result)


def _run_console(block: Block, namespace: dict[str, object]) -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(block.code, namespace, block.id, block.page, block.line)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    failed, _ = runner.summarize(verbose=False)
    assert failed == 0, f"{block.id}: the console session's output differs (see above)"
