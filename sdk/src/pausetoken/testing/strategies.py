"""Hypothesis strategies for pausetoken values.

Examples:
    ```python
    from hypothesis import given
    from pausetoken.testing import strategies as pst


    @given(pst.payloads())
    def test_hash_is_stable(payload):
        assert hash_payload(payload) == hash_payload(payload)
    ```
"""

from __future__ import annotations

import string
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

from pausetoken._claims import CLAIMS_VERSION, Scope
from pausetoken._hashing import MAX_SAFE_INTEGER
from pausetoken._store_api import ClaimRequest

__all__ = [
    "claim_requests",
    "claims",
    "hashes",
    "instants",
    "interrupt_names",
    "json_objects",
    "jtis",
    "pause_keys",
    "payloads",
    "safe_integers",
    "scopes",
]

_BASE64URL = string.ascii_letters + string.digits + "-_"
# A range every engine stores exactly, to the microsecond (SQL DATETIME(6) and microsecond integers
# alike).
_EARLIEST = datetime(2001, 1, 1, tzinfo=UTC)
_LATEST = datetime(2099, 1, 1, tzinfo=UTC)


def jtis(*, min_size: int = 22, max_size: int = 64) -> st.SearchStrategy[str]:
    """Token ids of the ``JTI_PATTERN`` form: base64url, 22 to 64 characters."""
    return st.text(alphabet=_BASE64URL, min_size=min_size, max_size=max_size)


def pause_keys(*, min_size: int = 1, max_size: int = 64) -> st.SearchStrategy[str]:
    """Store row keys: 1 to 64 base64url characters.

    See [`pause_key`][pausetoken.plugins.ClaimRequest.pause_key].
    """
    return st.text(alphabet=_BASE64URL, min_size=min_size, max_size=max_size)


def hashes() -> st.SearchStrategy[str]:
    """sha256 hex digests (64 lower-case hex characters), as scope and request hashes."""
    return st.binary(min_size=32, max_size=32).map(bytes.hex)


def interrupt_names() -> st.SearchStrategy[str]:
    """Valid interrupt names: letters, digits and ``_.:-``, starting with a letter or digit."""
    return st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9_.:-]{0,40}\Z")


def instants(
    *,
    min_value: datetime = _EARLIEST,
    max_value: datetime = _LATEST,
    microseconds: bool = True,
) -> st.SearchStrategy[datetime]:
    """Aware UTC datetimes, with microseconds unless ``microseconds=False`` (whole seconds).

    Store times round-trip to the microsecond, so store tests should keep the default.
    """
    step = 1 if microseconds else 1_000_000
    low = _micros(min_value) // step
    high = _micros(max_value) // step
    return st.integers(low, high).map(lambda n: _EPOCH + timedelta(microseconds=n * step))


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _micros(value: datetime) -> int:
    return (value - _EPOCH) // timedelta(microseconds=1)


def scopes() -> st.SearchStrategy[Scope]:
    """Tenant scopes, with and without sub-tenant and namespace."""
    text = st.text(min_size=1, max_size=40)
    return st.builds(
        Scope,
        tenant_id=text,
        sub_tenant_id=st.none() | text,
        namespace=st.none() | text,
    )


def safe_integers() -> st.SearchStrategy[int]:
    """Integers that hash exactly: from ``-(2**53 - 1)`` to ``2**53 - 1``, as JSON numbers."""
    return st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)


def payloads(*, max_leaves: int = 25) -> st.SearchStrategy[Any]:
    """JSON values that hash exactly: no NaN or infinities, integers within 2**53 - 1.

    Strings and object keys are any Unicode text without lone surrogates.

    Args:
        max_leaves: The most scalars in one value.
    """
    scalars = (
        st.none()
        | st.booleans()
        | safe_integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=40)
    )
    return st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=5)
            | st.dictionaries(st.text(max_size=20), children, max_size=5)
        ),
        max_leaves=max_leaves,
    )


def json_objects(*, max_size: int = 8, max_leaves: int = 8) -> st.SearchStrategy[dict[str, Any]]:
    """JSON objects of `payloads()`: what a signer signs, or a payload with named fields.

    Args:
        max_size: The most members.
        max_leaves: The most scalars in each member's value.
    """
    return st.dictionaries(st.text(max_size=20), payloads(max_leaves=max_leaves), max_size=max_size)


@st.composite
def claim_requests(
    draw: st.DrawFn,
    *,
    pause_key: st.SearchStrategy[str] | None = None,
    now: st.SearchStrategy[datetime] | None = None,
) -> ClaimRequest:
    """Claim requests whose lease and expiry lie after ``now`` (aware UTC, microseconds).

    Args:
        draw: Provided by hypothesis.
        pause_key: Where the key comes from (default `pause_keys()`).
        now: Where the caller's ``now`` comes from (default `instants()`).
    """
    at = draw(now if now is not None else instants())
    lease = timedelta(microseconds=draw(st.integers(1, 3600 * 1_000_000)))
    ttl = lease + timedelta(microseconds=draw(st.integers(0, 7 * 24 * 3600 * 1_000_000)))
    return ClaimRequest(
        pause_key=draw(pause_key if pause_key is not None else pause_keys()),
        scope_hash=draw(hashes()),
        name=draw(interrupt_names()),
        response_hash=draw(hashes()),
        expires_at=at + ttl,
        lease_id=draw(jtis(max_size=32)),
        lease_until=at + lease,
        now=at,
    )


@st.composite
def claims(draw: st.DrawFn, *, now: int | None = None) -> dict[str, Any]:
    """Valid claim sets (JSON objects) as a signer signs and returns them.

    Args:
        draw: Provided by hypothesis.
        now: The issue time in seconds since the epoch (default: drawn).
    """
    iat = now if now is not None else int(draw(instants()).timestamp())
    ident = st.text(alphabet=_BASE64URL, min_size=1, max_size=40)
    body: dict[str, Any] = {
        "iss": draw(ident),
        "aud": draw(ident),
        "iat": iat,
        "exp": iat + draw(st.integers(1, 24 * 3600)),
        "jti": draw(jtis()),
        "name": draw(interrupt_names()),
        "interrupt_id": draw(ident),
        "run_id": draw(ident),
        "session_id": draw(st.just("") | ident),
        "thread_id": draw(ident),
        "checkpoint_id": draw(ident),
        "scope_hash": draw(hashes()),
        "request_hash": draw(hashes()),
        "ver": CLAIMS_VERSION,
    }
    if draw(st.booleans()):
        body["tool_call_id"] = draw(ident)
    if draw(st.booleans()):
        body["sub"] = draw(ident)
    return body
