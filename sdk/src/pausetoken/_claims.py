"""Value types: who a pause belongs to, what a token says, what minting and redeeming return."""

from __future__ import annotations

import functools
import hashlib
import re
import secrets
from datetime import UTC as _UTC
from datetime import datetime, timedelta
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

import attrs

from pausetoken._compact import b64url_encode
from pausetoken._hashing import fingerprint, hash_payload

if TYPE_CHECKING:
    from pausetoken._lease import Lease

__all__ = [
    "CLAIMS_VERSION",
    "HASH_PATTERN",
    "JTI_PATTERN",
    "TOKEN_TYPE",
    "Claims",
    "InterruptEvent",
    "Redemption",
    "Scope",
    "hash_scope",
]

#: The JOSE ``typ`` header every pause token carries (RFC 8725 §3.11 explicit typing).
TOKEN_TYPE: Final = "pause+jwt"  # noqa: S105 - a media type, not a secret
#: Version of the claim set; bumped when the meaning of a claim changes.
CLAIMS_VERSION: Final = 1

#: A ``jti``: base64url without padding, 22 to 64 characters (at least 128 random bits).
JTI_PATTERN: Final = re.compile(r"^[A-Za-z0-9_-]{22,64}\Z")
#: A sha256 hex digest as the ``scope_hash`` and ``request_hash`` claims carry it.
HASH_PATTERN: Final = re.compile(r"^[0-9a-f]{64}\Z")

P = TypeVar("P")
R = TypeVar("R")

# A JSON string as json.dumps(text, ensure_ascii=False) writes it.
_json_string: Final = encode_basestring


def _redacted_repr(obj: object, names: tuple[str, ...], *, hidden: str) -> str:
    """``Type(name=value, ...)`` over ``names``, showing ``hidden`` only as a fingerprint."""

    def show(name: str) -> str:
        value = getattr(obj, name)
        if name == hidden:
            return f"<{fingerprint(value)}>"
        return value.isoformat() if isinstance(value, datetime) else repr(value)

    return f"{type(obj).__name__}({', '.join(f'{name}={show(name)}' for name in names)})"


def new_jti() -> str:
    """A fresh token id: 128 random bits, base64url (22 characters)."""
    return secrets.token_urlsafe(16)


def _nonempty(_instance: object, attribute: attrs.Attribute[Any], value: str) -> None:
    if not value:
        msg = f"{attribute.name} must be a non-empty string"
        raise ValueError(msg)


@attrs.frozen
class Scope:
    """Who a pause belongs to: a tenant, optionally a sub-tenant and a namespace.

    A token minted for one scope is refused in any other (unless its interrupt kind opts in
    to cross-scope answers). Scopes are compared by the sha256 of their canonical JSON.

    Examples:
        >>> Scope("acme", namespace="billing")
        Scope(tenant_id='acme', sub_tenant_id=None, namespace='billing')
    """

    tenant_id: str = attrs.field(validator=[attrs.validators.instance_of(str), _nonempty])
    sub_tenant_id: str | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(str))
    )
    namespace: str | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(str))
    )


def hash_scope(scope: Scope) -> str:
    """Hash a scope: sha256 hex of the RFC 8785 encoding of its fields (all of them)."""
    return _scope_hash(scope.tenant_id, scope.sub_tenant_id, scope.namespace)


# A worker serves few tenants and hashes the caller's scope on every redemption: the last
# few thousand hashes are kept.
@functools.lru_cache(maxsize=4096)
def _scope_hash(tenant_id: str, sub_tenant_id: str | None, namespace: str | None) -> str:
    return hash_payload(
        {"tenant_id": tenant_id, "sub_tenant_id": sub_tenant_id, "namespace": namespace}
    )


@attrs.frozen(repr=False)
class Claims:
    """The verified body of a pause token.

    Registered claims (``iss``, ``aud``, ``iat``, ``exp``, ``jti``) follow RFC 7519; the
    others bind the token to one pause. Times are integer seconds since the epoch.
    """

    iss: str
    aud: str
    iat: int
    exp: int
    jti: str
    name: str
    interrupt_id: str
    run_id: str
    session_id: str
    thread_id: str
    checkpoint_id: str
    scope_hash: str
    request_hash: str
    tool_call_id: str | None = None
    sub: str | None = None
    ns: str | None = None
    ver: int = CLAIMS_VERSION

    @property
    def issued_at(self) -> datetime:
        """``iat`` as an aware UTC datetime."""
        return datetime.fromtimestamp(self.iat, tz=_UTC)

    @property
    def expires_at(self) -> datetime:
        """``exp`` as an aware UTC datetime."""
        return datetime.fromtimestamp(self.exp, tz=_UTC)

    @property
    def pause_key(self) -> str:
        """The store key of the pause this token answers.

        It names the pause in its runtime: the thread, checkpoint and interrupt, within the
        issuer, audience and runtime namespace (``ns``, the graph a LangGraph pause belongs
        to), which keep applications sharing one store apart.
        It never includes the scope: every token minted for one pause, under any scope,
        has the same key, so the pause is answered once whichever token carries the answer.
        It has the form of a ``jti`` (43 base64url characters of a sha256).
        """
        # json.dumps(["pausetoken.pause.v2", iss, aud, ns, thread_id, checkpoint_id,
        # interrupt_id], ensure_ascii=False), written out: json.dumps builds an encoder on
        # every call, which costs more than encoding these few strings.
        ns = "null" if self.ns is None else _json_string(self.ns)
        encoded = (
            f'["pausetoken.pause.v2", {_json_string(self.iss)}, {_json_string(self.aud)}, '
            f"{ns}, {_json_string(self.thread_id)}, {_json_string(self.checkpoint_id)}, "
            f"{_json_string(self.interrupt_id)}]"
        )
        digest = hashlib.sha256(encoded.encode("utf-8", "surrogatepass")).digest()
        return b64url_encode(digest)

    def to_dict(self) -> dict[str, Any]:
        """The JSON claim set, without absent optional claims."""
        return {
            a.name: getattr(self, a.name)
            for a in attrs.fields(Claims)
            if getattr(self, a.name) is not None
        }

    def __repr__(self) -> str:
        shown = ("name", "jti", "thread_id", "checkpoint_id", "interrupt_id", "exp")
        return _redacted_repr(self, shown, hidden="jti")


@attrs.frozen(repr=False)
class InterruptEvent(Generic[P]):
    """What minting returns: the token for one pause and what to show the person.

    Minted with the registered [`Interrupt`][pausetoken.Interrupt] (not its name), the event
    is typed by its payload type: ``InterruptEvent[Refund]``. Its ``repr`` shows a
    fingerprint of the token, never the token or the payload.
    """

    name: str
    token: str
    payload: P
    expires_at: datetime
    interrupt_id: str
    run_id: str
    session_id: str
    thread_id: str
    checkpoint_id: str

    def __repr__(self) -> str:
        shown = ("name", "token", "interrupt_id", "thread_id", "checkpoint_id", "expires_at")
        return _redacted_repr(self, shown, hidden="token")


@attrs.frozen(repr=False)
class Redemption(Generic[P, R]):
    """What redeeming returns: the verified claims and the typed payload and response.

    Redeemed with ``expect=REFUND``, it is typed by the interrupt's payload and response
    types (``Redemption[Refund, Decision]``); without it, ``Redemption[Any, Any]``.

    Attributes:
        claims: The verified claims of the token.
        payload: The payload that was shown, structured into the registered type; ``None``
            for a replay that arrives after the run moved on (the checkpoint no longer
            holds it).
        response: The answer, structured into the registered response type.
        replayed: ``True`` when this is an idempotent retry of an answer already committed.
        time_to_answer: Time from minting (``iat``) to this redemption.
        lease: The claim held while the body of ``redeem()`` runs (renewed in the
            background; see [`Lease`][pausetoken.Lease]); ``None`` for a replay, which holds
            no claim and must not act again.
    """

    claims: Claims
    payload: P | None
    response: R
    replayed: bool
    time_to_answer: timedelta
    lease: Lease | None = attrs.field(default=None, eq=False)

    def __repr__(self) -> str:
        return (
            f"Redemption(name={self.claims.name!r}, jti=<{fingerprint(self.claims.jti)}>, "
            f"replayed={self.replayed}, time_to_answer={self.time_to_answer})"
        )
