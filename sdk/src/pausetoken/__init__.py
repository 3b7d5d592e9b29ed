"""pausetoken: signed, single-use resume tokens for human-in-the-loop pauses.

Mint a token when a run pauses to ask a person something; redeem the answer exactly once.
Everything public is re-exported here; the modules behind it are private. The public names
and their modules are declared once, in ``__init__.pyi``: type checkers read it, and this
module reads it on first use to import a name's module when the name is first used, so
``import pausetoken`` stays cheap for a command line or a worker that only needs part of it.
"""

from __future__ import annotations

import functools
import importlib
import logging
from pathlib import Path
from typing import Any


@functools.cache
def _homes() -> dict[str, str]:
    """Each public name and the module it lives in, as the stub's imports say."""
    import ast  # noqa: PLC0415 - only when a name is first used

    stub = Path(__file__).with_suffix(".pyi").read_text(encoding="utf-8")
    return {
        alias.name: node.module
        for node in ast.parse(stub).body
        if isinstance(node, ast.ImportFrom) and node.module and node.module != "__future__"
        for alias in node.names
    }


def __getattr__(name: str) -> Any:
    if name == "__all__":
        value: Any = sorted([*_homes(), "__version__"])
    elif name == "__version__":
        from importlib.metadata import version  # noqa: PLC0415 - only when asked

        value = version("pausetoken")
    elif name in _homes():
        value = getattr(importlib.import_module(_homes()[name]), name)
    else:
        msg = f"module 'pausetoken' has no attribute {name!r}"
        raise AttributeError(msg)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_homes(), "__all__", "__version__"})


# A library configures no logging; applications choose where pausetoken's events go.
logging.getLogger("pausetoken").addHandler(logging.NullHandler())
