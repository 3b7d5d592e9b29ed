"""Strict token verification: the signer's checks, then claims, time, issuer, audience, jti.

`verify_token()` runs the Security page's whole verification order for any
[`Signer`][pausetoken.Signer]: the signer checks everything up to the signature and the
payload's JSON shape; the claim checks here are the same for every signer.
"""

from __future__ import annotations

import hmac
import operator
from typing import TYPE_CHECKING, Any, Final

import attrs

from pausetoken._claims import CLAIMS_VERSION, HASH_PATTERN, JTI_PATTERN, Claims
from pausetoken._compact import b64decode_segment, parse_header, parse_payload, split_token
from pausetoken._policy import DEFAULT_MAX_TOKEN_BYTES, MAX_CLAIM_LENGTH, TokenPolicy
from pausetoken.exceptions import InvalidToken, TokenExpired

if TYPE_CHECKING:
    from collections.abc import Callable

    from pausetoken._signer_api import Signer

__all__ = ["decode_unverified", "verify_token"]

# Times are seconds since the epoch; anything beyond 2**53 is not an exact JSON number.
_MAX_TIME: Final = 2**53 - 1

# Claims that must be non-empty strings, in the order they are checked.
_STRINGS: Final = (
    "iss",
    "aud",
    "jti",
    "name",
    "interrupt_id",
    "run_id",
    "thread_id",
    "checkpoint_id",
)
_HASHES: Final = ("scope_hash", "request_hash")
_TIMES: Final = ("iat", "exp")
_REQUIRED: Final = frozenset((*_STRINGS, *_HASHES, *_TIMES, "session_id", "ver"))
# session_id may be empty (a run without a session); tool_call_id and sub are optional.
_OPTIONAL_STRINGS: Final = ("tool_call_id", "sub", "ns")
_KNOWN: Final = _REQUIRED | {*_OPTIONAL_STRINGS, "nbf"}
# The required claims in Claims' field order (``ver`` last): read from a claim set in one
# call and checked together (`_well_formed`).
_FIELDS: Final = tuple(field.name for field in attrs.fields(Claims) if field.name in _REQUIRED)
_READ_FIELDS: Final = operator.itemgetter(*_FIELDS)
# Claims, called with those fields by position (a type checker cannot count a tuple's items).
_CLAIMS_OF: Final[Callable[..., Claims]] = Claims
_FIELD_TYPES: Final = tuple(int if name in {*_TIMES, "ver"} else str for name in _FIELDS)
_JWS_SEGMENTS: Final = 3
_JWE_SEGMENTS: Final = 5


def _invalid(claim: str, why: str) -> InvalidToken:
    return InvalidToken(f"claim '{claim}' {why}", code=InvalidToken.TOKEN_CLAIMS_INVALID)


def _check_names(claims: dict[str, Any]) -> None:
    unknown = claims.keys() - _KNOWN
    if unknown:
        names = ", ".join(sorted(repr(name[:32]) for name in unknown)[:5])
        msg = f"the token carries unknown claims: {names}"
        raise InvalidToken(msg, code=InvalidToken.TOKEN_CLAIMS_INVALID)
    missing = _REQUIRED - claims.keys()
    if missing:
        raise _invalid(min(missing), "is missing")


def _well_formed(claims: dict[str, Any]) -> Claims | None:
    """The `Claims` of a claim set `_check_claims` accepts; ``None`` for any other.

    The same checks in fewer steps, for the claim sets that pass them (nearly all):
    ``None`` does not say what is wrong, `_check_claims` does.
    """
    try:
        values = _READ_FIELDS(claims)
    except KeyError:
        return None
    # Every required claim is present: anything more must be an optional claim.
    optional = ("tool_call_id" in claims) + ("sub" in claims) + ("ns" in claims) + ("nbf" in claims)
    if len(claims) != len(_FIELDS) + optional or tuple(map(type, values)) != _FIELD_TYPES:
        return None
    (
        iss,
        aud,
        iat,
        exp,
        jti,
        name,
        interrupt_id,
        run_id,
        session_id,
        thread_id,
        checkpoint_id,
        scope_hash,
        request_hash,
        ver,
    ) = values
    strings = (iss, aud, jti, name, interrupt_id, run_id, thread_id, checkpoint_id)
    if (
        min(map(len, strings)) == 0
        or max(map(len, strings)) > MAX_CLAIM_LENGTH
        or len(session_id) > MAX_CLAIM_LENGTH
        or HASH_PATTERN.match(scope_hash) is None
        or HASH_PATTERN.match(request_hash) is None
        or not 0 <= iat <= _MAX_TIME
        or not 0 <= exp <= _MAX_TIME
        or ver != CLAIMS_VERSION
    ):
        return None
    tool_call_id, sub, ns = claims.get("tool_call_id"), claims.get("sub"), claims.get("ns")
    if optional:
        for value in (tool_call_id, sub, ns):
            if value is not None and (
                type(value) is not str or not 0 < len(value) <= MAX_CLAIM_LENGTH
            ):
                return None
        nbf = claims.get("nbf")
        if nbf is not None and (type(nbf) is not int or not 0 <= nbf <= _MAX_TIME):
            return None
    # nbf is checked with the time; Claims carries what the service uses after verification.
    return _CLAIMS_OF(*values[:-1], tool_call_id, sub, ns, ver)


def _check_claims(claims: dict[str, Any]) -> None:
    _check_names(claims)
    for name in _STRINGS:
        value = claims[name]
        if type(value) is not str or not 0 < len(value) <= MAX_CLAIM_LENGTH:
            raise _invalid(name, f"must be a string of 1 to {MAX_CLAIM_LENGTH} characters")
    session = claims["session_id"]
    if type(session) is not str or len(session) > MAX_CLAIM_LENGTH:
        raise _invalid("session_id", f"must be a string of at most {MAX_CLAIM_LENGTH} characters")
    for name in _OPTIONAL_STRINGS:
        value = claims.get(name)
        if value is not None and (type(value) is not str or not 0 < len(value) <= MAX_CLAIM_LENGTH):
            raise _invalid(name, f"must be a string of 1 to {MAX_CLAIM_LENGTH} characters")
    for name in _HASHES:
        value = claims[name]
        if type(value) is not str or HASH_PATTERN.match(value) is None:
            raise _invalid(name, "must be a lowercase sha256 hex digest")
    _check_integers(claims)


def _check_integers(claims: dict[str, Any]) -> None:
    for name in (*_TIMES, "nbf"):
        value = claims.get(name)
        if value is None and name == "nbf":
            continue
        # type() rather than isinstance(): a JSON true is a bool, and bool is an int.
        if type(value) is not int or not 0 <= value <= _MAX_TIME:
            raise _invalid(name, "must be an integer number of seconds since the epoch")
    if type(claims["ver"]) is not int or claims["ver"] != CLAIMS_VERSION:
        raise _invalid("ver", f"must be {CLAIMS_VERSION}")


def _check_time(
    claims: dict[str, Any], policy: TokenPolicy, now: float, *, allow_expired: bool
) -> None:
    leeway = policy.leeway.total_seconds()
    iat, exp = claims["iat"], claims["exp"]
    if exp + leeway <= now and not allow_expired:
        raise TokenExpired
    if exp <= iat:
        raise _invalid("exp", "must be after 'iat'")
    if exp - iat > policy.max_lifetime.total_seconds():
        msg = "the token's lifetime ('exp' - 'iat') is longer than allowed"
        raise InvalidToken(msg, code=InvalidToken.TOKEN_LIFETIME_TOO_LONG)
    if iat > now + leeway:
        msg = "the token was issued in the future ('iat')"
        raise InvalidToken(msg, code=InvalidToken.TOKEN_NOT_YET_VALID)
    nbf = claims.get("nbf")
    if nbf is not None and nbf > now + leeway:
        msg = "the token is not valid yet ('nbf')"
        raise InvalidToken(msg, code=InvalidToken.TOKEN_NOT_YET_VALID)


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8", "surrogatepass"), b.encode("utf-8"))


def verify_token(
    token: object,
    *,
    signer: Signer,
    policy: TokenPolicy,
    now: float,
    allow_expired: bool = False,
) -> Claims:
    """Verify ``token`` completely and return its claims.

    Order: type and size, then ``signer.verify`` (shape, header, algorithm, header
    whitelist, ``typ``, ``kid``, retirement, signature, payload JSON), then required claims
    and their exact types, then time (``exp``, lifetime, ``iat``, ``nbf``, with leeway),
    then ``iss`` and ``aud``, then the ``jti`` format.

    Args:
        token: The compact token as received.
        signer: The signer that minted it.
        policy: Issuer, audience, leeway, lifetime and size limits.
        now: Seconds since the epoch.
        allow_expired: Accept a token whose ``exp`` passed (every other check still
            applies). For revoking: an expired token is still authentic.

    Returns:
        The verified [`Claims`][pausetoken.Claims].

    Raises:
        InvalidToken: with a stable ``code``: the signer's codes, ``token_claims_invalid``
            (the detail names the claim, never its value), ``token_lifetime_too_long``,
            ``token_not_yet_valid``, ``token_issuer_invalid``, ``token_audience_invalid``.
        TokenExpired: ``exp`` plus leeway is not after ``now`` (unless ``allow_expired``).
    """
    if not isinstance(token, str):
        msg = "a token must be a string"
        raise InvalidToken(msg, code=InvalidToken.TOKEN_MALFORMED)
    if len(token) > policy.max_token_bytes:
        msg = f"the token is longer than {policy.max_token_bytes} bytes"
        raise InvalidToken(msg, code=InvalidToken.TOKEN_TOO_LARGE)
    claims = signer.verify(token, now=now)
    if type(claims) is not dict:
        msg = "the signer returned no claim set"
        raise InvalidToken(msg, code=InvalidToken.TOKEN_PAYLOAD_INVALID)
    verified = _well_formed(claims)
    if verified is None:
        _check_claims(claims)  # raises, naming the claim that is wrong
        # Unreached while _well_formed accepts what _check_claims accepts (a test pins it).
        fields = {name: value for name, value in claims.items() if name != "nbf"}
        verified = Claims(**fields)  # pragma: no cover
    _check_time(claims, policy, now, allow_expired=allow_expired)
    if not _same(claims["iss"], policy.issuer):
        msg = "the token was issued by another issuer"
        raise InvalidToken(msg, code=InvalidToken.TOKEN_ISSUER_INVALID)
    if not _same(claims["aud"], policy.audience):
        msg = "the token is meant for another audience"
        raise InvalidToken(msg, code=InvalidToken.TOKEN_AUDIENCE_INVALID)
    if JTI_PATTERN.match(claims["jti"]) is None:
        raise _invalid("jti", "must be 22 to 64 base64url characters")
    return verified


def decode_unverified(
    token: str, *, max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Decode a token's header and claims WITHOUT checking its signature or its claims.

    For display only (``pausetoken inspect``): nothing returned here may be trusted. The
    parsing is as strict as verification (size, header length, canonical base64url, UTF-8
    JSON objects without duplicate members or NaN, bounded numbers and nesting), but no key
    is consulted and the header's members are not judged: an unsecured token (``alg:
    none``, empty signature) or one with a ``crit`` member is shown as it is, and
    `verify_token()` refuses it.

    Args:
        token: A signed (three segments) or sealed (five segments) compact token.
        max_token_bytes: Size limit checked first.

    Returns:
        ``(header, claims)``; ``claims`` is ``None`` for a sealed token, whose claims cannot
        be read without its key.

    Raises:
        InvalidToken: ``token_too_large``, ``token_malformed``, ``token_header_invalid``,
            ``token_header_forbidden`` (a header over the length limit that names a
            forbidden member) or ``token_payload_invalid``.
    """
    if isinstance(token, str) and token.count(".") == _JWE_SEGMENTS - 1:
        parts = split_token(token, max_token_bytes=max_token_bytes, segments=_JWE_SEGMENTS)
        return parse_header(parts[0]), None
    parts = split_token(token, max_token_bytes=max_token_bytes, segments=_JWS_SEGMENTS)
    header = parse_header(parts[0])
    return header, parse_payload(b64decode_segment(parts[1]))
