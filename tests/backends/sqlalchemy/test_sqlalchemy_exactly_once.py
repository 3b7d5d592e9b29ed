"""The exactly-once scenarios of ``tests/sdk/test_exactly_once.py`` on every SQL engine.

The scenarios (purge never reopening a pause, tokens of two scopes meeting one row, slow
bodies keeping their claim, revoke during a redemption, commits retried until known, skewed
clocks) are written once against the service; here they run with the SQLAlchemy store of
this package's ``store`` fixture (SQLite, PostgreSQL, MariaDB) instead of the memory store.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

_SCENARIOS = Path(__file__).parents[2] / "sdk" / "test_exactly_once.py"
# Scenarios that build their own stores rather than using the ``store`` fixture.
_OWN_STORES = frozenset(
    {
        "test_any_mix_of_concurrent_redeemers_acts_on_one_answer_at_most",
        "test_a_refusal_before_the_body_ran_is_store_unavailable",
        "test_entering_the_service_checks_the_store_once",
    }
)


def _load() -> Any:
    spec = importlib.util.spec_from_file_location("exactly_once_scenarios", _SCENARIOS)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_scenarios = _load()
keys = _scenarios.keys
checkpoints = _scenarios.checkpoints
globals().update(
    {
        name: test
        for name, test in vars(_scenarios).items()
        if name.startswith("test_") and name not in _OWN_STORES
    }
)
