"""The built-in signers: signed (JWS) and sealed (JWE) compact tokens, verified strictly.

joserfc provides the cryptography (its JWS algorithm objects and its AES-GCM content
encryption); everything around it is done here, in the order DESIGN.md gives, cheapest and
unauthenticated checks first: size, header length, shape, header JSON, ``alg`` allow-list,
header whitelist, ``typ``, ``kid`` (syntax, lookup, retirement, algorithm), signature or
decryption, payload JSON. joserfc's own ``jwt.decode`` accepts duplicate members, any
``kid`` with a single key, extra headers and a missing ``typ``; none of that passes here.

Header members are checked by name before their values are looked at, so a token that
names ``alg: none``, no ``alg``, a wrapped key or a ``crit``/``jwk``/``x5c`` member gets the
code of that attack whatever the member's JSON type, and no key is consulted for it.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import secrets
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final, NoReturn

from joserfc.errors import JoseError
from joserfc.jwa import EdDSAAlgorithm, ESAlgorithm, GCMEncModel, HMACAlgorithm, JWSAlgModel
from joserfc.jwk import OctKey

from pausetoken._claims import TOKEN_TYPE
from pausetoken._keys import KID_PATTERN, KeyRing
from pausetoken._signer_api import SIGNERS_API_VERSION
from pausetoken.exceptions import ConfigurationError, InvalidToken, UnsupportedPayload

if TYPE_CHECKING:
    from typing import Self

    from pausetoken._keys import JoseKey

__all__ = [
    "DEFAULT_MAX_TOKEN_BYTES",
    "MAX_HEADER_CHARS",
    "JoseSigner",
    "SealedSigner",
    "b64decode_segment",
    "parse_header",
    "parse_payload",
    "split_token",
]

#: Tokens longer than this are refused before anything is parsed.
DEFAULT_MAX_TOKEN_BYTES: Final = 4096
#: Deepest JSON nesting accepted in a token payload.
MAX_PAYLOAD_DEPTH: Final = 16
#: Longest protected header segment, checked before it is decoded. The longest header a ring
#: produces (a sealed token's, with a 64-character kid) is 160 characters.
MAX_HEADER_CHARS: Final = 256
#: Longest number accepted in a header (ours carry none).
MAX_HEADER_NUMBER_CHARS: Final = 20
# How much of an oversized header is decoded to look for a forbidden member's name: a fixed
# amount, so refusing a header costs the same whatever its length.
_HEADER_SCAN_CHARS: Final = 512
_MIN_TOKEN_BYTES: Final = 256
_MAX_TOKEN_BYTES: Final = 65536
_HEADER_CACHE_SIZE: Final = 64

_SEG = r"[A-Za-z0-9_-]+"
_OPT = r"[A-Za-z0-9_-]*"
# The signature may be empty and the encrypted key may be present here: both are refused
# after the header, so that an unsecured ('none') or key-wrapping token is reported as the
# algorithm it names.
_JWS_SHAPE: Final = re.compile(rf"{_SEG}\.{_SEG}\.{_OPT}")
_JWE_SHAPE: Final = re.compile(rf"{_SEG}\.{_OPT}\.{_SEG}\.{_SEG}\.{_SEG}")
_BASE64URL: Final = re.compile(_OPT)
# Members that carry a key, a certificate or processing rules (RFC 7515 §4.1, RFC 7797).
_FORBIDDEN_NAME: Final = re.compile(rb'"(crit|b64|zip|jku|jwk|x5u|x5c)"[ \t\r\n]*:')
# Registered header names (RFC 7515, 7516, 7518, 7797, 8555, 9449) may be named in errors;
# any other name came from whoever made the token and is counted, not echoed.
_REGISTERED_NAMES: Final = frozenset(
    {
        "crit", "b64", "zip", "jku", "jwk", "x5u", "x5c", "x5t", "x5t#S256", "cty", "enc",
        "epk", "apu", "apv", "iv", "tag", "p2s", "p2c", "url", "nonce", "ppt", "svt",
    }
)  # fmt: skip
_URLSAFE_TO_STANDARD: Final = bytes.maketrans(b"-_", b"+/")
_B64_VALUES: Final = {
    c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
}

_JWS_ALGORITHMS: Final[dict[str, JWSAlgModel]] = {
    "HS256": HMACAlgorithm(256),
    "EdDSA": EdDSAAlgorithm(),
    "ES256": ESAlgorithm("ES256", "P-256", 256),
}
_JWS_HEADER_MEMBERS: Final = frozenset({"alg", "typ", "kid"})
_JWE_HEADER_MEMBERS: Final = frozenset({"alg", "enc", "typ", "kid"})
_SEALED_ALGORITHMS: Final = frozenset({"dir"})
_A256GCM: Final = GCMEncModel(256)
_GCM_IV_BYTES: Final = 12
_GCM_TAG_BYTES: Final = 16
# Order of the P-256 group: ES256 signatures are normalised to s <= n/2 and high-s
# signatures refused, so a signed token has exactly one valid encoding.
_P256_ORDER: Final = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551


def _fail(code: str, msg: str) -> NoReturn:
    raise InvalidToken(msg, code=code)


# -- strict parsing (shared with the unverified decoder) --------------------------------------


def _what_is_wrong_with(token: str, segments: int) -> str:
    """Why a token does not have the compact shape, without quoting it.

    Only computed for a refusal. Tokens are often pasted from an HTTP header, a JSON string
    or a wrapped terminal line; saying which is what lets the person fix it.
    """
    if token[:7].lower() == "bearer ":
        return (
            "the token starts with 'Bearer ', the HTTP authorization scheme, which is not "
            "part of the token: pass only what follows it"
        )
    if token[:1] in {'"', "'"} or token[-1:] in {'"', "'"}:
        return "the token is wrapped in quotes, which are not part of it: remove them"
    if token.rstrip("\r\n") != token and "\n" not in token.rstrip("\r\n"):
        return "the token ends with a line break, which is not part of it: remove it"
    for index, char in enumerate(token):
        if char.isspace():
            kind = "a line break" if char in "\r\n" else "whitespace"
            return (
                f"the token has {kind} at character {index + 1} of {len(token)}: it was "
                "probably wrapped or split when it was copied"
            )
    return f"a token is {segments} segments of base64url without padding, joined by '.'"


def split_token(token: object, *, max_token_bytes: int, segments: int = 3) -> list[str]:
    """Check size, header length and shape and split a compact token into its segments.

    Every segment must be canonical base64url: the URL-safe alphabet only, no padding, no
    whitespace, and no unused trailing bits, so decoding and re-encoding gives the same text
    and a token string cannot be altered while it still verifies. A signed token's
    signature and a sealed token's encrypted key may be empty here; the signers refuse
    both after checking the header.

    Args:
        token: The token as received.
        max_token_bytes: Size limit checked before anything else.
        segments: 3 for signed (JWS) tokens, 5 for sealed (JWE) tokens.

    Returns:
        The segments (strings).

    Raises:
        InvalidToken: ``token_too_large``, ``token_malformed``, or for a header segment
            longer than `MAX_HEADER_CHARS` ``token_header_forbidden`` (it names a
            forbidden member) or ``token_header_invalid``.
    """
    if not isinstance(token, str):
        _fail("token_malformed", "a token must be a string")
    if len(token) > max_token_bytes:
        _fail("token_too_large", f"the token is longer than {max_token_bytes} bytes")
    # Before the shape check, whose cost grows with the token: an oversized header is
    # refused at a fixed cost.
    if len(token) > MAX_HEADER_CHARS and token.find(".", 0, MAX_HEADER_CHARS + 1) == -1:
        _refuse_oversized_header(token)
    shape = _JWS_SHAPE if segments == 3 else _JWE_SHAPE  # noqa: PLR2004 - JWS has 3 segments
    if shape.fullmatch(token) is None:
        _fail("token_malformed", _what_is_wrong_with(token, segments))
    parts = token.split(".")
    for part in parts:
        _check_canonical(part)
    return parts


def _refuse_oversized_header(token: str) -> NoReturn:
    if "." not in token:
        _fail("token_malformed", "a token is segments of base64url without padding, joined by '.'")
    head = token[:_HEADER_SCAN_CHARS].split(".", 1)[0]
    head = head[: len(head) - len(head) % 4]
    if _BASE64URL.fullmatch(head) is None:
        _fail("token_malformed", "the token is not canonical base64url")
    found = _FORBIDDEN_NAME.search(b64decode_segment(head))
    if found is not None:
        name = found[1].decode("ascii")
        _fail("token_header_forbidden", f"the token header has a forbidden member: '{name}'")
    _fail("token_header_invalid", f"the token header is longer than {MAX_HEADER_CHARS} characters")


def _check_canonical(segment: str) -> None:
    rest = len(segment) % 4
    if rest == 0:
        return
    # A final group of 2 or 3 characters carries 4 or 2 unused bits; they must be zero.
    if rest == 1 or _B64_VALUES[segment[-1]] & (0x0F if rest == 2 else 0x03):  # noqa: PLR2004
        _fail("token_malformed", "the token is not canonical base64url")


def b64decode_segment(segment: str) -> bytes:
    """Decode one base64url segment already checked by `split_token()`.

    Raises:
        InvalidToken: ``token_malformed``.
    """
    try:
        data = segment.encode("ascii").translate(_URLSAFE_TO_STANDARD)
        return binascii.a2b_base64(data + b"=" * (-len(segment) % 4), strict_mode=True)
    except (binascii.Error, ValueError) as exc:
        msg = "the token is not valid base64url"
        raise InvalidToken(msg, code="token_malformed") from exc


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class _DuplicateMember(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _DuplicateMember
    return out


def _no_constants(_name: str) -> NoReturn:
    raise ValueError


def _short_int(text: str) -> int:
    if len(text) > MAX_HEADER_NUMBER_CHARS:
        raise ValueError
    return int(text)


def _short_float(text: str) -> float:
    if len(text) > MAX_HEADER_NUMBER_CHARS:
        raise ValueError
    return float(text)


# Built once: json.loads with hooks would build a new decoder on every call.
_DECODER: Final = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
# Headers are parsed before anything is authenticated: numbers are bounded too.
_HEADER_DECODER: Final = json.JSONDecoder(
    object_pairs_hook=_no_duplicates,
    parse_constant=_no_constants,
    parse_int=_short_int,
    parse_float=_short_float,
)


def _parse_json_text(
    text: str, code: str, what: str, decoder: json.JSONDecoder = _DECODER
) -> dict[str, Any]:
    try:
        value = decoder.decode(text)
    except _DuplicateMember as exc:
        msg = f"the token {what} has duplicate members"
        raise InvalidToken(msg, code=code) from exc
    except (ValueError, RecursionError) as exc:
        msg = f"the token {what} is not UTF-8 JSON with finite numbers"
        raise InvalidToken(msg, code=code) from exc
    if type(value) is not dict:
        _fail(code, f"the token {what} is not a JSON object")
    return value


def _utf8(raw: bytes, code: str, what: str) -> str:
    # Decode first: json.loads on bytes would also accept UTF-16 and UTF-32.
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"the token {what} is not UTF-8"
        raise InvalidToken(msg, code=code) from exc


def _too_deep(value: Any, budget: int) -> bool:
    if budget <= 0:
        return True
    if type(value) is dict:
        return any(type(v) in {dict, list} and _too_deep(v, budget - 1) for v in value.values())
    if type(value) is list:
        return any(type(v) in {dict, list} and _too_deep(v, budget - 1) for v in value)
    return False


def parse_header(segment: str) -> dict[str, Any]:
    """Decode a protected header: a UTF-8 JSON object without duplicate members or long numbers.

    The segment is at most `MAX_HEADER_CHARS` long (checked before decoding) and its
    numbers at most `MAX_HEADER_NUMBER_CHARS` characters, so parsing an
    unauthenticated header has a small, fixed bound. The members' values are not checked
    here: the signers check each member by name.

    Raises:
        InvalidToken: ``token_header_invalid``, ``token_header_forbidden`` (an oversized
            header naming a forbidden member) or ``token_malformed``.
    """
    if len(segment) > MAX_HEADER_CHARS:
        _refuse_oversized_header(segment + ".")
    code = "token_header_invalid"
    text = _utf8(b64decode_segment(segment), code, "header")
    return _parse_json_text(text, code, "header", _HEADER_DECODER)


def parse_payload(raw: bytes) -> dict[str, Any]:
    """Decode a payload: a UTF-8 JSON object, no duplicates, no NaN, bounded nesting.

    Raises:
        InvalidToken: ``token_payload_invalid``.
    """
    code = "token_payload_invalid"
    text = _utf8(raw, code, "payload")
    payload = _parse_json_text(text, code, "payload")
    # Nesting cannot exceed the number of opening brackets; walk only when it could.
    if text.count("{") + text.count("[") > MAX_PAYLOAD_DEPTH and _too_deep(
        payload, MAX_PAYLOAD_DEPTH
    ):
        _fail("token_payload_invalid", f"the token payload is nested over {MAX_PAYLOAD_DEPTH}")
    return payload


def _check_header(
    header: dict[str, Any],
    *,
    allowed: frozenset[str],
    members: frozenset[str],
    enc: str | None = None,
) -> tuple[str, str]:
    """Check a parsed header member by member, by name first: ``(alg, kid)`` if it passes."""
    alg = header.get("alg")
    if type(alg) is not str or alg not in allowed:
        why = "has no 'alg'" if alg is None else "names an algorithm that is not allowed"
        _fail("token_algorithm_not_allowed", f"the token {why}")
    if enc is not None and header.get("enc") != enc:
        _fail("token_algorithm_not_allowed", "the token's content encryption is not allowed")
    extra = header.keys() - members
    if extra:
        _fail("token_header_forbidden", f"the token header has forbidden members: {_names(extra)}")
    if header.get("typ") != TOKEN_TYPE:
        _fail("token_type_invalid", f"the token 'typ' must be {TOKEN_TYPE!r}")
    kid = header.get("kid")
    if type(kid) is not str or not KID_PATTERN.match(kid):
        _fail("token_header_invalid", "the token 'kid' is missing or malformed")
    return alg, kid


def _names(extra: Collection[str]) -> str:
    known = sorted(name for name in extra if name in _REGISTERED_NAMES)
    others = len(extra) - len(known)
    shown = [repr(name) for name in known[:5]]
    if others:
        shown.append(f"{others} other{'s' if others > 1 else ''}")
    return ", ".join(shown)


def _check_size_option(max_token_bytes: object) -> int:
    if (
        type(max_token_bytes) is not int
        or not _MIN_TOKEN_BYTES <= max_token_bytes <= _MAX_TOKEN_BYTES
    ):
        msg = f"max_token_bytes must be an int from {_MIN_TOKEN_BYTES} to {_MAX_TOKEN_BYTES}"
        raise ConfigurationError(msg, code="max_token_bytes_invalid")
    return max_token_bytes


def _encode_claims(claims: object) -> bytes:
    if not isinstance(claims, Mapping):
        msg = "claims must be a mapping"
        raise UnsupportedPayload(msg, code="claims_not_json")
    try:
        return json.dumps(
            dict(claims), separators=(",", ":"), ensure_ascii=False, allow_nan=False
        ).encode("utf-8")
    except (TypeError, ValueError, RecursionError) as exc:
        msg = "the claims cannot be encoded as JSON"
        raise UnsupportedPayload(msg, code="claims_not_json") from exc


def _check_length(token: str, limit: int) -> str:
    if len(token) > limit:
        msg = f"the token would be {len(token)} bytes, over the limit of {limit}"
        raise UnsupportedPayload(msg, code="token_too_large")
    return token


class _HeaderCache:
    """Remembers header segments that passed the header checks (they repeat per key)."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[str, tuple[str, str]] = {}

    def get(self, segment: str) -> tuple[str, str] | None:
        return self._entries.get(segment)

    def put(self, segment: str, value: tuple[str, str]) -> None:
        if len(self._entries) >= _HEADER_CACHE_SIZE:
            self._entries.clear()
        self._entries[segment] = value


# -- signed tokens -----------------------------------------------------------------------------


class JoseSigner:
    """Signed compact JWTs (JWS) with the header ``{"alg", "typ": "pause+jwt", "kid"}``.

    ``HS256`` by default (the ring decides); ``EdDSA`` (Ed25519) and ``ES256`` (P-256) let a
    verifier hold only public keys (`KeyRing.verify_only()`).

    Examples:
        >>> signer = JoseSigner(KeyRing.generate("HS256"))
        >>> signer.verify(signer.sign({"x": 1}), now=0.0)
        {'x': 1}

    Args:
        keys: The key ring. Its keys' algorithms form the allow-list.
        algorithms: Narrow the allow-list further (configuration, never the token).
        max_token_bytes: Tokens longer than this are refused before parsing.

    Raises:
        ConfigurationError: ``alg_not_allowed`` for ``dir`` keys or algorithms outside
            ``HS256``/``EdDSA``/``ES256``; ``max_token_bytes_invalid``.
    """

    #: The signer protocol version this class implements.
    api_version: ClassVar[int] = SIGNERS_API_VERSION

    __slots__ = ("_allowed", "_header_cache", "_keys", "_max_token_bytes", "_signing")

    def __init__(
        self,
        keys: KeyRing,
        *,
        algorithms: Collection[str] | None = None,
        max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    ) -> None:
        """Create a signer over ``keys``; see the class docs."""
        if not isinstance(keys, KeyRing):  # pragma: no cover - guards untyped callers
            msg = "JoseSigner needs a KeyRing"  # type: ignore[unreachable]
            raise ConfigurationError(msg, code="keys_invalid")
        if not keys.algorithms <= _JWS_ALGORITHMS.keys():
            msg = "JoseSigner signs with HS256, EdDSA or ES256 keys; use SealedSigner for dir"
            raise ConfigurationError(msg, code="alg_not_allowed")
        allowed = keys.algorithms
        if algorithms is not None:
            wanted = frozenset(algorithms)
            if not wanted <= _JWS_ALGORITHMS.keys():
                msg = "allowed algorithms are HS256, EdDSA and ES256"
                raise ConfigurationError(msg, code="alg_not_allowed")
            allowed &= wanted
            if keys.active_algorithm not in allowed:
                msg = "the signing key's algorithm is not in the allowed algorithms"
                raise ConfigurationError(msg, code="alg_not_allowed")
        self._keys = keys
        self._allowed = allowed
        self._max_token_bytes = _check_size_option(max_token_bytes)
        self._header_cache = _HeaderCache()
        self._signing: tuple[str, JoseKey, JWSAlgModel] | None = None
        if keys.can_sign:
            kid, key, alg = keys.signing_key()
            header = {"alg": alg, "typ": TOKEN_TYPE, "kid": kid}
            segment = _b64encode(json.dumps(header, separators=(",", ":")).encode("ascii"))
            self._signing = (segment, key, _JWS_ALGORITHMS[alg])

    @classmethod
    def from_keys(cls, keys: KeyRing, **options: Any) -> Self:
        """Build the signer from a key ring and options (the plugin registry's entry)."""
        return cls(keys, **options)

    @property
    def keys(self) -> KeyRing:
        """The key ring this signer uses."""
        return self._keys

    def sign(self, claims: Mapping[str, Any]) -> str:
        """Sign ``claims`` with the ring's active key.

        Raises:
            ConfigurationError: ``key_cannot_sign`` for a verify-only ring.
            UnsupportedPayload: ``claims_not_json`` or ``token_too_large``.
        """
        if self._signing is None:
            self._keys.signing_key()  # raises key_cannot_sign
            msg = "this signer cannot sign"
            raise ConfigurationError(msg, code="key_cannot_sign")
        header_segment, key, alg = self._signing
        signing_input = f"{header_segment}.{_b64encode(_encode_claims(claims))}"
        signature = alg.sign(signing_input.encode("ascii"), key)
        if alg.name == "ES256":
            size = len(signature) // 2
            r, s = int.from_bytes(signature[:size]), int.from_bytes(signature[size:])
            if s > _P256_ORDER // 2:
                signature = r.to_bytes(size) + (_P256_ORDER - s).to_bytes(size)
        return _check_length(f"{signing_input}.{_b64encode(signature)}", self._max_token_bytes)

    def verify(self, token: str, *, now: float) -> dict[str, Any]:
        """Check a token up to its signature and payload JSON; return the claim set.

        Args:
            token: The compact token.
            now: Seconds since the epoch (for key retirement).

        Raises:
            InvalidToken: ``token_too_large``, ``token_malformed``, ``token_header_invalid``,
                ``token_algorithm_not_allowed`` (also for a missing or non-string ``alg`` and
                for ``none``, signed or not), ``token_header_forbidden`` (whatever the
                member's value), ``token_type_invalid``, ``token_key_unknown``,
                ``token_key_retired``, ``token_signature_invalid`` or
                ``token_payload_invalid``.
        """
        header_segment, payload_segment, signature_segment = split_token(
            token, max_token_bytes=self._max_token_bytes
        )
        checked = self._header_cache.get(header_segment)
        if checked is None:
            header = parse_header(header_segment)
            checked = _check_header(header, allowed=self._allowed, members=_JWS_HEADER_MEMBERS)
            self._header_cache.put(header_segment, checked)
        if not signature_segment:
            _fail("token_malformed", "the token has no signature")
        alg_name, kid = checked
        key, key_alg = self._keys.key_for(kid, now=now)
        if key_alg != alg_name:
            _fail("token_algorithm_not_allowed", "the token's key is not used with its algorithm")
        alg = _JWS_ALGORITHMS[alg_name]
        signature = b64decode_segment(signature_segment)
        if alg_name == "ES256" and int.from_bytes(signature[32:]) > _P256_ORDER // 2:
            _fail("token_signature_invalid", "the token's signature is not in canonical form")
        signing_input = token[: len(header_segment) + 1 + len(payload_segment)]
        try:
            valid = alg.verify(signing_input.encode("ascii"), signature, key)
        except (JoseError, ValueError, TypeError) as exc:
            msg = "the token's signature could not be checked"
            raise InvalidToken(msg, code="token_signature_invalid") from exc
        if not valid:
            _fail("token_signature_invalid", "the token's signature is not valid")
        return parse_payload(b64decode_segment(payload_segment))

    def __repr__(self) -> str:
        return f"JoseSigner(keys={self._keys!r}, max_token_bytes={self._max_token_bytes})"


# -- sealed tokens -----------------------------------------------------------------------------


def _symmetric(key: JoseKey) -> bytes:
    if not isinstance(key, OctKey):  # pragma: no cover - the ring pins dir keys to oct
        msg = "a dir key must be a symmetric key"
        raise ConfigurationError(msg, code="key_alg_mismatch")
    return key.raw_value


class SealedSigner:
    """Sealed compact tokens (JWE ``dir`` + ``A256GCM``): the claims are encrypted.

    The header is ``{"alg": "dir", "enc": "A256GCM", "typ": "pause+jwt", "kid"}``;
    compression (``zip``) and every other header member are refused. Use it when the claims
    must not be readable by whoever holds the token. The ring holds ``dir`` keys only
    (``KeyRing.generate("dir")``), separate from any signing key. Each token uses a fresh
    random 96-bit nonce; rotate the key well before 2**32 tokens.

    Examples:
        >>> signer = SealedSigner(KeyRing.generate("dir"))
        >>> signer.verify(signer.sign({"x": 1}), now=0.0)
        {'x': 1}

    Args:
        keys: A ring of ``dir`` keys.
        max_token_bytes: Tokens longer than this are refused before parsing.

    Raises:
        ConfigurationError: ``alg_not_allowed`` if the ring holds other keys than ``dir``;
            ``max_token_bytes_invalid``.
    """

    #: The signer protocol version this class implements.
    api_version: ClassVar[int] = SIGNERS_API_VERSION

    __slots__ = ("_header_cache", "_keys", "_max_token_bytes", "_sealing")

    def __init__(self, keys: KeyRing, *, max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES) -> None:
        """Create a sealer over ``keys``; see the class docs."""
        if not isinstance(keys, KeyRing):  # pragma: no cover - guards untyped callers
            msg = "SealedSigner needs a KeyRing"  # type: ignore[unreachable]
            raise ConfigurationError(msg, code="keys_invalid")
        if keys.algorithms != {"dir"}:
            msg = "SealedSigner needs a ring of 'dir' keys (KeyRing.generate('dir'))"
            raise ConfigurationError(msg, code="alg_not_allowed")
        self._keys = keys
        self._max_token_bytes = _check_size_option(max_token_bytes)
        self._header_cache = _HeaderCache()
        kid, key, _alg = keys.signing_key()
        header = {"alg": "dir", "enc": "A256GCM", "typ": TOKEN_TYPE, "kid": kid}
        segment = _b64encode(json.dumps(header, separators=(",", ":")).encode("ascii"))
        self._sealing: tuple[str, bytes] = (segment, _symmetric(key))

    @classmethod
    def from_keys(cls, keys: KeyRing, **options: Any) -> Self:
        """Build the signer from a key ring and options (the plugin registry's entry)."""
        return cls(keys, **options)

    @property
    def keys(self) -> KeyRing:
        """The key ring this signer uses."""
        return self._keys

    def sign(self, claims: Mapping[str, Any]) -> str:
        """Encrypt ``claims`` under the ring's active key.

        Raises:
            UnsupportedPayload: ``claims_not_json`` or ``token_too_large``.
        """
        header_segment, cek = self._sealing
        iv = secrets.token_bytes(_GCM_IV_BYTES)
        ciphertext, tag = _A256GCM.encrypt(
            _encode_claims(claims), cek, iv, header_segment.encode("ascii")
        )
        token = ".".join(
            (header_segment, "", _b64encode(iv), _b64encode(ciphertext), _b64encode(tag))
        )
        return _check_length(token, self._max_token_bytes)

    def verify(self, token: str, *, now: float) -> dict[str, Any]:
        """Check and decrypt a sealed token; return the claim set.

        Raises:
            InvalidToken: the codes of `JoseSigner.verify()`; a failed decryption is
                ``token_signature_invalid`` (the authentication tag did not match); a
                key-wrapping algorithm (``A256KW``, ``PBES2-*``, ``RSA-OAEP``, ``ECDH-ES*``)
                is ``token_algorithm_not_allowed``, whatever its encrypted key segment.
        """
        header_segment, key_segment, iv_segment, ct_segment, tag_segment = split_token(
            token, max_token_bytes=self._max_token_bytes, segments=5
        )
        checked = self._header_cache.get(header_segment)
        if checked is None:
            checked = _check_header(
                parse_header(header_segment),
                allowed=_SEALED_ALGORITHMS,
                members=_JWE_HEADER_MEMBERS,
                enc="A256GCM",
            )
            self._header_cache.put(header_segment, checked)
        if key_segment:
            _fail("token_malformed", "a sealed token ('dir') carries no encrypted key")
        key, _alg = self._keys.key_for(checked[1], now=now)
        iv, tag = b64decode_segment(iv_segment), b64decode_segment(tag_segment)
        if len(iv) != _GCM_IV_BYTES or len(tag) != _GCM_TAG_BYTES:
            _fail("token_malformed", "the token's nonce or tag has the wrong size")
        try:
            plaintext = _A256GCM.decrypt(
                b64decode_segment(ct_segment),
                tag,
                _symmetric(key),
                iv,
                header_segment.encode("ascii"),
            )
        except (JoseError, ValueError, TypeError) as exc:
            msg = "the token could not be decrypted"
            raise InvalidToken(msg, code="token_signature_invalid") from exc
        return parse_payload(plaintext)

    def __repr__(self) -> str:
        return f"SealedSigner(keys={self._keys!r}, max_token_bytes={self._max_token_bytes})"
