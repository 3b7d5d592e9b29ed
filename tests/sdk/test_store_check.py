"""``pausetoken store check`` / ``store purge`` and the smoke behind them."""

from __future__ import annotations

import json
import socket
import sqlite3
import warnings
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from broken_stores import ReadThenWriteClaim

from pausetoken import MemoryStore, MemoryStoreWarning
from pausetoken._cli import main
from pausetoken._cli.store_check import STEPS, StepResult, check_store, failure_cause
from pausetoken._registry import register_store
from pausetoken.exceptions import ConfigurationError, StoreMisconfigured, StoreUnavailable
from pausetoken.plugins import ClaimOutcome, ClaimResult


@pytest.fixture(autouse=True)
def _quiet_memory_store() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        yield


class DoubleWinner(MemoryStore):
    """A broken store: every claim wins."""

    async def claim(self, request: Any) -> ClaimResult:
        await super().claim(request)
        return ClaimResult(ClaimOutcome.CLAIMED)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> DoubleWinner:
        return cls()


def _refused() -> StoreUnavailable:
    """What a store raises when nothing listens: the driver's error on the cause chain."""
    try:
        try:
            raise ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 5433)")
        except ConnectionRefusedError as exc:
            msg = "token store schema failed at db://127.0.0.1:5433/x (ConnectionRefusedError)"
            raise StoreUnavailable(msg) from exc
    except StoreUnavailable as error:
        return error


def _missing_database() -> ConfigurationError:
    class InvalidCatalogNameError(Exception):
        """Stands in for asyncpg's."""

    try:
        try:
            raise InvalidCatalogNameError('database "shop" does not exist')
        except InvalidCatalogNameError as exc:
            msg = "cannot use the token store at db://app:***@db/shop: the database does not exist"
            raise ConfigurationError(msg, code="store_misconfigured") from exc
    except ConfigurationError as error:
        return error


class Refusing(MemoryStore):
    """Nothing listens where this store's URL points."""

    async def check(self) -> None:
        raise _refused()

    @classmethod
    def from_url(cls, url: str, **options: Any) -> Refusing:
        return cls()


class MissingDatabase(MemoryStore):
    """The database this store's URL names does not exist."""

    async def ensure_schema(self) -> bool:
        raise _missing_database()

    @classmethod
    def from_url(cls, url: str, **options: Any) -> MissingDatabase:
        return cls()


class WithSchema(MemoryStore):
    """A store with a schema, which says whether it created it."""

    def __init__(self, created: bool | None) -> None:
        super().__init__()
        self.created = created

    async def ensure_schema(self) -> bool | None:
        return self.created


# -- the smoke --------------------------------------------------------------------------------


async def test_every_step_passes_on_a_correct_store() -> None:
    results = await check_store(MemoryStore(), concurrency=10)
    assert [r.name for r in results] == list(STEPS)
    assert all(r.passed for r in results), results


async def test_a_store_that_lets_two_claims_win_stops_the_check_at_the_life_cycle() -> None:
    results = await check_store(DoubleWinner(), concurrency=10)
    assert [r.name for r in results] == ["schema", "check", "claim, commit and replays"]
    assert not results[-1].passed
    assert results[-1].detail == "claim, claim again: claimed, claimed"


async def test_a_read_then_write_claim_fails_the_concurrent_step() -> None:
    results = {r.name: r for r in await check_store(ReadThenWriteClaim(), concurrency=5)}
    assert not results["concurrent claims"].passed
    assert results["concurrent claims"].detail == "5 of 5 concurrent claims won"
    assert "purge" not in results


async def test_concurrent_claims_go_through_fresh_stores_when_it_can_open_them() -> None:
    main = MemoryStore()
    opened: list[MemoryStore] = []

    def opener() -> MemoryStore:
        # A fresh instance on the same rows, as open_store(url) gives for a database.
        store = MemoryStore()
        store._rows, store._lock = main._rows, main._lock
        opened.append(store)
        return store

    results = {r.name: r for r in await check_store(main, concurrency=6, opener=opener)}
    assert results["concurrent claims"].passed, results
    assert len(opened) == 6
    assert all(repr(store) == "MemoryStore(closed)" for store in opened)


async def test_a_failing_start_up_check_stops_the_check_and_names_the_cause() -> None:
    results = await check_store(Refusing(), concurrency=2)
    assert results == [
        StepResult("schema", passed=True, detail="none to create"),
        StepResult(
            "check",
            passed=False,
            detail="store_unavailable",
            cause="connection refused on 127.0.0.1:5433",
        ),
    ]
    assert isinstance(results[-1].error, StoreUnavailable)


@pytest.mark.parametrize(
    ("created", "detail"),
    [
        (True, "created"),
        (False, "already present"),
        (None, "ready (the store does not say whether it created it)"),
    ],
)
async def test_the_schema_step_says_whether_the_schema_was_created(
    created: bool | None, detail: str
) -> None:
    results = await check_store(WithSchema(created), concurrency=2)
    assert results[0] == StepResult("schema", passed=True, detail=detail)


async def test_a_store_without_a_schema_has_none_to_create() -> None:
    results = await check_store(MemoryStore(), concurrency=2)
    assert results[0].detail == "none to create"


async def test_the_checks_rows_outlive_the_purge_step() -> None:
    store = MemoryStore()
    await check_store(store, concurrency=4)
    assert await store.purge(datetime.now(UTC) + timedelta(minutes=11)) > 0


# -- the cause of a failure -------------------------------------------------------------------


def test_a_refused_connection_is_named_with_its_address() -> None:
    assert failure_cause(_refused()) == "connection refused on 127.0.0.1:5433"


def test_a_refused_connection_without_an_address_takes_it_from_the_url() -> None:
    error = StoreUnavailable("unavailable")
    error.__cause__ = ConnectionRefusedError(111, "Connection refused")
    cause = failure_cause(error, "postgresql+asyncpg://app:pw@10.0.0.7/tokens")
    assert cause == "connection refused on 10.0.0.7:5432"


def test_an_unknown_host_is_named() -> None:
    error = StoreUnavailable("unavailable")
    error.__cause__ = socket.gaierror(-2, "Name or service not known")
    cause = failure_cause(error, "mysql+asyncmy://app:pw@db.invalid/tokens")
    assert cause == "host name not found: db.invalid"


def test_the_innermost_driver_message_is_the_cause() -> None:
    assert failure_cause(_missing_database()) == 'database "shop" does not exist'


def test_an_unopenable_sqlite_file_says_so() -> None:
    error = ConfigurationError("cannot use the token store", code="store_misconfigured")
    error.__cause__ = sqlite3.OperationalError("unable to open database file")
    assert failure_cause(error) == "unable to open database file"


def test_a_mysql_error_number_is_left_out() -> None:
    class OperationalError(Exception):
        """Stands in for asyncmy's: (number, message)."""

    error = ConfigurationError("cannot use the token store", code="store_misconfigured")
    error.__cause__ = OperationalError(1049, "Unknown database 'shop'")
    assert failure_cause(error) == "Unknown database 'shop'"


def test_a_cause_never_shows_a_password_or_a_second_line() -> None:
    error = StoreUnavailable("unavailable")
    error.__cause__ = RuntimeError(
        "could not connect to postgresql://app:hunter2@db/x with hunter2\nline two"
    )
    cause = failure_cause(error, "postgresql://app:hunter2@db/x")
    assert "hunter2" not in cause
    assert "line two" not in cause
    assert cause == "could not connect to postgresql://app:***@db/x with ***"


def test_without_a_chain_the_cause_is_the_errors_own_detail() -> None:
    url = "sqlite+aiosqlite:////nowhere/tokens.db"
    detail = f"{url}: unable to open database file: the directory /nowhere does not exist"
    error = ConfigurationError(detail, code="store_misconfigured")
    cause = failure_cause(error, url)
    assert cause == "unable to open database file: the directory /nowhere does not exist"


# -- the command ------------------------------------------------------------------------------


def test_store_check_command_exits_0_when_all_pass(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["store", "check", "memory://"]) == 0
    out = capsys.readouterr().out
    assert "concurrent claims" in out
    assert "none to create" in out
    assert "FAIL" not in out


def test_store_check_command_exits_1_on_a_broken_store(
    capsys: pytest.CaptureFixture[str],
) -> None:
    register_store("doublewinner", DoubleWinner)
    assert main(["store", "check", "doublewinner://"]) == 1
    captured = capsys.readouterr()
    assert "FAIL" in captured.out
    assert "not run" in captured.out
    assert (
        'pausetoken store check: FAIL stopped at step "claim, commit and replays": '
        "claim, claim again: claimed, claimed"
    ) in captured.err


def test_store_check_stops_at_a_refused_connection_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    register_store("refusing", Refusing)
    assert main(["store", "check", "refusing://db:5433/x"]) == 1
    captured = capsys.readouterr()
    assert captured.out.count("not run") == len(STEPS) - 2
    assert captured.out.count("store_unavailable") == 0  # one row says why, not six codes
    assert "connection refused on 127.0.0.1:5433" in captured.out
    assert (
        "pausetoken store check: error [store_unavailable] stopped at step "
        '"check": connection refused on 127.0.0.1:5433'
    ) in captured.err
    assert "hint: check that the database server is running" in captured.err
    assert "Traceback" not in captured.err


def test_store_check_of_a_missing_database_is_a_configuration_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    register_store("nodb", MissingDatabase)
    assert main(["store", "check", "nodb://app:hunter2@db/shop"]) == 2
    captured = capsys.readouterr()
    assert (
        "pausetoken store check: error [store_misconfigured] stopped at step "
        '"schema": database "shop" does not exist'
    ) in captured.err
    assert f"hint: {StoreMisconfigured.actions['store_misconfigured']}" in captured.err
    assert "hunter2" not in captured.out + captured.err


@pytest.mark.parametrize(
    "argv",
    [
        ["store", "check", "refusing://db/x", "--debug"],
        ["store", "check", "--debug", "refusing://db/x"],
        ["store", "--debug", "check", "refusing://db/x"],
        ["--debug", "store", "check", "refusing://db/x"],
    ],
    ids=["after-the-url", "after-check", "after-store", "before-store"],
)
def test_debug_anywhere_shows_the_failed_steps_traceback_and_cause(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    register_store("refusing", Refusing)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert "ConnectionRefusedError" in err
    assert "connection refused on 127.0.0.1:5433" in err


def test_store_check_json_reports_every_step(capsys: pytest.CaptureFixture[str]) -> None:
    register_store("refusing", Refusing)
    assert main(["store", "check", "refusing://app:hunter2@db/x", "--json"]) == 1
    out = capsys.readouterr().out
    report = json.loads(out)
    assert report["url"] == "refusing://app:***@db/x"
    assert report["passed"] is False
    assert [step["result"] for step in report["steps"]] == ["pass", "fail"] + ["not run"] * (
        len(STEPS) - 2
    )
    assert report["steps"][1] == {
        "name": "check",
        "result": "fail",
        "detail": None,
        "code": "store_unavailable",
        "cause": "connection refused on 127.0.0.1:5433",
    }
    assert "hunter2" not in out


def test_store_check_json_of_a_good_store_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["store", "check", "memory://", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is True
    assert [step["name"] for step in report["steps"]] == list(STEPS)


def test_store_check_never_prints_the_password(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["store", "check", "nosuch://app:hunter2@db/x"]) == 2
    captured = capsys.readouterr()
    assert "hunter2" not in captured.out + captured.err


@pytest.mark.parametrize("action", ["check", "purge"])
def test_a_postgres_scheme_suggests_postgresql(
    action: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["store", action, "postgres://app:hunter2@db/tokens"]) == 2
    err = capsys.readouterr().err
    assert (
        f"pausetoken store {action}: error [unknown_backend] URL: postgres:// names no store; "
        "did you mean postgresql+asyncpg://app:***@db/tokens"
    ) in err
    assert "hunter2" not in err


def test_store_purge_prints_the_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["store", "purge", "memory://", "--before", "1h"]) == 0
    assert capsys.readouterr().out.strip() == "0"


@pytest.mark.parametrize(
    ("when", "code"),
    [("2999-01-01T00:00:00+00:00", "cli_usage"), ("-1h", "settings_invalid")],
)
def test_store_purge_refuses_a_cutoff_in_the_future(
    when: str, code: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["store", "purge", "memory://", f"--before={when}"]) == 2
    assert f"[{code}]" in capsys.readouterr().err
