"""The built-in signers: signed (JWS) and sealed (JWE) compact tokens, verified strictly.

joserfc provides the cryptography (its JWS algorithm objects and its AES-GCM content
encryption; an HS256 token whose header is byte for byte the one the signer writes for one of
its keys is checked with HMAC-SHA256 on the standard library's hashes, the same computation
with fewer calls); everything around it is done here, in the verification order of the
Security page, cheapest and unauthenticated checks first: size, header length, shape, header
JSON, ``alg`` allow-list, header whitelist, ``typ``, ``kid`` (syntax, lookup, retirement,
algorithm), signature or decryption, payload JSON. joserfc's own ``jwt.decode`` accepts
duplicate members, any ``kid`` with a single key, extra headers and a missing ``typ``; none of
that passes here.

Header members are checked by name before their values are looked at, so a token that
names ``alg: none``, no ``alg``, a wrapped key or a ``crit``/``jwk``/``x5c`` member gets the
code of that attack whatever the member's JSON type, and no key is consulted for it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, NoReturn

from joserfc.errors import JoseError
from joserfc.jwa import EdDSAAlgorithm, ESAlgorithm, GCMEncModel, HMACAlgorithm, JWSAlgModel
from joserfc.jwk import OctKey

from pausetoken._claims import TOKEN_TYPE
from pausetoken._compact import (
    b64decode_segment,
    b64url_encode,
    parse_header,
    parse_payload,
    split_token,
)
from pausetoken._keys import KID_PATTERN, KeyRing, ring_keys
from pausetoken._policy import DEFAULT_MAX_TOKEN_BYTES, token_bytes_problem
from pausetoken._signer_api import SIGNERS_API_VERSION
from pausetoken.exceptions import (
    Code,
    InvalidKeys,
    InvalidSettings,
    InvalidToken,
    UnsupportedPayload,
)

if TYPE_CHECKING:
    from typing import Self

    from pausetoken._keys import JoseKey

__all__ = ["JoseSigner", "SealedSigner"]

_HEADER_CACHE_SIZE: Final = 64

# Registered header names (RFC 7515, 7516, 7518, 7797, 8555, 9449) may be named in errors;
# any other name came from whoever made the token and is counted, not echoed.
_REGISTERED_NAMES: Final = frozenset(
    {
        "crit", "b64", "zip", "jku", "jwk", "x5u", "x5c", "x5t", "x5t#S256", "cty", "enc",
        "epk", "apu", "apv", "iv", "tag", "p2s", "p2c", "url", "nonce", "ppt", "svt",
    }
)  # fmt: skip
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


def _fail(code: Code, msg: str) -> NoReturn:
    raise InvalidToken(msg, code=code)


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
        _fail(InvalidToken.TOKEN_ALGORITHM_NOT_ALLOWED, f"the token {why}")
    if enc is not None and header.get("enc") != enc:
        _fail(
            InvalidToken.TOKEN_ALGORITHM_NOT_ALLOWED,
            "the token's content encryption is not allowed",
        )
    extra = header.keys() - members
    if extra:
        _fail(
            InvalidToken.TOKEN_HEADER_FORBIDDEN,
            f"the token header has forbidden members: {_names(extra)}",
        )
    if header.get("typ") != TOKEN_TYPE:
        _fail(InvalidToken.TOKEN_TYPE_INVALID, f"the token 'typ' must be {TOKEN_TYPE!r}")
    kid = header.get("kid")
    if type(kid) is not str or not KID_PATTERN.match(kid):
        _fail(InvalidToken.TOKEN_HEADER_INVALID, "the token 'kid' is missing or malformed")
    return alg, kid


def _names(extra: Collection[str]) -> str:
    known = sorted(name for name in extra if name in _REGISTERED_NAMES)
    others = len(extra) - len(known)
    shown = [repr(name) for name in known[:5]]
    if others:
        shown.append(f"{others} other{'s' if others > 1 else ''}")
    return ", ".join(shown)


def _jws_header_segment(alg: str, kid: str) -> str:
    """The protected header segment this signer writes for ``kid`` (and nothing else)."""
    header = {"alg": alg, "typ": TOKEN_TYPE, "kid": kid}
    return b64url_encode(json.dumps(header, separators=(",", ":")).encode("ascii"))


# SHA-256's block size, and the key pads of RFC 2104 as translation tables.
_SHA256_BLOCK: Final = 64
_INNER_PAD: Final = bytes(byte ^ 0x36 for byte in range(256))
_OUTER_PAD: Final = bytes(byte ^ 0x5C for byte in range(256))


class _HmacSha256:
    """HMAC-SHA256 under one key, its two padded key blocks hashed once (RFC 2104, 4).

    A MAC then costs two copies of those states and two digests, which is what the
    standard library's ``hmac`` module does for an ``HMAC`` object; ``hmac.digest()`` sets
    up OpenSSL's MAC again on every call, which costs far more on a cold cache.
    """

    __slots__ = ("_inner", "_outer")

    def __init__(self, secret: bytes) -> None:
        if len(secret) > _SHA256_BLOCK:
            secret = hashlib.sha256(secret).digest()
        block = secret.ljust(_SHA256_BLOCK, b"\0")
        self._inner = hashlib.sha256(block.translate(_INNER_PAD))
        self._outer = hashlib.sha256(block.translate(_OUTER_PAD))

    def __repr__(self) -> str:
        return "<HMAC-SHA256 key>"

    def digest(self, message: bytes) -> bytes:
        inner = self._inner.copy()
        inner.update(message)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()


def _hmac_secrets(keys: KeyRing, allowed: frozenset[str]) -> dict[str, tuple[str, _HmacSha256]]:
    """Header segment -> ``(kid, its MAC)`` for the HS256 keys checked with the stdlib's hashes.

    Only the exact segment `_jws_header_segment()` writes is listed, and only after it passed
    the same header checks as any other token; the algorithm is the key's own (configuration,
    never the token). A key joserfc would refuse to verify with (``key_ops`` without
    ``verify``, an empty secret) is left to the general path, which refuses it as before.
    """
    fast: dict[str, tuple[str, _HmacSha256]] = {}
    if "HS256" not in allowed:
        return fast
    for kid, alg, key in ring_keys(keys):
        mac = _hmac_for(key, "verify") if alg == "HS256" else None
        if mac is None:
            continue
        segment = _jws_header_segment(alg, kid)
        checked = _check_header(parse_header(segment), allowed=allowed, members=_JWS_HEADER_MEMBERS)
        if checked == (alg, kid):
            fast[segment] = (kid, mac)
    return fast


def _hmac_for(key: JoseKey, operation: Literal["sign", "verify"]) -> _HmacSha256 | None:
    """The stdlib-hashed MAC of an HS256 key for ``operation``, if joserfc would use the key so.

    ``None`` leaves the key to joserfc, which refuses it as before (``key_ops`` without
    ``operation``, an empty secret).
    """
    if not isinstance(key, OctKey):
        return None
    try:
        secret = key.get_op_key(operation)
    except JoseError:
        return None
    return _HmacSha256(secret) if isinstance(secret, bytes) and secret else None


def _check_size_option(max_token_bytes: object) -> int:
    problem = token_bytes_problem("max_token_bytes", max_token_bytes)
    if problem is not None:
        raise InvalidSettings(problem, code=InvalidSettings.MAX_TOKEN_BYTES_INVALID)
    return max_token_bytes  # type: ignore[return-value]  # checked: an int in range


def _encode_claims(claims: object) -> bytes:
    if not isinstance(claims, Mapping):
        msg = "claims must be a mapping"
        raise UnsupportedPayload(msg, code=UnsupportedPayload.CLAIMS_NOT_JSON)
    try:
        return json.dumps(
            dict(claims), separators=(",", ":"), ensure_ascii=False, allow_nan=False
        ).encode("utf-8")
    except (TypeError, ValueError, RecursionError) as exc:
        msg = "the claims cannot be encoded as JSON"
        raise UnsupportedPayload(msg, code=UnsupportedPayload.CLAIMS_NOT_JSON) from exc


def _check_length(token: str, limit: int) -> str:
    if len(token) > limit:
        msg = f"the token would be {len(token)} bytes, over the limit of {limit}"
        raise UnsupportedPayload(msg, code=UnsupportedPayload.TOKEN_TOO_LARGE)
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


class _RingSigner:
    """What both signers share: a key ring, a size limit and a cache of parsed headers."""

    #: The signer protocol version this class implements.
    api_version: ClassVar[int] = SIGNERS_API_VERSION

    __slots__ = ("_header_cache", "_keys", "_max_token_bytes")

    def __init__(self, keys: KeyRing, max_token_bytes: int) -> None:
        self._keys = keys
        self._max_token_bytes = _check_size_option(max_token_bytes)
        self._header_cache = _HeaderCache()

    @classmethod
    def from_keys(cls, keys: KeyRing, **options: Any) -> Self:
        """Build the signer from a key ring and options (the plugin registry's entry)."""
        return cls(keys, **options)

    @property
    def keys(self) -> KeyRing:
        """The key ring this signer uses."""
        return self._keys

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(keys={self._keys!r}, max_token_bytes={self._max_token_bytes})"
        )


class JoseSigner(_RingSigner):
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

    __slots__ = ("_allowed", "_hmac_secrets", "_signing", "_signing_mac")

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
            raise InvalidKeys(msg, code=InvalidKeys.KEYS_INVALID)
        if not keys.algorithms <= _JWS_ALGORITHMS.keys():
            msg = "JoseSigner signs with HS256, EdDSA or ES256 keys; use SealedSigner for dir"
            raise InvalidKeys(msg, code=InvalidKeys.ALG_NOT_ALLOWED)
        allowed = keys.algorithms
        if algorithms is not None:
            wanted = frozenset(algorithms)
            if not wanted <= _JWS_ALGORITHMS.keys():
                msg = "allowed algorithms are HS256, EdDSA and ES256"
                raise InvalidKeys(msg, code=InvalidKeys.ALG_NOT_ALLOWED)
            allowed &= wanted
            if keys.active_algorithm not in allowed:
                msg = "the signing key's algorithm is not in the allowed algorithms"
                raise InvalidKeys(msg, code=InvalidKeys.ALG_NOT_ALLOWED)
        super().__init__(keys, max_token_bytes)
        self._allowed = allowed
        self._hmac_secrets = _hmac_secrets(keys, allowed)
        self._signing: tuple[str, JoseKey, JWSAlgModel] | None = None
        self._signing_mac: _HmacSha256 | None = None
        if keys.can_sign:
            kid, key, alg = keys.signing_key()
            self._signing = (_jws_header_segment(alg, kid), key, _JWS_ALGORITHMS[alg])
            self._signing_mac = _hmac_for(key, "sign") if alg == "HS256" else None

    def sign(self, claims: Mapping[str, Any]) -> str:
        """Sign ``claims`` with the ring's active key.

        Raises:
            ConfigurationError: ``key_cannot_sign`` for a verify-only ring.
            UnsupportedPayload: ``claims_not_json`` or ``token_too_large``.
        """
        if self._signing is None:
            self._keys.signing_key()  # raises key_cannot_sign
            msg = "this signer cannot sign"
            raise InvalidKeys(msg, code=InvalidKeys.KEY_CANNOT_SIGN)
        header_segment, key, alg = self._signing
        signing_input = f"{header_segment}.{b64url_encode(_encode_claims(claims))}"
        mac = self._signing_mac
        if mac is not None:
            signature = mac.digest(signing_input.encode("ascii"))
        else:
            signature = alg.sign(signing_input.encode("ascii"), key)
        if alg.name == "ES256":
            size = len(signature) // 2
            r, s = int.from_bytes(signature[:size]), int.from_bytes(signature[size:])
            if s > _P256_ORDER // 2:
                signature = r.to_bytes(size) + (_P256_ORDER - s).to_bytes(size)
        return _check_length(f"{signing_input}.{b64url_encode(signature)}", self._max_token_bytes)

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
        hmac_key = self._hmac_secrets.get(header_segment)
        if hmac_key is not None:
            return self._verify_hmac(token, hmac_key, payload_segment, signature_segment, now)
        checked = self._header_cache.get(header_segment)
        if checked is None:
            header = parse_header(header_segment)
            checked = _check_header(header, allowed=self._allowed, members=_JWS_HEADER_MEMBERS)
            self._header_cache.put(header_segment, checked)
        if not signature_segment:
            _fail(InvalidToken.TOKEN_MALFORMED, "the token has no signature")
        alg_name, kid = checked
        key, key_alg = self._keys.key_for(kid, now=now)
        if key_alg != alg_name:
            _fail(
                InvalidToken.TOKEN_ALGORITHM_NOT_ALLOWED,
                "the token's key is not used with its algorithm",
            )
        alg = _JWS_ALGORITHMS[alg_name]
        signature = b64decode_segment(signature_segment)
        if alg_name == "ES256" and int.from_bytes(signature[32:]) > _P256_ORDER // 2:
            _fail(
                InvalidToken.TOKEN_SIGNATURE_INVALID,
                "the token's signature is not in canonical form",
            )
        signing_input = token[: len(header_segment) + 1 + len(payload_segment)]
        try:
            valid = alg.verify(signing_input.encode("ascii"), signature, key)
        except (JoseError, ValueError, TypeError) as exc:
            msg = "the token's signature could not be checked"
            raise InvalidToken(msg, code=InvalidToken.TOKEN_SIGNATURE_INVALID) from exc
        if not valid:
            _fail(InvalidToken.TOKEN_SIGNATURE_INVALID, "the token's signature is not valid")
        return parse_payload(b64decode_segment(payload_segment))

    def _verify_hmac(
        self,
        token: str,
        hmac_key: tuple[str, _HmacSha256],
        payload_segment: str,
        signature_segment: str,
        now: float,
    ) -> dict[str, Any]:
        """`verify()` for a header this signer writes for one of its HS256 keys.

        The checks and their order are those of the general path; only the HMAC is computed
        with the standard library's hashes (joserfc's does the same computation through more
        calls).
        """
        if not signature_segment:
            _fail(InvalidToken.TOKEN_MALFORMED, "the token has no signature")
        kid, mac = hmac_key
        self._keys.key_for(kid, now=now)  # unknown (never, here) or retired
        signing_input = token[: len(token) - len(signature_segment) - 1]
        expected = mac.digest(signing_input.encode("ascii"))
        # Compared as text: split_token() admitted only canonical base64url, which has one
        # text per byte string, so equal text is an equal signature (and encoding 32 bytes
        # costs less than decoding the segment).
        if not hmac.compare_digest(signature_segment, b64url_encode(expected)):
            _fail(InvalidToken.TOKEN_SIGNATURE_INVALID, "the token's signature is not valid")
        return parse_payload(b64decode_segment(payload_segment))


# -- sealed tokens -----------------------------------------------------------------------------


def _symmetric(key: JoseKey) -> bytes:
    if not isinstance(key, OctKey):  # pragma: no cover - the ring pins dir keys to oct
        msg = "a dir key must be a symmetric key"
        raise InvalidKeys(msg, code=InvalidKeys.KEY_ALG_MISMATCH)
    return key.raw_value


class SealedSigner(_RingSigner):
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

    __slots__ = ("_sealing",)

    def __init__(self, keys: KeyRing, *, max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES) -> None:
        """Create a sealer over ``keys``; see the class docs."""
        if not isinstance(keys, KeyRing):  # pragma: no cover - guards untyped callers
            msg = "SealedSigner needs a KeyRing"  # type: ignore[unreachable]
            raise InvalidKeys(msg, code=InvalidKeys.KEYS_INVALID)
        if keys.algorithms != {"dir"}:
            msg = "SealedSigner needs a ring of 'dir' keys (KeyRing.generate('dir'))"
            raise InvalidKeys(msg, code=InvalidKeys.ALG_NOT_ALLOWED)
        super().__init__(keys, max_token_bytes)
        kid, key, _alg = keys.signing_key()
        header = {"alg": "dir", "enc": "A256GCM", "typ": TOKEN_TYPE, "kid": kid}
        segment = b64url_encode(json.dumps(header, separators=(",", ":")).encode("ascii"))
        self._sealing: tuple[str, bytes] = (segment, _symmetric(key))

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
            (header_segment, "", b64url_encode(iv), b64url_encode(ciphertext), b64url_encode(tag))
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
            _fail(InvalidToken.TOKEN_MALFORMED, "a sealed token ('dir') carries no encrypted key")
        key, _alg = self._keys.key_for(checked[1], now=now)
        iv, tag = b64decode_segment(iv_segment), b64decode_segment(tag_segment)
        if len(iv) != _GCM_IV_BYTES or len(tag) != _GCM_TAG_BYTES:
            _fail(InvalidToken.TOKEN_MALFORMED, "the token's nonce or tag has the wrong size")
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
            raise InvalidToken(msg, code=InvalidToken.TOKEN_SIGNATURE_INVALID) from exc
        return parse_payload(plaintext)
