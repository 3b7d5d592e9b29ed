"""The conformance kit: what every pausetoken store must do, as reusable tests.

Third-party stores run the same checks as the built-in ones:

* :class:`StoreConformance`, a pytest mixin; subclass it in a ``Test...`` class and override
  the one async fixture ``store`` (yielding a fresh, empty store);
* :mod:`pausetoken.testing.strategies`, hypothesis strategies for ``jti`` values, scopes,
  JSON-exact payloads, claim requests and claim sets;
* :class:`TokenStoreMachine` and :func:`check_store_state_machine`, a stateful model of the
  store state machine that drives any store and compares every answer;
* :func:`race_processes`, several OS processes claiming the same tokens through a store URL.

Example:
    .. code-block:: python

        import pytest
        from pausetoken.testing import StoreConformance


        class TestMyStore(StoreConformance):
            @pytest.fixture
            async def store(self, tmp_path):
                store = MyStore.from_url(f"mystore:///{tmp_path}/tokens")
                yield store
                await store.aclose()

Needs the ``testing`` extra: ``pip install "pausetoken[testing]"``.
"""

from __future__ import annotations

try:
    import hypothesis  # noqa: F401 - checked here so the error names the extra
    import pytest
    import pytest_asyncio  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a test with the import blocked
    _msg = (
        "pausetoken.testing needs pytest, pytest-asyncio and hypothesis: "
        'pip install "pausetoken[testing]"'
    )
    raise ImportError(_msg, name=exc.name) from exc

# Before importing them, so that their asserts explain themselves when they fail.
pytest.register_assert_rewrite("pausetoken.testing._stateful", "pausetoken.testing._stores")

from pausetoken._race import race_processes  # noqa: E402
from pausetoken.testing._stateful import (  # noqa: E402
    TokenStoreMachine,
    check_store_state_machine,
)
from pausetoken.testing._stores import StoreConformance  # noqa: E402

__all__ = [
    "StoreConformance",
    "TokenStoreMachine",
    "check_store_state_machine",
    "race_processes",
]
