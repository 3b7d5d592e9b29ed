"""Importing the SDK pulls in no backend."""

from __future__ import annotations

import json
import subprocess
import sys

BACKEND_MODULES = ("sqlalchemy", "langgraph", "redis", "pymongo", "asyncpg", "asyncmy")


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
