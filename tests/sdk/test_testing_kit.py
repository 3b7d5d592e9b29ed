"""The conformance kit itself: correct stores pass it, each broken store fails it.

The kit is run against the deliberately broken stores of ``broken_stores.py`` in a pytest
of its own (a subprocess, so its failures stay out of this run); the table
``CAUGHT_BY`` names the kit tests that must fail for each. ``race_processes`` and the
SQLite-file store (a second, independent implementation shared between processes) are
tested here too.
"""

from __future__ import annotations

import asyncio
import importlib
import multiprocessing.context
import os
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from broken_stores import BROKEN, ColdPoolReadThenWrite

from pausetoken import MemoryStore, open_store
from pausetoken._claims import new_jti
from pausetoken._install import install_hint
from pausetoken.exceptions import ConfigurationError, PauseTokenError
from pausetoken.plugins import ClaimOutcome, PauseRecord
from pausetoken.testing import StoreConformance, StoreFactory, race_processes
from pausetoken.testing._stores import StoreConformance as _Kit
from pausetoken.testing._stores import _now

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    from pausetoken import TokenStore

pytestmark = pytest.mark.filterwarnings("ignore::pausetoken.MemoryStoreWarning")

HERE = Path(__file__).parent
SQLITE_STORE = "sqlite_file_store:SQLiteFileStore"

#: For each broken store, kit tests that must fail on it (others may fail too).
CAUGHT_BY: dict[str, set[str]] = {
    "ReadThenWriteClaim": {
        "test_concurrent_claims_of_one_pause_have_exactly_one_winner",
        "test_concurrent_takeovers_of_an_ended_lease_have_exactly_one_winner",
        "test_store_follows_the_state_machine_model",
    },
    "ColdPoolReadThenWrite": {
        "test_concurrent_claims_of_one_pause_have_exactly_one_winner",
        "test_concurrent_takeovers_of_an_ended_lease_have_exactly_one_winner",
    },
    "CommitIgnoresHolder": {
        "test_commit_by_another_lease_is_refused",
        "test_after_a_takeover_the_old_holder_can_neither_renew_commit_nor_release",
        "test_store_follows_the_state_machine_model",
    },
    "ReleaseOfRedeemed": {
        "test_release_after_commit_is_refused_and_the_pause_stays_redeemed",
        "test_store_follows_the_state_machine_model",
    },
    "TakeoverOfLiveLease": {
        "test_claim_during_a_live_lease_is_in_progress_and_changes_nothing",
        "test_concurrent_claims_of_one_pause_have_exactly_one_winner",
        "test_store_follows_the_state_machine_model",
    },
    "RevokeOverwritesRedeemed": {
        "test_revoking_a_redeemed_pause_leaves_it_redeemed",
        "test_store_follows_the_state_machine_model",
    },
    "TakeoverKeepsOldAnswer": {
        "test_a_takeover_overwrites_scope_name_answer_and_lease",
        "test_a_takeover_records_the_new_answer",
        "test_store_follows_the_state_machine_model",
    },
    "TakeoverKeepsOldScope": {
        "test_a_takeover_overwrites_scope_name_answer_and_lease",
        "test_store_follows_the_state_machine_model",
    },
    "SecondPrecisionTimes": {
        "test_every_time_round_trips_with_microseconds",
        "test_claim_of_an_unknown_pause_is_claimed_and_every_field_recorded",
        "test_store_follows_the_state_machine_model",
    },
    "RevokeKeepsTheLease": {
        "test_revoking_a_lapsed_claim_revokes_it_and_clears_the_lease",
        "test_store_follows_the_state_machine_model",
    },
    "CommitClearsTheLease": {
        "test_commit_by_the_holder_redeems_the_pause_keeping_every_field",
        "test_store_follows_the_state_machine_model",
    },
    "ClaimLowersTheExpiry": {
        "test_claim_raises_the_expiry_and_never_lowers_it",
        "test_store_follows_the_state_machine_model",
    },
    "CommitNotIdempotent": {
        "test_a_second_commit_by_the_same_lease_is_confirmed",
        "test_store_follows_the_state_machine_model",
    },
    "RevokeOfLiveClaim": {
        "test_revoking_a_live_claim_leaves_it_claimed",
        "test_store_follows_the_state_machine_model",
    },
    "RenewLowersTheLease": {
        "test_renew_never_lowers_the_lease",
        "test_store_follows_the_state_machine_model",
    },
    "TTLRoundedDownToMilliseconds": {"test_a_row_the_engine_expires_is_kept_until_its_expiry"},
    "CheckAlwaysSucceeds": {"test_check_of_a_closed_store_raises_store_unavailable"},
    "ReadThenWriteFileClaim": {"test_processes_racing_for_the_same_pauses_get_one_winner_each"},
    "ReadThenWriteConsume": {
        "test_concurrent_consumes_and_claims_of_one_pause_have_exactly_one_winner",
        "test_concurrent_consumes_of_an_ended_lease_have_exactly_one_winner",
        "test_store_follows_the_state_machine_model",
    },
    "ConsumeOverLiveLease": {
        "test_consume_during_a_live_lease_is_in_progress_and_changes_nothing",
        "test_store_follows_the_state_machine_model",
    },
    "ConsumeNotIdempotent": {
        "test_consume_retried_by_the_same_lease_is_confirmed",
        "test_store_follows_the_state_machine_model",
    },
}

_KIT_MODULE = """
import pytest

import broken_stores
from pausetoken import open_store
from pausetoken.testing import StoreConformance

pytestmark = pytest.mark.filterwarnings("ignore::pausetoken.MemoryStoreWarning")


def _kit(store_class):
    class Kit(StoreConformance):
        concurrency = 20
        stateful_step_count = 30
        process_race_skip_reason = "a broken MemoryStore is process-local"

        @pytest.fixture
        async def store(self):
            store = store_class()
            yield store
            await store.aclose()

    return Kit


for _name, _cls in broken_stores.BROKEN.items():
    globals()[f"Test{_name}"] = _kit(_cls)


class TestReadThenWriteFileClaim(StoreConformance):
    # No store_factory: in one process every claim goes through one connection, one after
    # the other, so only the race between processes can catch the store.
    concurrency = 20
    stateful_step_count = 30

    @pytest.fixture
    def store_url(self):
        return "broken_stores:ReadThenWriteFileClaim"

    @pytest.fixture
    def store_url_options(self, tmp_path):
        return {"path": str(tmp_path / "tokens.db")}

    @pytest.fixture
    async def store(self, store_url, store_url_options):
        store = open_store(store_url, **store_url_options)
        yield store
        await store.aclose()
"""

# Shrinking a failure is what takes time, and only the verdict matters here.
_KIT_CONFTEST = """
from hypothesis import HealthCheck, Phase, settings

settings.register_profile(
    "kit", max_examples=50, deadline=None, database=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.generate],
)
settings.load_profile("kit")
"""

_KIT_INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
"""


@pytest.fixture(scope="module")
def kit_failures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """Run the kit against every broken store once; the failed tests, by store."""
    root = tmp_path_factory.mktemp("kit")
    (root / "test_broken_stores.py").write_text(_KIT_MODULE)
    (root / "conftest.py").write_text(textwrap.dedent(_KIT_CONFTEST))
    (root / "pytest.ini").write_text(_KIT_INI)
    report = root / "report.xml"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    # Only the verdicts are read: formatting a hundred expected failures took most of the
    # run's time, and plugins other than ours took seconds to start.
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "--tb=no",
            "--disable-plugin-autoload",
            *("-p", "asyncio", "-p", "hypothesispytest", "-p", "no:cacheprovider"),
            f"--junitxml={report}",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert report.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    failures: dict[str, set[str]] = {name: set() for name in CAUGHT_BY}
    ran: dict[str, int] = dict.fromkeys(CAUGHT_BY, 0)
    # The report is our own subprocess's, not untrusted input.
    for case in ET.parse(report).getroot().iter("testcase"):  # noqa: S314
        store = case.attrib["classname"].rpartition(".")[2].removeprefix("Test")
        ran[store] += 1
        if case.find("failure") is not None or case.find("error") is not None:
            failures[store].add(case.attrib["name"].partition("[")[0])
    kit_tests = {name for name in dir(_Kit) if name.startswith("test_")}
    assert all(n >= len(kit_tests) for n in ran.values()), ran
    return failures


def test_every_broken_store_is_in_the_table() -> None:
    assert set(CAUGHT_BY) == {*BROKEN, "ReadThenWriteFileClaim"}


@pytest.mark.slow
@pytest.mark.parametrize("broken", sorted(CAUGHT_BY))
def test_the_kit_fails_a_broken_store(broken: str, kit_failures: dict[str, set[str]]) -> None:
    missed = CAUGHT_BY[broken] - kit_failures[broken]
    assert not missed, f"{broken} passed {sorted(missed)}"


async def test_a_cold_pool_hides_a_read_then_write_claim_from_an_unprepared_race() -> None:
    # What the kit used to do: gather the claims on a store as the fixture left it.
    store = ColdPoolReadThenWrite()
    key, kit = new_jti(), _Kit()
    now = _now()
    requests = [kit.request(key, now=now) for _ in range(20)]
    results = await asyncio.gather(*(store.claim(r) for r in requests))
    assert [r.outcome for r in results].count(ClaimOutcome.CLAIMED) == 1
    # The kit's race opens the connections first and starts every claim together.
    with pytest.raises(AssertionError, match="CLAIMED"):
        await kit.test_concurrent_claims_of_one_pause_have_exactly_one_winner(
            ColdPoolReadThenWrite(), None
        )


class EngineExpiresOnTime(MemoryStore):
    """A correct engine TTL: a row goes once its expiry has passed, not before."""

    expires_rows_itself = True

    async def status(self, pause_key: str) -> PauseRecord | None:
        with self._lock:
            row = self._rows.get(pause_key)
            if row is not None and datetime.now(UTC) > row.expires_at:
                del self._rows[pause_key]
        return await super().status(pause_key)


@pytest.mark.parametrize("expiry", ["written", "raised"])
async def test_the_engine_expiry_test_passes_a_ttl_that_ends_on_time(expiry: str) -> None:
    # The counterpart of TTLRoundedDownToMilliseconds: the test reads in the last
    # millisecond, and a correct engine still has the row there.
    await _Kit().test_a_row_the_engine_expires_is_kept_until_its_expiry(
        EngineExpiresOnTime(), expiry
    )


async def test_the_engine_expiry_test_does_not_apply_to_a_store_that_purges() -> None:
    with pytest.raises(pytest.skip.Exception, match="expires_rows_itself"):
        await _Kit().test_a_row_the_engine_expires_is_kept_until_its_expiry(
            MemoryStore(), "written"
        )


@pytest.mark.slow
def test_the_process_race_alone_catches_a_claim_of_two_round_trips(tmp_path: Path) -> None:
    # The race's rounds start at one instant and half the processes go backwards: measured
    # on 2 cores, 30 races out of 30 found a pause won twice (22 of 30 before).
    keys = [new_jti() for _ in range(_Kit.process_race_keys)]
    counts = race_processes(
        "broken_stores:ReadThenWriteFileClaim",
        keys,
        processes=_Kit.process_race_processes,
        options={"path": str(tmp_path / "race.db")},
    )
    assert max(counts.values()) > 1, "no pause was won twice"


@pytest.mark.slow
def test_the_process_race_with_consume_catches_a_consume_of_two_round_trips(
    tmp_path: Path,
) -> None:
    keys = [new_jti() for _ in range(_Kit.process_race_keys)]
    counts = race_processes(
        "broken_stores:ReadThenWriteFileConsume",
        keys,
        processes=4,
        options={"path": str(tmp_path / "race.db")},
        consume=True,
    )
    assert max(counts.values()) > 1, "no pause was won twice"


async def test_the_process_race_fails_without_a_url_or_a_stated_reason() -> None:
    with pytest.raises(pytest.fail.Exception, match="process_race_skip_reason"):
        await _Kit().test_processes_racing_for_the_same_pauses_get_one_winner_each(
            MemoryStore(), None, {}
        )


# -- a second, independent store, shared between processes ------------------------------


class TestSQLiteFileStoreConformance(StoreConformance):
    """The kit against a SQLite file: races through separate stores, and across processes."""

    concurrency = 10
    process_race_keys = 20
    process_race_processes = 2

    @pytest.fixture
    def store_url(self) -> str:
        return SQLITE_STORE

    @pytest.fixture
    def store_url_options(self, tmp_path: Path) -> Mapping[str, Any]:
        return {"path": str(tmp_path / "tokens.db")}

    @pytest.fixture
    def store_factory(self, store_url: str, store_url_options: Mapping[str, Any]) -> StoreFactory:
        async def open_one() -> TokenStore:
            return open_store(store_url, **store_url_options)

        return open_one

    @pytest.fixture
    async def store(self, store_factory: StoreFactory) -> AsyncIterator[TokenStore]:
        store = await store_factory()
        yield store
        await store.aclose()


# -- race_processes -----------------------------------------------------------------------


def test_race_processes_refuses_a_process_local_store() -> None:
    with pytest.raises(ConfigurationError, match="shared between processes"):
        race_processes("memory://", ["a" * 22])


def test_race_processes_needs_two_processes() -> None:
    with pytest.raises(ConfigurationError, match="at least 2"):
        race_processes("memory://", ["a" * 22], processes=1)


@pytest.mark.slow
def test_race_processes_finds_exactly_one_winner_per_pause_on_a_shared_store(
    tmp_path: Path,
) -> None:
    keys = [f"race{i:02d}" + "x" * 18 for i in range(5)]
    counts = race_processes(
        SQLITE_STORE, keys, processes=2, options={"path": str(tmp_path / "race.db")}
    )
    assert counts == dict.fromkeys(keys, 1)


@pytest.mark.slow
def test_race_processes_honours_its_timeout_while_starting_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_start = multiprocessing.context.SpawnProcess.start

    def slow_start(self: multiprocessing.context.SpawnProcess) -> None:
        time.sleep(0.4)
        real_start(self)

    monkeypatch.setattr(multiprocessing.context.SpawnProcess, "start", slow_start)
    began = time.monotonic()
    with pytest.raises(PauseTokenError, match="processes started") as info:
        race_processes(
            SQLITE_STORE,
            ["a" * 22],
            processes=6,
            options={"path": str(tmp_path / "race.db")},
            timeout=1.0,
        )
    assert info.value.code == "race_worker_failed"
    assert time.monotonic() - began < 10  # the started workers were released, not waited out


# -- the testing extra -----------------------------------------------------------------


def test_importing_the_kit_without_its_extra_names_the_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in [m for m in sys.modules if m.startswith("pausetoken.testing")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "hypothesis", None)
    with pytest.raises(ImportError) as refused:
        importlib.import_module("pausetoken.testing")
    assert install_hint("pausetoken[testing]") in str(refused.value)
