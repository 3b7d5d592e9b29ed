"""Shared test configuration: hypothesis profiles, a clean plugin registry per test, and a
watch on every log record and audit event of the run for secrets.

Profiles: ``dev`` (the default, quick) and ``ci`` (more examples), chosen with the
``HYPOTHESIS_PROFILE`` environment variable.

Tests marked ``slow`` (processes, fresh interpreters, real-time waits, long state machines)
are deselected by the ``addopts`` of the root ``pyproject.toml``; the conformance kit's own
slow tests are marked here, in every store's test class, since a mark written in the kit
would be unknown to the projects that use it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

import servers  # noqa: F401 - takes the PAUSETOKEN_TEST_* variables out of the environment
from pausetoken._registry import reset_registry
from secrets_watch import SecretsWatch

if TYPE_CHECKING:
    from collections.abc import Iterator

# Ten examples keep the inner loop fast (cattrs' "fast" profile); CI explores twenty times more.
settings.register_profile(
    "dev", max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the kit's multi-process race and its state machine ``slow`` wherever they run."""
    from pausetoken.testing import StoreConformance

    slow = {
        StoreConformance.test_processes_racing_for_the_same_pauses_get_one_winner_each,
        StoreConformance.test_processes_consuming_and_claiming_the_same_pauses_get_one_winner_each,
        StoreConformance.test_store_follows_the_state_machine_model,
    }
    for item in items:
        if getattr(item, "function", None) in slow:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _clean_registry() -> Iterator[None]:
    """Each test starts and ends with no cached entry points, loaded or registered backends."""
    reset_registry()
    yield
    reset_registry()


@pytest.fixture(scope="session", autouse=True)
def _no_secrets_in_logs_or_events() -> Iterator[SecretsWatch]:
    """For the whole run: every service reports to a recording observer and a
    ``LoggingObserver``, every log record is kept, and at the end none may contain a token,
    key material, a full jti or hash, or a payload or answer the tests used."""
    watch = SecretsWatch()
    with watch.installed():
        yield watch
    # `nox -s fuzz` seeds the fuzzer's corpus with the tokens of a test run.
    corpus = os.environ.get("PAUSETOKEN_FUZZ_CORPUS")
    if corpus:
        watch.write_corpus(Path(corpus))
    watch.assert_clean()


@pytest.fixture(autouse=True)
def _audit_observers(
    request: pytest.FixtureRequest, _no_secrets_in_logs_or_events: SecretsWatch
) -> Iterator[None]:
    """Tests marked ``no_audit_observers`` build services without the watch's observers."""
    watching = request.node.get_closest_marker("no_audit_observers") is None
    _no_secrets_in_logs_or_events.observe = watching
    yield
    _no_secrets_in_logs_or_events.observe = True
