"""The test suite's servers, read once from its ``PAUSETOKEN_TEST_*`` variables.

The root conftest imports this module before any test runs, and the variables leave the
environment then: pausetoken refuses every ``PAUSETOKEN_*`` variable it does not know (so a
misspelt setting is noticed), and a command or service a test starts must see the
environment a user's would. Tests ask here instead.
"""

from __future__ import annotations

import os
from typing import Final

#: Prefix of the variables that configure the test suite (CI and nox set them).
PREFIX: Final = "PAUSETOKEN_TEST_"

#: The variables as they were when the test run started.
VARIABLES: Final = {
    name: os.environ.pop(name) for name in sorted(os.environ) if name.startswith(PREFIX)
}


def variable(name: str) -> str | None:
    """The value of ``PAUSETOKEN_TEST_<name>``, or ``None`` when it is unset or empty."""
    return VARIABLES.get(PREFIX + name) or None
