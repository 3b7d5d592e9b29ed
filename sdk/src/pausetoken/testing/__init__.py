"""The conformance kit: what every pausetoken store must do, as reusable tests.

Third-party stores run the same checks as the built-in ones:

* `StoreConformance`, a pytest mixin; subclass it in a ``Test...`` class and override
  the async fixture ``store`` (yielding a fresh, empty store), and where the store allows,
  ``store_factory`` (another store on the same data, so concurrent claims race through
  separate connections) and ``store_url`` (so OS processes race too);
* `pausetoken.testing.strategies`, hypothesis strategies for pause
keys, scopes,
  JSON-exact payloads, claim requests and claim sets;
* `TokenStoreMachine` and `check_store_state_machine()`, a stateful model of the
  store state machine that drives any store with the lease ids it issued and compares every
  answer and record;
* `race_processes()`, several OS processes claiming the same pauses through a store URL;
* `ReaderConformance` and `PausedRun`, the same for checkpoint readers: subclass it and
  override the fixture ``reader`` and the methods ``pause()`` and ``move_on()``.

Examples:
    ```python
    import pytest
    from pausetoken.testing import StoreConformance


    class TestMyStore(StoreConformance):
        @pytest.fixture
        def store_url(self, tmp_path):
            return f"mystore:///{tmp_path}/tokens"

        @pytest.fixture
        async def store(self, store_url):
            store = MyStore.from_url(store_url)
            yield store
            await store.aclose()
    ```

Needs the ``testing`` extra (``pausetoken[testing]``); the error says how to install it.
"""

from __future__ import annotations

from pausetoken._install import install_hint

try:
    import hypothesis  # noqa: F401 - checked here so the error names the extra
    import pytest
    import pytest_asyncio  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a test with the import blocked
    _msg = (
        "pausetoken.testing needs pytest, pytest-asyncio and hypothesis: "
        f"{install_hint('pausetoken[testing]')}"
    )
    raise ImportError(_msg, name=exc.name) from exc

# Before importing them, so that their asserts explain themselves when they fail.
pytest.register_assert_rewrite(
    "pausetoken.testing._readers", "pausetoken.testing._stateful", "pausetoken.testing._stores"
)

from pausetoken._race import race_processes  # noqa: E402
from pausetoken.testing._readers import PausedRun, ReaderConformance  # noqa: E402
from pausetoken.testing._stateful import (  # noqa: E402
    REQUIRED_VISITS,
    TokenStoreMachine,
    check_store_state_machine,
)
from pausetoken.testing._stores import StoreConformance, StoreFactory  # noqa: E402

__all__ = [
    "REQUIRED_VISITS",
    "PausedRun",
    "ReaderConformance",
    "StoreConformance",
    "StoreFactory",
    "TokenStoreMachine",
    "check_store_state_machine",
    "race_processes",
]
