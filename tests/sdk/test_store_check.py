"""``pausetoken store check`` / ``store purge`` and the smoke behind them."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from broken_stores import ReadThenWriteClaim

from pausetoken import ClaimOutcome, ClaimResult, MemoryStore, MemoryStoreWarning
from pausetoken._cli import main
from pausetoken._registry import register_store
from pausetoken._store_check import StepResult, check_store
from pausetoken.exceptions import StoreUnavailable


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


async def test_every_step_passes_on_a_correct_store() -> None:
    results = await check_store(MemoryStore(), concurrency=10)
    assert [r.name for r in results] == [
        "check",
        "claim, commit and replays",
        "release",
        "revoke",
        "concurrent claims",
        "purge",
    ]
    assert all(r.passed for r in results), results


async def test_a_store_that_lets_two_claims_win_fails_the_check() -> None:
    results = {r.name: r for r in await check_store(DoubleWinner(), concurrency=10)}
    assert not results["claim, commit and replays"].passed
    assert not results["concurrent claims"].passed
    assert results["concurrent claims"].detail == "10 of 10 concurrent claims won"


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


async def test_a_read_then_write_claim_fails_the_concurrent_step() -> None:
    results = {r.name: r for r in await check_store(ReadThenWriteClaim(), concurrency=5)}
    assert not results["concurrent claims"].passed
    assert results["concurrent claims"].detail == "5 of 5 concurrent claims won"


async def test_a_store_that_fails_its_start_up_check_is_reported() -> None:
    class Unreachable(MemoryStore):
        async def check(self) -> None:
            msg = "no route to the database"
            raise StoreUnavailable(msg)

    results = {r.name: r for r in await check_store(Unreachable(), concurrency=2)}
    assert results["check"] == StepResult("check", passed=False, detail="store_unavailable")


async def test_the_checks_rows_outlive_the_purge_step() -> None:
    store = MemoryStore()
    await check_store(store, concurrency=4)
    assert await store.purge(datetime.now(UTC) + timedelta(minutes=11)) > 0


def test_store_check_command_exits_0_when_all_pass(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["store", "check", "memory://"]) == 0
    out = capsys.readouterr().out
    assert "concurrent claims" in out
    assert "FAIL" not in out


def test_store_check_command_exits_1_on_a_broken_store(
    capsys: pytest.CaptureFixture[str],
) -> None:
    register_store("doublewinner", DoubleWinner)
    assert main(["store", "check", "doublewinner://"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_store_check_never_prints_the_password(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["store", "check", "nosuch://app:hunter2@db/x"]) == 2
    captured = capsys.readouterr()
    assert "hunter2" not in captured.out + captured.err


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
