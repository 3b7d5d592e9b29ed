"""``SQLAlchemyStore.consume``: claim and commit in one statement, on every engine.

Every test runs on SQLite, PostgreSQL and MySQL/MariaDB assigning left to right, and on
MariaDB with ``SIMULTANEOUS_ASSIGNMENT`` (``mariadb_simultaneous``, skipped on MySQL,
which lacks the mode): the MySQL statements must mean the same under both orders. Times
carry odd microseconds so that a store rounding them anywhere is caught.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import attrs
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy_support import ANSWER, LEASE, SCOPE, new_pause_key

from pausetoken.plugins import (
    ClaimOutcome,
    ClaimRequest,
    ClaimResult,
    PauseRecord,
    PauseState,
    SupportsConsume,
)
from pausetoken_sqlalchemy import SQLAlchemyStore

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    Factory = Callable[[], Awaitable[SQLAlchemyStore]]
    Setup = Callable[[SQLAlchemyStore, str, datetime], Awaitable[None]]

ENGINES = ("sqlite", "postgresql", "mysql")
SIMULTANEOUS = "mariadb_simultaneous"
OTHER_SCOPE = hashlib.sha256(b"other scope").hexdigest()
OTHER_ANSWER = hashlib.sha256(b"other answer").hexdigest()
RIVALS = 50


# -- engines: the usual three, and MariaDB assigning simultaneously ------------------------


@pytest.fixture(params=[*ENGINES, SIMULTANEOUS])
def engine_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def url(engine_name: str, url_for: Callable[[str], str]) -> str:
    return url_for("mysql" if engine_name == SIMULTANEOUS else engine_name)


async def _sql_mode(url: str, *, simultaneous: bool) -> str:
    """The server's ``sql_mode`` with ``SIMULTANEOUS_ASSIGNMENT`` set or cleared."""
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            version, mode = (await conn.execute(text("SELECT VERSION(), @@GLOBAL.sql_mode"))).one()
    finally:
        await engine.dispose()
    if simultaneous and "mariadb" not in str(version).lower():
        pytest.skip("SIMULTANEOUS_ASSIGNMENT is a MariaDB mode")
    flags = [flag for flag in str(mode).split(",") if flag and flag != "SIMULTANEOUS_ASSIGNMENT"]
    if simultaneous:
        flags.append("SIMULTANEOUS_ASSIGNMENT")
    return ",".join(flags)


@pytest.fixture
async def store_options(engine_name: str, url: str, table_name: str) -> dict[str, Any]:
    """Options of every store a test opens: its table, and on MySQL the assignment order."""
    options: dict[str, Any] = {"table_name": table_name}
    if engine_name in {"mysql", SIMULTANEOUS}:
        mode = await _sql_mode(url, simultaneous=engine_name == SIMULTANEOUS)
        # asyncmy's own sql_mode argument sends the value unquoted.
        options["connect_args"] = {"init_command": f"SET SESSION sql_mode = '{mode}'"}
    return options


@pytest.fixture
async def store_factory(url: str, store_options: dict[str, Any]) -> AsyncIterator[Factory]:
    """``await factory()``: one more store on the test's table (each with its own engine)."""
    opened: list[SQLAlchemyStore] = []

    async def open_one() -> SQLAlchemyStore:
        store = SQLAlchemyStore.from_url(url, **store_options)
        opened.append(store)
        await store.ensure_schema()
        return store

    yield open_one
    for store in opened:
        await store.aclose()


@pytest.fixture
async def store(engine_name: str, store_factory: Factory) -> SQLAlchemyStore:
    store = await store_factory()
    if engine_name in {"mysql", SIMULTANEOUS}:
        async with store.engine.connect() as conn:
            mode = (await conn.execute(text("SELECT @@SESSION.sql_mode"))).scalar_one()
        assert ("SIMULTANEOUS_ASSIGNMENT" in mode) is (engine_name == SIMULTANEOUS)
    return store


# -- requests ------------------------------------------------------------------------------


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=345_679)


def _request(
    key: str,
    now: datetime,
    *,
    lease_id: str = "lease-new",
    scope_hash: str = SCOPE,
    name: str = "approval",
    answer: str = ANSWER,
    expires_at: datetime | None = None,
) -> ClaimRequest:
    return ClaimRequest(
        pause_key=key,
        scope_hash=scope_hash,
        name=name,
        response_hash=answer,
        expires_at=expires_at or now + timedelta(hours=1, microseconds=7),
        lease_id=lease_id,
        lease_until=now + LEASE + timedelta(microseconds=3),
        now=now,
    )


def _old(key: str, now: datetime, **changes: Any) -> ClaimRequest:
    """An earlier caller's claim, with other audit fields and an odd expiry of its own."""
    return _request(
        key,
        now,
        lease_id=changes.pop("lease_id", "lease-old"),
        scope_hash=OTHER_SCOPE,
        name="earlier",
        expires_at=now + timedelta(hours=2, microseconds=11),
        **changes,
    )


async def _status(store: SQLAlchemyStore, key: str) -> PauseRecord:
    record = await store.status(key)
    assert record is not None
    return record


def test_the_store_offers_consume() -> None:
    assert issubclass(SQLAlchemyStore, SupportsConsume)


# -- each outcome, with the record it leaves -----------------------------------------------


async def test_consuming_an_absent_pause_redeems_it(store: SQLAlchemyStore) -> None:
    now, key = _now(), new_pause_key()
    request = _request(key, now)
    assert await store.consume(request) == ClaimResult(ClaimOutcome.CLAIMED)
    assert await _status(store, key) == PauseRecord(
        pause_key=key,
        state=PauseState.REDEEMED,
        scope_hash=SCOPE,
        name="approval",
        expires_at=request.expires_at,
        response_hash=ANSWER,
        lease_id="lease-new",
        lease_until=request.lease_until,
    )
    # A redemption like a commit's: the lease can neither renew nor release it.
    assert await store.renew(key, "lease-new", request.lease_until + LEASE) is False
    assert await store.release(key, "lease-new") is False
    assert await store.commit(key, "lease-new", now) is True


async def test_consuming_a_lapsed_claim_takes_it_over_and_voids_the_old_lease(
    store: SQLAlchemyStore,
) -> None:
    start, key = _now(), new_pause_key()
    old = _old(key, start)
    assert (await store.claim(old)).outcome is ClaimOutcome.CLAIMED
    now = old.lease_until  # lease_until <= now: ended
    request = _request(key, now, answer=OTHER_ANSWER, expires_at=start + timedelta(minutes=1))
    assert await store.consume(request) == ClaimResult(ClaimOutcome.CLAIMED)
    taken = PauseRecord(
        pause_key=key,
        state=PauseState.REDEEMED,
        scope_hash=SCOPE,
        name="approval",
        expires_at=old.expires_at,  # the later of the two
        response_hash=OTHER_ANSWER,
        lease_id="lease-new",
        lease_until=request.lease_until,
    )
    assert await _status(store, key) == taken
    assert await store.commit(key, "lease-old", now + timedelta(hours=9)) is False
    assert await store.renew(key, "lease-old", now + timedelta(hours=9)) is False
    assert await store.release(key, "lease-old") is False
    assert await _status(store, key) == taken


async def test_consuming_a_live_claim_is_in_progress_and_only_raises_the_expiry(
    store: SQLAlchemyStore,
) -> None:
    start, key = _now(), new_pause_key()
    old = _old(key, start)
    await store.claim(old)
    claimed = await _status(store, key)
    now = old.lease_until - timedelta(microseconds=1)  # one microsecond before it ends
    later = _request(key, now, expires_at=old.expires_at + timedelta(microseconds=2))
    earlier = _request(key, now, expires_at=start + timedelta(minutes=1))
    in_progress = ClaimResult(ClaimOutcome.IN_PROGRESS, lease_until=old.lease_until)
    assert await store.consume(earlier) == in_progress
    assert await _status(store, key) == claimed
    assert await store.consume(later) == in_progress
    assert await _status(store, key) == attrs.evolve(claimed, expires_at=later.expires_at)
    assert claimed == PauseRecord(
        pause_key=key,
        state=PauseState.CLAIMED,
        scope_hash=OTHER_SCOPE,
        name="earlier",
        expires_at=old.expires_at,
        response_hash=ANSWER,
        lease_id="lease-old",
        lease_until=old.lease_until,
    )
    assert await store.commit(key, "lease-old", now) is True  # the holder still holds it


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        (ANSWER, ClaimOutcome.REDEEMED_SAME),
        (OTHER_ANSWER, ClaimOutcome.REDEEMED_OTHER),
        (ANSWER.upper(), ClaimOutcome.REDEEMED_OTHER),  # hashes compare byte by byte
    ],
    ids=["same", "other", "other_case"],
)
async def test_consuming_a_pause_another_lease_redeemed_answers_by_response_hash(
    store: SQLAlchemyStore, answer: str, outcome: ClaimOutcome
) -> None:
    start, key = _now(), new_pause_key()
    old = _old(key, start)
    await store.claim(old)
    assert await store.commit(key, "lease-old", old.expires_at) is True
    redeemed = await _status(store, key)
    now = start + LEASE * 3  # long after the old lease's end: it has no say here
    assert await store.consume(_request(key, now, answer=answer)) == ClaimResult(outcome)
    assert await _status(store, key) == redeemed
    later = _request(key, now, answer=answer, expires_at=old.expires_at + timedelta(hours=1))
    assert await store.consume(later) == ClaimResult(outcome)
    assert await _status(store, key) == attrs.evolve(redeemed, expires_at=later.expires_at)
    assert redeemed == PauseRecord(
        pause_key=key,
        state=PauseState.REDEEMED,
        scope_hash=OTHER_SCOPE,
        name="earlier",
        expires_at=old.expires_at,
        response_hash=ANSWER,
        lease_id="lease-old",
        lease_until=old.lease_until,
    )


async def test_consuming_a_revoked_pause_is_revoked_and_only_raises_the_expiry(
    store: SQLAlchemyStore,
) -> None:
    now, key = _now(), new_pause_key()
    expires_at = now + timedelta(hours=2, microseconds=5)
    revoked = await store.revoke(key, OTHER_SCOPE, "earlier", expires_at, now)
    assert revoked == PauseRecord(
        pause_key=key,
        state=PauseState.REVOKED,
        scope_hash=OTHER_SCOPE,
        name="earlier",
        expires_at=expires_at,
    )
    assert await store.consume(_request(key, now)) == ClaimResult(ClaimOutcome.REVOKED)
    assert await _status(store, key) == revoked
    later = _request(key, now, expires_at=expires_at + timedelta(microseconds=2))
    assert await store.consume(later) == ClaimResult(ClaimOutcome.REVOKED)
    assert await _status(store, key) == attrs.evolve(revoked, expires_at=later.expires_at)


# -- a retried consume ---------------------------------------------------------------------


async def test_a_retried_consume_by_the_same_lease_is_confirmed_and_raises_the_expiry(
    store: SQLAlchemyStore,
) -> None:
    now, key = _now(), new_pause_key()
    first = _request(key, now)
    assert await store.consume(first) == ClaimResult(ClaimOutcome.CLAIMED)
    landed = await _status(store, key)
    # A retry later, with an earlier expiry and another answer: confirmed, nothing changes.
    retry = _request(
        key, now + LEASE * 5, answer=OTHER_ANSWER, expires_at=now + timedelta(minutes=1)
    )
    assert await store.consume(retry) == ClaimResult(ClaimOutcome.CLAIMED)
    assert await _status(store, key) == landed
    longer = attrs.evolve(first, expires_at=first.expires_at + timedelta(microseconds=2))
    assert await store.consume(longer) == ClaimResult(ClaimOutcome.CLAIMED)
    assert await _status(store, key) == attrs.evolve(landed, expires_at=longer.expires_at)
    # Lease ids compare byte by byte: another case is another lease.
    other = await store.consume(_request(key, now, lease_id="LEASE-NEW"))
    assert other == ClaimResult(ClaimOutcome.REDEEMED_SAME)
    assert await _status(store, key) == attrs.evolve(landed, expires_at=longer.expires_at)


async def test_a_claim_after_a_consume_finds_it_redeemed(store: SQLAlchemyStore) -> None:
    now, key = _now(), new_pause_key()
    await store.consume(_request(key, now))
    same = await store.claim(_request(key, now, lease_id="lease-other"))
    other = await store.claim(_request(key, now, lease_id="lease-other", answer=OTHER_ANSWER))
    assert (same.outcome, other.outcome) == (
        ClaimOutcome.REDEEMED_SAME,
        ClaimOutcome.REDEEMED_OTHER,
    )


# -- consume is claim followed by commit ---------------------------------------------------


async def _absent(store: SQLAlchemyStore, key: str, now: datetime) -> None:
    del store, key, now


async def _lapsed(store: SQLAlchemyStore, key: str, now: datetime) -> None:
    await store.claim(_old(key, now - LEASE - timedelta(microseconds=3)))  # ends at now


async def _lapsed_ours(store: SQLAlchemyStore, key: str, now: datetime) -> None:
    await store.claim(_old(key, now - LEASE * 2, lease_id="lease-new"))


async def _live(store: SQLAlchemyStore, key: str, now: datetime) -> None:
    await store.claim(_old(key, now - LEASE))  # ends 3 µs after now


async def _redeemed(store: SQLAlchemyStore, key: str, now: datetime) -> None:
    old = _old(key, now - LEASE * 2)
    await store.claim(old)
    await store.commit(key, "lease-old", old.expires_at)


async def _redeemed_other(store: SQLAlchemyStore, key: str, now: datetime) -> None:
    old = _old(key, now - LEASE * 2, answer=OTHER_ANSWER)
    await store.claim(old)
    await store.commit(key, "lease-old", old.expires_at)


async def _redeemed_ours(store: SQLAlchemyStore, key: str, now: datetime) -> None:
    old = _old(key, now - LEASE * 2, lease_id="lease-new", answer=OTHER_ANSWER)
    await store.claim(old)
    await store.commit(key, "lease-new", old.expires_at)


async def _revoked(store: SQLAlchemyStore, key: str, now: datetime) -> None:
    await store.revoke(key, OTHER_SCOPE, "earlier", now + timedelta(hours=2, microseconds=5), now)


SETUPS: dict[str, Setup] = {
    "absent": _absent,
    "lapsed": _lapsed,
    "lapsed_ours": _lapsed_ours,
    "live": _live,
    "redeemed": _redeemed,
    "redeemed_other": _redeemed_other,
    "redeemed_ours": _redeemed_ours,
    "revoked": _revoked,
}


@pytest.mark.parametrize("expiry", ["earlier", "later"])
@pytest.mark.parametrize("setup", list(SETUPS))
async def test_consume_leaves_what_claim_then_commit_leaves(
    store: SQLAlchemyStore, setup: str, expiry: str
) -> None:
    now, consumed, committed = _now(), new_pause_key(), new_pause_key()
    for key in (consumed, committed):
        await SETUPS[setup](store, key, now)
    offset = timedelta(minutes=1) if expiry == "earlier" else timedelta(hours=3)
    expires_at = now + offset + timedelta(microseconds=9)

    result = await store.consume(_request(consumed, now, expires_at=expires_at))
    claim = await store.claim(_request(committed, now, expires_at=expires_at))
    if await store.commit(committed, "lease-new", expires_at):
        claim = ClaimResult(ClaimOutcome.CLAIMED)

    assert result == claim
    expected = attrs.evolve(await _status(store, committed), pause_key=consumed)
    assert await _status(store, consumed) == expected


# -- atomic against concurrent claims and consumes -----------------------------------------


async def _race(
    stores: list[SQLAlchemyStore], key: str, now: datetime
) -> list[tuple[str, ClaimRequest, ClaimResult]]:
    """``RIVALS`` callers (half consume, half claim) on ``key``, spread over ``stores``."""
    calls: list[tuple[str, ClaimRequest]] = [
        ("consume" if index % 2 else "claim", _request(key, now, lease_id=f"rival-{index}"))
        for index in range(RIVALS)
    ]
    random.shuffle(calls)

    async def one(index: int, kind: str, request: ClaimRequest) -> ClaimResult:
        store = stores[index % len(stores)]
        return await (store.consume if kind == "consume" else store.claim)(request)

    results = await asyncio.gather(*(one(i, *call) for i, call in enumerate(calls)))
    return [(kind, request, result) for (kind, request), result in zip(calls, results, strict=True)]


@pytest.mark.parametrize("setup", ["absent", "lapsed"])
async def test_racing_consumes_and_claims_have_exactly_one_winner(
    store: SQLAlchemyStore, store_factory: Factory, setup: str
) -> None:
    stores = [store, *[await store_factory() for _ in range(3)]]
    for _ in range(3):
        now, key = _now(), new_pause_key()
        await SETUPS[setup](store, key, now)
        outcomes = await _race(stores, key, now)
        winners = [(k, r) for k, r, result in outcomes if result.outcome is ClaimOutcome.CLAIMED]
        assert len(winners) == 1, winners
        [(kind, request)] = winners
        record = await _status(store, key)
        assert record.lease_id == request.lease_id
        if kind == "consume":
            assert record.state is PauseState.REDEEMED
            lost = ClaimResult(ClaimOutcome.REDEEMED_SAME)
        else:
            assert record.state is PauseState.CLAIMED
            lost = ClaimResult(ClaimOutcome.IN_PROGRESS, lease_until=request.lease_until)
        assert [result for _, r, result in outcomes if r is not request] == [lost] * (RIVALS - 1)


async def _server(store: SQLAlchemyStore) -> str:
    async with store.engine.connect() as conn:
        return str((await conn.execute(text("SELECT VERSION()"))).scalar_one()).lower()


async def test_consumes_sent_together_answer_and_write_what_each_would_alone(
    store: SQLAlchemyStore, engine_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every setup twice: one pause consumed alone, one consumed together with the others
    # (and with fresh pauses), each at its own ``now`` (a lapsed claim ends exactly then).
    # Statements of many consumes on PostgreSQL, SQLite and MariaDB; one each on MySQL.
    batches = store._statements.consumes_many  # type: ignore[attr-defined]
    assert batches is (engine_name != "mysql" or "mariadb" in await _server(store))
    batch_sizes: list[int] = []
    rows = store._statements._consume_rows  # type: ignore[attr-defined]

    async def counting(conn: Any, batch: Any) -> Any:
        batch_sizes.append(len(batch))
        return await rows(conn, batch)

    monkeypatch.setattr(store._statements, "_consume_rows", counting)
    base = _now()
    cases = []
    for i, setup in enumerate(SETUPS.values()):
        now = base + timedelta(microseconds=13 * i)
        alone, together = new_pause_key(), new_pause_key()
        for key in (alone, together):
            await setup(store, key, now)
        cases.append((now, alone, together))
    expected = [await store.consume(_request(alone, now)) for now, alone, _ in cases]
    fresh = [new_pause_key() for _ in range(8)]
    together = [_request(key, now) for now, _, key in cases] + [
        _request(key, base, lease_id=f"lease-{i}") for i, key in enumerate(fresh)
    ]
    results = await asyncio.gather(*map(store.consume, together))
    assert results[: len(cases)] == expected
    assert results[len(cases) :] == [ClaimResult(ClaimOutcome.CLAIMED)] * len(fresh)
    for _, alone, key in cases:
        assert attrs.evolve(await _status(store, key), pause_key=alone) == await _status(
            store, alone
        )
    assert (max(batch_sizes, default=0) > 1) is batches


# -- MySQL and MariaDB ---------------------------------------------------------------------


@pytest.mark.parametrize("engine_name", ["mysql", SIMULTANEOUS])
async def test_consumes_make_the_driver_log_no_warnings(
    store: SQLAlchemyStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="asyncmy")
    now, key, lapsed, revoked = _now(), new_pause_key(), new_pause_key(), new_pause_key()
    await _lapsed(store, lapsed, now)
    await store.revoke(revoked, SCOPE, "approval", now + timedelta(hours=1), now)
    await store.claim(_old(key, now))
    caplog.clear()
    outcomes = [(await store.consume(_request(key, now))).outcome]
    await store.commit(key, "lease-old", now)
    outcomes.append((await store.consume(_request(key, now))).outcome)
    outcomes.append((await store.consume(_request(key, now, answer=OTHER_ANSWER))).outcome)
    outcomes.append((await store.consume(_request(lapsed, now))).outcome)
    outcomes.append((await store.consume(_request(lapsed, now))).outcome)
    outcomes.append((await store.consume(_request(revoked, now))).outcome)
    outcomes.append((await store.consume(_request(new_pause_key(), now))).outcome)
    assert outcomes == [
        ClaimOutcome.IN_PROGRESS,
        ClaimOutcome.REDEEMED_SAME,
        ClaimOutcome.REDEEMED_OTHER,
        ClaimOutcome.CLAIMED,
        ClaimOutcome.CLAIMED,
        ClaimOutcome.REVOKED,
        ClaimOutcome.CLAIMED,
    ]
    assert [r for r in caplog.records if r.name.startswith("asyncmy")] == []
