"""Store API 2 on every engine: expiry only raised, live claims survive revoke, idempotent
commits, renewals, takeovers, and a dropped table that is never created again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Column, MetaData, Table, insert, inspect, text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy_support import LEASE, SCOPE, claim_request, new_pause_key

from pausetoken.exceptions import ConfigurationError, StoreUnavailable
from pausetoken.plugins import ClaimOutcome, ClaimRequest, PauseState
from pausetoken_sqlalchemy import SCHEMA_VERSION, SQLAlchemyStore, make_schema_table, make_table

OTHER_SCOPE = "b" * 64
OTHER_ANSWER = "c" * 64


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


# -- expiry is only ever raised, so purging never reopens a pause --------------------------


async def test_purge_never_reopens_a_revoked_pause_whose_expiry_was_raised(
    store: SQLAlchemyStore,
) -> None:
    now, key = _now(), new_pause_key()
    short, longer = now + timedelta(hours=1), now + timedelta(hours=5)
    longest = now + timedelta(hours=9)
    assert (await store.revoke(key, SCOPE, "approval", short, now)).expires_at == short
    # A claim answered REVOKED raises the expiry; a revoke with an earlier one never lowers it.
    result = await store.claim(claim_request(key, now=now, expires_at=longer))
    assert result.outcome is ClaimOutcome.REVOKED
    assert (await store.revoke(key, SCOPE, "approval", short, now)).expires_at == longer
    assert (await store.revoke(key, SCOPE, "approval", longest, now)).expires_at == longest
    assert await store.purge(now + timedelta(hours=7)) == 0
    again = await store.claim(claim_request(key, now=now))
    assert again.outcome is ClaimOutcome.REVOKED


async def test_purge_never_reopens_a_pause_whose_commit_raised_the_expiry(
    store: SQLAlchemyStore,
) -> None:
    now, key = _now(), new_pause_key()
    short, longer = now + timedelta(hours=1), now + timedelta(hours=5)
    await store.claim(claim_request(key, now=now, lease_id="lease-a", expires_at=short))
    assert await store.commit(key, "lease-a", longer) is True
    record = await store.status(key)
    assert record is not None
    assert (record.state, record.expires_at) == (PauseState.REDEEMED, longer)
    assert await store.purge(now + timedelta(hours=3)) == 0
    replay = await store.claim(claim_request(key, now=now, expires_at=short))
    assert replay.outcome is ClaimOutcome.REDEEMED_SAME
    record = await store.status(key)
    assert record is not None
    assert record.expires_at == longer  # a replay with an earlier expiry never lowers it


async def test_a_claim_that_finds_a_live_lease_still_raises_the_expiry(
    store: SQLAlchemyStore,
) -> None:
    now, key = _now(), new_pause_key()
    short, longer = now + timedelta(hours=1), now + timedelta(hours=5)
    first = claim_request(key, now=now, lease_id="lease-a", expires_at=short)
    await store.claim(first)
    result = await store.claim(claim_request(key, now=now, expires_at=longer))
    assert result.outcome is ClaimOutcome.IN_PROGRESS
    assert result.lease_until == first.lease_until
    record = await store.status(key)
    assert record is not None
    assert (record.lease_id, record.expires_at) == ("lease-a", longer)
    assert await store.purge(now + timedelta(hours=3)) == 0


# -- revoke leaves a live claim alone ------------------------------------------------------


async def test_revoking_a_live_claim_leaves_it_claimed_and_the_holder_can_commit(
    store: SQLAlchemyStore,
) -> None:
    now, key = _now(), new_pause_key()
    request = claim_request(key, now=now, lease_id="lease-a")
    await store.claim(request)
    later = now + timedelta(hours=3)
    record = await store.revoke(key, OTHER_SCOPE, "other", later, now + LEASE / 2)
    assert record.state is PauseState.CLAIMED
    assert (record.scope_hash, record.name) == (SCOPE, "approval")
    assert (record.lease_id, record.lease_until) == ("lease-a", request.lease_until)
    assert record.expires_at == later
    assert await store.commit(key, "lease-a", now) is True
    after = await store.status(key)
    assert after is not None
    assert (after.state, after.expires_at) == (PauseState.REDEEMED, later)


async def test_revoking_a_lapsed_claim_revokes_it_and_voids_the_lease(
    store: SQLAlchemyStore,
) -> None:
    now, key = _now(), new_pause_key()
    await store.claim(claim_request(key, now=now, lease_id="lease-a"))
    record = await store.revoke(key, OTHER_SCOPE, "other", now + timedelta(hours=2), now + LEASE)
    assert record.state is PauseState.REVOKED
    assert (record.scope_hash, record.name) == (SCOPE, "approval")  # the row keeps its own
    assert (record.response_hash, record.lease_id, record.lease_until) == (None, None, None)
    assert await store.status(key) == record
    assert await store.commit(key, "lease-a", now) is False
    assert await store.renew(key, "lease-a", now + LEASE * 2) is False
    assert await store.release(key, "lease-a") is False
    claim = await store.claim(claim_request(key, now=now + LEASE * 3))
    assert claim.outcome is ClaimOutcome.REVOKED


async def test_revoking_an_absent_pause_records_the_callers_scope_and_name(
    store: SQLAlchemyStore,
) -> None:
    now, key = _now(), new_pause_key()
    record = await store.revoke(key, OTHER_SCOPE, "other", now + timedelta(hours=1), now)
    assert (record.pause_key, record.state) == (key, PauseState.REVOKED)
    assert (record.scope_hash, record.name) == (OTHER_SCOPE, "other")
    assert (record.response_hash, record.lease_id, record.lease_until) == (None, None, None)


# -- commit is idempotent ------------------------------------------------------------------


async def test_a_second_commit_by_the_same_lease_is_confirmed(store: SQLAlchemyStore) -> None:
    now, key = _now(), new_pause_key()
    await store.claim(claim_request(key, now=now, lease_id="lease-a"))
    assert await store.commit(key, "lease-a", now + timedelta(hours=1)) is True
    assert await store.commit(key, "lease-a", now + timedelta(hours=1)) is True
    assert await store.commit(key, "lease-b", now + timedelta(hours=1)) is False
    assert await store.commit(key, "LEASE-A", now + timedelta(hours=1)) is False
    record = await store.status(key)
    assert record is not None
    assert (record.state, record.lease_id) == (PauseState.REDEEMED, "lease-a")
    assert await store.commit(new_pause_key(), "lease-a", now) is False


async def test_the_holder_commits_after_its_lease_ran_out_unless_it_was_taken_over(
    store: SQLAlchemyStore,
) -> None:
    now, kept, taken = _now(), new_pause_key(), new_pause_key()
    await store.claim(claim_request(kept, now=now, lease_id="lease-a"))
    assert await store.commit(kept, "lease-a", now) is True
    await store.claim(claim_request(taken, now=now, lease_id="lease-a"))
    await store.claim(claim_request(taken, now=now + LEASE, lease_id="lease-b"))
    assert await store.commit(taken, "lease-a", now) is False
    assert await store.commit(taken, "lease-b", now) is True


# -- renew ---------------------------------------------------------------------------------


async def test_only_the_holder_renews_and_a_renewal_never_shortens_the_lease(
    store: SQLAlchemyStore,
) -> None:
    now, key = _now(), new_pause_key()
    request = claim_request(key, now=now, lease_id="lease-a")
    await store.claim(request)
    longer = request.lease_until + timedelta(minutes=5)
    assert await store.renew(key, "lease-a", longer) is True
    assert await store.renew(key, "lease-a", now) is True  # still holds it; keeps the later end
    assert await store.renew(key, "lease-b", longer + LEASE) is False
    assert await store.renew(key, "LEASE-A", longer + LEASE) is False
    record = await store.status(key)
    assert record is not None
    assert (record.lease_id, record.lease_until) == ("lease-a", longer)
    # The renewed lease holds off a claim that would have taken the old one over.
    result = await store.claim(claim_request(key, now=request.lease_until))
    assert (result.outcome, result.lease_until) == (ClaimOutcome.IN_PROGRESS, longer)
    await store.commit(key, "lease-a", now)
    assert await store.renew(key, "lease-a", longer + LEASE) is False
    assert await store.renew(new_pause_key(), "lease-a", longer) is False


async def test_a_reused_lease_id_on_a_live_claim_is_in_progress(store: SQLAlchemyStore) -> None:
    now, key = _now(), new_pause_key()
    first = claim_request(key, now=now, lease_id="lease-a")
    assert (await store.claim(first)).outcome is ClaimOutcome.CLAIMED
    again = await store.claim(claim_request(key, now=now, lease_id="lease-a"))
    assert (again.outcome, again.lease_until) == (ClaimOutcome.IN_PROGRESS, first.lease_until)


# -- takeover ------------------------------------------------------------------------------


async def test_a_takeover_overwrites_the_holders_fields_and_keeps_the_later_expiry(
    store: SQLAlchemyStore,
) -> None:
    now, key = _now(), new_pause_key()
    longer = now + timedelta(hours=5)
    await store.claim(claim_request(key, now=now, lease_id="lease-a", expires_at=longer))
    later = now + LEASE
    takeover = ClaimRequest(
        pause_key=key,
        scope_hash=OTHER_SCOPE,
        name="other",
        response_hash=OTHER_ANSWER,
        expires_at=now + timedelta(hours=1),
        lease_id="lease-b",
        lease_until=later + LEASE,
        now=later,
    )
    assert (await store.claim(takeover)).outcome is ClaimOutcome.CLAIMED
    record = await store.status(key)
    assert record is not None
    assert (record.scope_hash, record.name, record.response_hash) == (
        OTHER_SCOPE,
        "other",
        OTHER_ANSWER,
    )
    assert (record.lease_id, record.lease_until) == ("lease-b", later + LEASE)
    assert record.expires_at == longer


# -- a dropped table -----------------------------------------------------------------------


async def _drop_table_only(url: str, name: str) -> None:
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            quoted = engine.dialect.identifier_preparer.quote(name)
            await conn.execute(text(f"DROP TABLE {quoted}"))
    finally:
        await engine.dispose()


async def _table_exists(url: str, name: str) -> bool:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            return bool(await conn.run_sync(lambda c: inspect(c).has_table(name)))
    finally:
        await engine.dispose()


async def test_a_dropped_table_is_refused_and_never_created_again(
    url: str, table_name: str
) -> None:
    now, key = _now(), new_pause_key()
    async with SQLAlchemyStore.from_url(url, table_name=table_name) as running:
        await running.check()
        await running.claim(claim_request(key, now=now, lease_id="lease-a"))
        assert await running.commit(key, "lease-a", now + timedelta(hours=1)) is True
        await _drop_table_only(url, table_name)

        # The running store fails closed with a typed error and does not re-create it.
        with pytest.raises(StoreUnavailable) as failed:
            await running.claim(claim_request(key, now=now))
        assert failed.value.code == "store_table_missing"
        with pytest.raises(StoreUnavailable):
            await running.status(key)
        assert not await _table_exists(url, table_name)

    async with SQLAlchemyStore.from_url(url, table_name=table_name) as fresh:
        with pytest.raises(ConfigurationError) as refused:
            await fresh.check()
        assert refused.value.code == "store_table_missing"
        assert "dropped" in refused.value.detail
        assert "accepted again" in refused.value.detail
        assert "\n" not in refused.value.detail
        with pytest.raises(ConfigurationError, match="dropped"):
            await fresh.ensure_schema()
        with pytest.raises(ConfigurationError, match="dropped"):
            await fresh.claim(claim_request(key, now=now))
    assert not await _table_exists(url, table_name)


async def test_a_fresh_database_gets_both_tables_and_check_passes(
    url: str, table_name: str
) -> None:
    async with SQLAlchemyStore.from_url(url, table_name=table_name) as store:
        await store.check()
        await store.check()  # once per start-up, but harmless twice
        assert await store.status(new_pause_key()) is None
    assert await _table_exists(url, table_name)


# -- a table from before the key column was renamed ----------------------------------------


def _legacy_metadata(name: str, *, rename: dict[str, str], drop: tuple[str, ...] = ()) -> MetaData:
    """The store's tables with ``name`` laid out as another build made it."""
    current = make_table(name, MetaData())
    legacy = MetaData()
    Table(
        name,
        legacy,
        *(
            Column(
                rename.get(column.name, column.name),
                column.type,
                primary_key=column.primary_key,
                nullable=column.nullable,
            )
            for column in current.columns
            if column.name not in drop
        ),
    )
    make_schema_table(legacy)
    return legacy


async def _create_with_marker(url: str, name: str, tables: MetaData) -> None:
    marker = make_schema_table(tables)
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(tables.create_all)
            await conn.execute(insert(marker).values(table_name=name, version=SCHEMA_VERSION))
    finally:
        await engine.dispose()


async def test_a_table_with_the_old_key_column_is_refused_naming_both_columns(
    url: str, table_name: str
) -> None:
    # Pre-release builds kept the pause key in a column named jti, under version 1 too.
    legacy = _legacy_metadata(table_name, rename={"pause_key": "jti"})
    await _create_with_marker(url, table_name, legacy)
    async with SQLAlchemyStore.from_url(url, table_name=table_name) as store:
        with pytest.raises(ConfigurationError) as refused:
            await store.check()
        assert refused.value.code == "store_schema_mismatch"
        assert "RENAME COLUMN jti TO pause_key" in refused.value.detail
        assert "\n" not in refused.value.detail
        with pytest.raises(ConfigurationError, match="pause_key"):
            await store.claim(claim_request(new_pause_key(), now=_now()))


async def test_a_table_lacking_a_column_is_refused_naming_it(url: str, table_name: str) -> None:
    await _create_with_marker(
        url, table_name, _legacy_metadata(table_name, rename={}, drop=("lease_id",))
    )
    async with SQLAlchemyStore.from_url(url, table_name=table_name) as store:
        with pytest.raises(ConfigurationError) as refused:
            await store.ensure_schema()
    assert refused.value.code == "store_schema_mismatch"
    assert "lacks the column(s) lease_id" in refused.value.detail
