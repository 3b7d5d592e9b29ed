"""Shared test configuration: hypothesis profiles and a clean plugin registry per test.

Profiles: ``dev`` (the default, quick) and ``ci`` (more examples), chosen with the
``HYPOTHESIS_PROFILE`` environment variable.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

from pausetoken._registry import reset_registry

if TYPE_CHECKING:
    from collections.abc import Iterator

settings.register_profile(
    "dev", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(autouse=True)
def _clean_registry() -> Iterator[None]:
    """Each test starts and ends with no cached entry points, loaded or registered backends."""
    reset_registry()
    yield
    reset_registry()
