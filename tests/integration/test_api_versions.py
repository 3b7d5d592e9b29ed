"""The first-party backends, installed beside a core that moved on, are refused by it.

Here every distribution of the repository is installed (the ``faults`` session installs them
all), so none of the cases may be missing: each one must be refused with
``backend_api_version`` rather than loaded into a core whose protocol it does not speak.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

#: (entry-point group kind, name, module of the distribution), one per first-party backend.
BACKENDS = [
    ("stores", "sqlite", "pausetoken_sqlalchemy"),
    ("stores", "redis", "pausetoken_redis"),
    ("stores", "mongodb", "pausetoken_mongo"),
    ("checkpoints", "langgraph", "pausetoken_langgraph"),
    ("checkpoints", "pydantic-ai", "pausetoken_pydantic_ai"),
    ("checkpoints", "openai-agents", "pausetoken_openai_agents"),
    ("checkpoints", "mcp", "pausetoken_mcp"),
    ("checkpoints", "agui", "pausetoken_agui"),
]

SCRIPT = textwrap.dedent(
    """
    import sys
    from pausetoken import _registry, _store_api, _reader_api, plugins
    from pausetoken.exceptions import ConfigurationError

    # A later core: store API 3 and reader API 2 only, its constants moved along.
    _store_api.STORE_API_VERSION = plugins.STORE_API_VERSION = 3
    _reader_api.CHECKPOINTS_API_VERSION = plugins.CHECKPOINTS_API_VERSION = 2
    _registry._API_VERSIONS = {
        **_registry._API_VERSIONS, "stores": frozenset({3}), "checkpoints": frozenset({2})
    }
    kind, name = sys.argv[1:]
    try:
        _registry.load(kind, name)
    except ConfigurationError as exc:
        print(exc.code)
    else:
        print("accepted")
    """
)


@pytest.mark.slow  # a fresh interpreter each, so that the backend is imported under a newer core
@pytest.mark.parametrize(("kind", "name", "module"), BACKENDS, ids=[b[1] for b in BACKENDS])
def test_a_core_that_moved_to_another_api_version_refuses_the_first_party_backend(
    kind: str, name: str, module: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, kind, name],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert done.stdout.strip() == "backend_api_version", (module, done.stdout, done.stderr)
