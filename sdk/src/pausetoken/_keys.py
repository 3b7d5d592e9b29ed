"""Key rings: named keys, one active for signing, older ones verify-only until retired.

A `KeyRing` is immutable. Rotation returns a new ring in which the new key signs and
the previous signing key still verifies until its retirement deadline, so tokens minted just
before a rotation stay redeemable for the grace period and no longer.
"""

from __future__ import annotations

import hmac
import itertools
import json
import logging
import math
import os
import re
import secrets
import stat
import string
import sys
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

import attrs
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, OctKey, OKPKey

from pausetoken._compact import DuplicateMember, b64url_decode, no_duplicates
from pausetoken.exceptions import (
    Code,
    ConfigurationError,
    InvalidKeys,
    InvalidSettings,
    InvalidToken,
)

__all__ = [
    "KID_PATTERN",
    "SUPPORTED_ALGORITHMS",
    "JoseKey",
    "KeyRing",
    "check_secret",
    "read_keys_file",
    "ring_keys",
]

logger = logging.getLogger("pausetoken.keys")

#: A joserfc key object as the ring holds it.
JoseKey: TypeAlias = OctKey | OKPKey | ECKey
Algorithm: TypeAlias = Literal["HS256", "EdDSA", "ES256", "dir"]

#: Algorithms a key may be used with. ``dir`` keys are for sealed (JWE) tokens only.
SUPPORTED_ALGORITHMS: Final[frozenset[str]] = frozenset({"HS256", "EdDSA", "ES256", "dir"})
#: What a ``kid`` may look like (it travels in every token header).
KID_PATTERN: Final = re.compile(r"^[A-Za-z0-9_.:-]{1,64}\Z")

_KTY: Final[dict[str, str]] = {"HS256": "oct", "dir": "oct", "EdDSA": "OKP", "ES256": "EC"}
_CURVE: Final[dict[str, str]] = {"EdDSA": "Ed25519", "ES256": "P-256"}
_USE: Final[dict[str, str]] = {"HS256": "sig", "EdDSA": "sig", "ES256": "sig", "dir": "enc"}
# key_ops (RFC 7517 §4.3) by use: the operation that makes tokens, the one that checks them.
_OPS: Final[dict[str, tuple[str, str]]] = {"sig": ("sign", "verify"), "enc": ("encrypt", "decrypt")}

#: Smallest HMAC key (RFC 7518 §3.2: at least the size of the hash output).
MIN_SECRET_BYTES: Final = 32
#: ``dir`` + ``A256GCM`` needs exactly a 256-bit key.
SEALED_KEY_BYTES: Final = 32
#: Smallest estimated entropy of a secret's bytes (Shannon estimate), in bits.
MIN_SECRET_BITS: Final = 128
#: Smallest entropy of a text key by its alphabet (length x bits per character), in bits.
MIN_TEXT_KEY_BITS: Final = 256
# A sequence this long (in bits of key) occurring twice is refused; at 64 bits a random key
# repeats one with negligible probability.
_REPEAT_BITS: Final = 64
# Refused when at least this share of the bytes continue the step of the two before them.
_SEQUENCE_SHARE: Final = 1 / 3
_HEX: Final = (frozenset("0123456789abcdef"), frozenset("0123456789ABCDEF"))
_BASE64: Final = (
    frozenset(string.ascii_letters + string.digits + "-_"),
    frozenset(string.ascii_letters + string.digits + "+/"),
)
_PRINTABLE_ASCII: Final = 95

# Substrings that mark a secret as a placeholder or a human password. Each is at least six
# characters long, so a random key contains one by chance with negligible probability.
_PLACEHOLDER_WORDS: Final = (
    "secret",
    "password",
    "passwd",
    "changeme",
    "change-me",
    "change_me",
    "example",
    "placeholder",
    "replace",
    "default",
    "sample",
    "insecure",
    "qwerty",
    "letmein",
)
# Markers of PEM, OpenSSH and PuTTY key files: asymmetric material is never an HMAC key.
_KEY_FILE_MARKERS: Final = (
    b"-----BEGIN",
    b"-----END",
    b"---- BEGIN",
    b"ssh-rsa",
    b"ssh-dss",
    b"ssh-ed25519",
    b"ecdsa-sha2-",
    b"sk-ssh-",
    b"PuTTY-User-Key-File",
)
_JWKS_MEMBERS: Final = frozenset({"keys", "active"})
# What every refusal of a key set's shape tells the user to do.
_MAKE_A_KEY_SET: Final = "create a key set with `pausetoken keygen -o FILE`"
_OUR_JWK_MEMBERS: Final = frozenset({"kid", "alg", "use", "key_ops", "retire_at"})


def _config_error(msg: str, code: Code | str) -> ConfigurationError:
    return ConfigurationError(msg, code=code)


def _entropy_bits(secret: bytes) -> float:
    """Estimate the entropy of ``secret`` from its own symbol distribution (Shannon).

    Length times the per-symbol entropy of the observed distribution. Random bytes and
    random hex or base64 text score well above 128 bits at 32 bytes or more; repeated
    characters, short alphabets and patterns score low.
    """
    n = len(secret)
    return -sum(c * math.log2(c / n) for c in Counter(secret).values())


def _blank(char: str) -> bool:
    return char.isspace() or not char.isprintable()


def _trimmed(text: str) -> str:
    start, end = 0, len(text)
    while start < end and _blank(text[start]):
        start += 1
    while end > start and _blank(text[end - 1]):
        end -= 1
    return text[start:end]


def _as_text(secret: bytes) -> str | None:
    """``secret`` as text when it is typed or pasted text, ``None`` for binary key material.

    Text is UTF-8 whose characters are all printable once whitespace and control characters
    are taken off both ends. Random 32-byte keys are text with a probability below 2**-35
    (and generated keys never: generation draws again).
    """
    try:
        text = secret.decode("utf-8")
    except UnicodeDecodeError:
        return None
    core = _trimmed(text)
    return text if core and core.isprintable() else None


def _bits_per_character(text: str) -> tuple[float, int]:
    """The bits each character of a text key carries by its alphabet, and how many count.

    Hex (one case) carries 4 bits, base64url or base64 6 (padding carries none), any other
    printable ASCII log2(95), about 6.57.
    """
    chars = frozenset(text)
    if any(chars <= hex_digits for hex_digits in _HEX):
        return 4.0, len(text)
    body = text[:-2] + text[-2:].rstrip("=")
    if any(frozenset(body) <= alphabet for alphabet in _BASE64):
        return 6.0, len(body)
    return math.log2(_PRINTABLE_ASCII), len(text)


def _sequence_share(secret: bytes) -> float:
    """The share of bytes that continue the step of the two before them (``abc``, ``aaa``)."""
    if len(secret) < 3:  # noqa: PLR2004 - a step needs three bytes
        return 0.0
    steps = [(b - a) & 0xFF for a, b in itertools.pairwise(secret)]
    same = sum(1 for a, b in itertools.pairwise(steps) if a == b)
    return same / (len(secret) - 2)


def _text_weakness(text: str) -> tuple[Code, str] | None:
    if _trimmed(text) != text:
        return InvalidKeys.KEY_WHITESPACE, (
            "the key has whitespace or control characters at an end (a newline from "
            "`echo > file`?); remove them"
        )
    if not text.isascii():
        return InvalidKeys.KEY_NOT_ASCII, (
            "the key is text with non-ASCII characters, so it was typed, not generated"
        )
    lowered = text.lower()
    if " " in text or any(word in lowered for word in _PLACEHOLDER_WORDS):
        return InvalidKeys.KEY_PLACEHOLDER, "the key looks like a placeholder or a human password"
    bits, count = _bits_per_character(text)
    if bits * count < MIN_TEXT_KEY_BITS:
        return InvalidKeys.KEY_LOW_ENTROPY, (
            f"a text key must carry at least {MIN_TEXT_KEY_BITS} bits by its alphabet: "
            "43 base64url characters, 64 hex digits or 39 other printable characters"
        )
    return None


def _form_weakness(secret: bytes, alg: str) -> tuple[Code, str] | None:
    if any(marker in secret for marker in _KEY_FILE_MARKERS):
        return (
            InvalidKeys.KEY_IS_PEM,
            "PEM, OpenSSH or PuTTY key material cannot be used as a symmetric key",
        )
    if alg == "dir" and len(secret) != SEALED_KEY_BYTES:
        code = (
            InvalidKeys.KEY_TOO_SHORT
            if len(secret) < SEALED_KEY_BYTES
            else InvalidKeys.KEY_SIZE_INVALID
        )
        return code, f"a sealed-token key must be exactly {SEALED_KEY_BYTES} bytes"
    if len(secret) < MIN_SECRET_BYTES:
        return InvalidKeys.KEY_TOO_SHORT, (
            f"an HMAC key must be at least {MIN_SECRET_BYTES} bytes (RFC 7518 §3.2)"
        )
    return None


def _pattern_weakness(secret: bytes, text: str | None) -> tuple[Code, str] | None:
    if _entropy_bits(secret) < MIN_SECRET_BITS:
        return InvalidKeys.KEY_LOW_ENTROPY, (
            f"the key carries less than {MIN_SECRET_BITS} bits of estimated entropy"
        )
    if _sequence_share(secret) >= _SEQUENCE_SHARE:
        return InvalidKeys.KEY_LOW_ENTROPY, "the key is an arithmetic sequence (abc, 123, aaa)"
    bits = 8.0 if text is None else _bits_per_character(text)[0]
    window = math.ceil(_REPEAT_BITS / bits)
    windows = len(secret) - window + 1
    if len({secret[i : i + window] for i in range(windows)}) < windows:
        return InvalidKeys.KEY_LOW_ENTROPY, "the key repeats a pattern"
    return None


def _weakness(secret: bytes, alg: str) -> tuple[Code, str] | None:
    """Why ``secret`` is refused as a symmetric key, as ``(code, message)``, or ``None``."""
    text = _as_text(secret)
    return (
        _form_weakness(secret, alg)
        or (None if text is None else _text_weakness(text))
        or _pattern_weakness(secret, text)
    )


def check_secret(secret: bytes, *, alg: str = "HS256") -> None:
    """Refuse a symmetric key that is short, typed, patterned or key-file material.

    The rule, in order (every refusal is a `ConfigurationError` with the code shown):

    1. PEM, OpenSSH or PuTTY key material (``key_is_pem``).
    2. ``dir`` keys must be exactly 32 bytes, HMAC keys at least 32 (``key_too_short``,
       ``key_size_invalid``).
    3. A *text* key (UTF-8 whose characters are printable once whitespace and control
       characters are taken off its ends; random bytes almost never are) must have nothing
       to take off (``key_whitespace``), be ASCII (``key_not_ascii``), contain no space and
       no placeholder word such as ``secret``, ``changeme`` or ``example``
       (``key_placeholder``), and carry at least 256 bits by its alphabet: its length
       times 4 bits for hex, 6 for base64url or base64 (padding not counted), log2(95) for
       other printable ASCII, so at least 64 hex digits, 43 base64url characters or 39
       other characters (``key_low_entropy``).
    4. Every key: the Shannon estimate of its bytes (length times the entropy of its own
       byte distribution) is at least 128 bits; fewer than a third of its bytes continue
       the step between the two before them (``abc``, ``0123``, ``aaa``, ``bytes(range(32))``);
       no 64-bit sequence (8 bytes, 16 hex digits, 11 base64 characters) occurs twice
       (``key_low_entropy``).

    ``secrets.token_bytes(32)``, ``secrets.token_urlsafe(32)``, ``secrets.token_hex(32)``,
    ``openssl rand -base64 32`` and ``pausetoken keygen`` pass: the rules refuse such
    random keys with a probability below 2**-33 (64 hex digits, by the sequence rule, is
    the worst case). The checks catch mistakes; they cannot prove a key random, so a long
    enough phrase of random-looking words may pass. Generate keys.

    Args:
        secret: The key bytes.
        alg: ``"HS256"`` or ``"dir"``.

    Raises:
        ConfigurationError: with one of the codes above. The message never quotes the key.
    """
    weakness = _weakness(secret, alg)
    if weakness is not None:
        code, msg = weakness
        if code != InvalidKeys.KEY_IS_PEM:
            msg += "; generate one with `pausetoken keygen` or secrets.token_bytes(32)"
        raise _config_error(msg, code)


def _check_kid(kid: object) -> str:
    if not isinstance(kid, str) or not KID_PATTERN.match(kid):
        msg = "a kid is 1-64 characters of letters, digits and '_.:-'"
        raise _config_error(msg, InvalidKeys.KID_INVALID)
    return kid


def _check_alg(alg: object) -> Algorithm:
    if not isinstance(alg, str) or alg not in SUPPORTED_ALGORITHMS:
        allowed = ", ".join(sorted(SUPPORTED_ALGORITHMS))
        msg = f"key algorithm must be one of {allowed} ('none' never)"
        raise _config_error(msg, InvalidKeys.ALG_NOT_ALLOWED)
    return alg  # type: ignore[return-value]  # narrowed by the membership test


def _new_kid() -> str:
    return secrets.token_urlsafe(9)


def _aware(moment: datetime, what: str) -> datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        msg = f"{what} must be an aware datetime (UTC)"
        raise _config_error(msg, InvalidSettings.NAIVE_DATETIME)
    return moment.astimezone(UTC)


@attrs.frozen(repr=False, eq=False)
class _Entry:
    """One key of a ring: its id, algorithm, key object and retirement deadline."""

    kid: str
    alg: Algorithm
    key: JoseKey
    retire_at: datetime | None
    # The deadline as epoch seconds, compared on every verification.
    retire_ts: float | None = attrs.field(init=False)

    @retire_ts.default
    def _retire_ts(self) -> float | None:
        return None if self.retire_at is None else self.retire_at.timestamp()

    @property
    def private(self) -> bool:
        return bool(self.key.is_private)

    def describe(self) -> str:
        state = "signing" if self.retire_at is None else f"retires {self.retire_at.isoformat()}"
        half = "private" if self.private else "public"
        return f"{self.kid}:{self.alg}:{half}:{state}"

    def with_retirement(self, retire_at: datetime | None) -> _Entry:
        return _Entry(kid=self.kid, alg=self.alg, key=self.key, retire_at=retire_at)


def _key_from_secret(secret: bytes, alg: Algorithm) -> OctKey:
    check_secret(secret, alg=alg)
    try:
        return OctKey.import_key(secret)
    except (JoseError, ValueError) as exc:
        msg = "the symmetric key could not be imported"
        raise _config_error(msg, InvalidKeys.KEY_INVALID) from exc


def _generate_key(alg: Algorithm) -> JoseKey:
    if alg in {"HS256", "dir"}:
        # Draw again in the (below 2**-33) case the checks would refuse the key when loaded.
        secret = secrets.token_bytes(MIN_SECRET_BYTES)
        while _weakness(secret, alg) is not None:  # pragma: no cover - practically never
            secret = secrets.token_bytes(MIN_SECRET_BYTES)
        return OctKey.import_key(secret)
    if alg == "EdDSA":
        return OKPKey.generate_key("Ed25519")
    return ECKey.generate_key("P-256")


def _b64url_decode(value: object, what: str) -> bytes:
    if not isinstance(value, str):
        msg = f"{what} must be base64url without padding"
        raise _config_error(msg, InvalidKeys.KEY_INVALID)
    try:
        return b64url_decode(value)
    except ValueError as exc:
        msg = f"{what} must be canonical base64url without padding"
        raise _config_error(msg, InvalidKeys.KEY_INVALID) from exc


def _retire_from_jwk(value: object) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        msg = "'retire_at' must be a number of seconds since the epoch"
        raise _config_error(msg, InvalidKeys.JWKS_INVALID)
    return datetime.fromtimestamp(value, tz=UTC)


def _key_ops(value: object, kid: str, alg: Algorithm) -> frozenset[str] | None:
    """The JWK's ``key_ops``, refused unless they fit how the ring uses the key."""
    if value is None:
        return None
    make, check = _OPS[_USE[alg]]
    if (
        not isinstance(value, list)
        or not all(isinstance(op, str) for op in value)
        or len(set(value)) != len(value)
        or not set(value) <= {make, check}
        or check not in value
    ):
        msg = (
            f"key {kid!r}: algorithm {alg} allows 'key_ops' [{make!r}, {check!r}] or "
            f"[{check!r}] for a key that only checks tokens"
        )
        raise _config_error(msg, InvalidKeys.KEY_OPS_INVALID)
    return frozenset(value)


def _check_okp_pair(key: OKPKey, jwk: Mapping[str, Any], kid: str) -> None:
    """Refuse a private OKP key whose ``x`` is not the public half of its ``d``."""
    if key.private_key is None:
        return
    given = _b64url_decode(jwk.get("x"), f"key {kid!r} 'x'")
    derived = key.public_key.public_bytes(Encoding.Raw, PublicFormat.Raw)
    if not hmac.compare_digest(given, derived):
        msg = f"key {kid!r}: 'x' is not the public half of 'd'"
        raise _config_error(msg, InvalidKeys.KEY_INVALID)


def _entry_from_jwk(jwk: object) -> tuple[_Entry, frozenset[str] | None]:
    if not isinstance(jwk, Mapping):
        msg = "every member of 'keys' must be a JSON object"
        raise _config_error(msg, InvalidKeys.JWKS_INVALID)
    kid = _check_kid(jwk.get("kid"))
    alg = _check_alg(jwk.get("alg"))
    kty = jwk.get("kty")
    if kty != _KTY[alg]:
        msg = f"key {kid!r}: algorithm {alg} needs a key of type {_KTY[alg]!r}"
        raise _config_error(msg, InvalidKeys.KEY_ALG_MISMATCH)
    use = jwk.get("use")
    if use is not None and use != _USE[alg]:
        msg = f"key {kid!r}: algorithm {alg} needs 'use': {_USE[alg]!r}"
        raise _config_error(msg, InvalidKeys.KEY_ALG_MISMATCH)
    ops = _key_ops(jwk.get("key_ops"), kid, alg)
    retire_at = _retire_from_jwk(jwk.get("retire_at"))
    if alg in {"HS256", "dir"}:
        key: JoseKey = _key_from_secret(_b64url_decode(jwk.get("k"), f"key {kid!r} 'k'"), alg)
    else:
        if jwk.get("crv") != _CURVE[alg]:
            msg = f"key {kid!r}: algorithm {alg} needs the curve {_CURVE[alg]}"
            raise _config_error(msg, InvalidKeys.KEY_ALG_MISMATCH)
        material = {k: v for k, v in jwk.items() if k not in _OUR_JWK_MEMBERS}
        key_class = OKPKey if alg == "EdDSA" else ECKey
        try:
            key = key_class.import_key(material)
        except (JoseError, ValueError, TypeError, KeyError) as exc:
            msg = f"key {kid!r} could not be imported"
            raise _config_error(msg, InvalidKeys.KEY_INVALID) from exc
        # cryptography checks that an EC private key matches its public point; for Ed25519
        # the public half is only derived, so a mismatched 'x' would be exported unnoticed.
        if isinstance(key, OKPKey):
            _check_okp_pair(key, jwk, kid)
    return _Entry(kid=kid, alg=alg, key=key, retire_at=retire_at), ops


def _parse_jwks_text(text: str) -> Any:
    if not text.strip():
        msg = f"the key set is empty: {_MAKE_A_KEY_SET}"
        raise _config_error(msg, InvalidKeys.JWKS_INVALID)
    try:
        return json.loads(text, object_pairs_hook=no_duplicates)
    except DuplicateMember as exc:
        msg = "the JWKS has duplicate members"
        raise _config_error(msg, InvalidKeys.JWKS_INVALID) from exc
    except json.JSONDecodeError as exc:
        # Checked only once JSON failed: a key file's markers are ordinary base64url text.
        if any(marker.decode("ascii") in text for marker in _KEY_FILE_MARKERS):
            msg = (
                "the key set is PEM, OpenSSH or PuTTY key material, not a JWK Set (JSON): "
                f"{_MAKE_A_KEY_SET}"
            )
            raise _config_error(msg, InvalidKeys.KEY_IS_PEM) from exc
        msg = (
            f"the key set is not valid JSON (line {exc.lineno}, column {exc.colno}): fix "
            f"it, or {_MAKE_A_KEY_SET}"
        )
        raise _config_error(msg, InvalidKeys.JWKS_INVALID) from exc
    except (ValueError, RecursionError) as exc:
        msg = "the JWKS is not valid JSON"
        raise _config_error(msg, InvalidKeys.JWKS_INVALID) from exc


def _refuse_other_shapes(data: object) -> None:
    """Name the common look-alikes of a JWK Set: one JWK, or a bare array of JWKs."""
    if isinstance(data, Mapping) and "keys" not in data and "kty" in data:
        msg = (
            "the key set is a single JWK, not a JWK Set: wrap it as "
            '{"keys": [<the JWK, with "kid" and "alg">]}, or ' + _MAKE_A_KEY_SET
        )
        raise _config_error(msg, InvalidKeys.JWKS_INVALID)
    if isinstance(data, list | tuple):
        msg = (
            'the key set is a JSON array, not a JWK Set: wrap it as {"keys": [...]}, or '
            + _MAKE_A_KEY_SET
        )
        raise _config_error(msg, InvalidKeys.JWKS_INVALID)


def _validate_entries(
    _instance: KeyRing, _attribute: attrs.Attribute[Any], value: tuple[_Entry, ...]
) -> None:
    if not value:
        msg = "a key ring needs at least one key; there is no default key"
        raise _config_error(msg, InvalidKeys.EMPTY_KEYRING)
    kids = [e.kid for e in value]
    if len(set(kids)) != len(kids):
        msg = "two keys in the ring share one kid"
        raise _config_error(msg, InvalidKeys.DUPLICATE_KID)


@attrs.frozen(repr=False, eq=False)
class KeyRing:
    """Named keys (``kid``), one active for signing, older ones verify-only until retired.

    Every key is used with exactly one algorithm: ``HS256`` (32+ byte secret), ``EdDSA``
    (Ed25519), ``ES256`` (P-256) for signed tokens, or ``dir`` (a 256-bit key) for sealed
    tokens. A ring is immutable; `rotate()` returns a new one. Its ``repr`` never shows
    key material.

    JWKS format (`from_jwks()` / `to_jwks()`): a standard JWK Set with two
    conventions on top::

        {
          "active": "k2",
          "keys": [
            {"kty": "oct", "kid": "k2", "alg": "HS256", "k": "..."},
            {"kty": "oct", "kid": "k1", "alg": "HS256", "k": "...", "retire_at": 1767225600}
          ]
        }

    * ``active`` names the key that signs. It carries no ``retire_at``.
    * Every other key is verify-only and carries ``retire_at`` (Unix seconds); tokens under
      it are refused from that moment on.
    * Each JWK carries ``kid`` and ``alg``; ``use``, when present, must be ``sig`` (``enc``
      for ``dir`` keys); ``key_ops``, when present, holds ``verify`` (``decrypt``) and, for
      the key that signs, ``sign`` (``encrypt``), and nothing else.

    Examples:
        >>> ring = KeyRing.generate("EdDSA", kid="k1")
        >>> ring.active, ring.can_sign
        ('k1', True)
        >>> KeyRing.from_jwks(ring.to_jwks()).active
        'k1'

    Args:
        entries: The ring's keys (built by the class methods; not passed by hand).
        active: The ``kid`` of the signing key.

    Raises:
        ConfigurationError: ``empty_keyring``, ``duplicate_kid`` or ``no_active_key``.
    """

    _entries: tuple[_Entry, ...] = attrs.field(alias="entries", validator=_validate_entries)
    active: str = attrs.field()
    _index: dict[str, _Entry] = attrs.field(init=False)

    @_index.default
    def _build_index(self) -> dict[str, _Entry]:
        return {e.kid: e for e in self._entries}

    @active.validator
    def _check_active(self, _attribute: attrs.Attribute[Any], value: str) -> None:
        entry = next((e for e in self._entries if e.kid == value), None)
        if entry is None:
            msg = "the active kid names no key in the ring"
            raise _config_error(msg, InvalidKeys.NO_ACTIVE_KEY)
        if entry.retire_at is not None:
            msg = "the active key cannot have a retirement deadline"
            raise _config_error(msg, InvalidKeys.NO_ACTIVE_KEY)
        for other in self._entries:
            if other.kid != value and other.retire_at is None:
                msg = "every key but the active one needs a retirement deadline ('retire_at')"
                raise _config_error(msg, InvalidKeys.NO_ACTIVE_KEY)

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def generate(cls, alg: str = "HS256", *, kid: str | None = None) -> KeyRing:
        """A ring with one freshly generated key.

        Args:
            alg: ``"HS256"`` (32 random bytes), ``"EdDSA"`` (Ed25519), ``"ES256"`` (P-256)
                or ``"dir"`` (a 256-bit key for sealed tokens).
            kid: The key id; a short random base64url id by default.

        Raises:
            ConfigurationError: ``alg_not_allowed`` or ``kid_invalid``.
        """
        checked = _check_alg(alg)
        kid = _new_kid() if kid is None else _check_kid(kid)
        entry = _Entry(kid=kid, alg=checked, key=_generate_key(checked), retire_at=None)
        return cls(entries=(entry,), active=kid)

    @classmethod
    def from_secret(cls, secret: bytes | str, *, kid: str, alg: str = "HS256") -> KeyRing:
        """A ring holding one symmetric secret the integrator already has.

        A ``str`` is used as its UTF-8 bytes (not base64-decoded).

        Args:
            secret: At least 32 bytes of key material (exactly 32 for ``"dir"``).
            kid: The key id.
            alg: ``"HS256"`` or ``"dir"``.

        Raises:
            ConfigurationError: the codes of `check_secret()` (``key_too_short``,
                ``key_size_invalid``, ``key_whitespace``, ``key_not_ascii``,
                ``key_placeholder``, ``key_low_entropy``, ``key_is_pem``),
                ``alg_not_allowed``, ``kid_invalid``.
        """
        checked = _check_alg(alg)
        if checked not in {"HS256", "dir"}:
            msg = "a secret can only back an HS256 or dir key"
            raise _config_error(msg, InvalidKeys.ALG_NOT_ALLOWED)
        kid = _check_kid(kid)
        raw = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
        entry = _Entry(kid=kid, alg=checked, key=_key_from_secret(raw, checked), retire_at=None)
        return cls(entries=(entry,), active=kid)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> KeyRing:
        """Load a ring from a JWK Set file, as ``pausetoken keygen -o FILE`` writes it.

        The file's mode is checked first (see `read_keys_file()`): a file other users
        may write is refused, one they may read is loaded with a warning.

        Examples:
            ```python
            ring = KeyRing.from_file("pausetoken-keys.json")
            ```

        Raises:
            ConfigurationError: ``settings_file_unreadable`` when the file cannot be read,
                ``key_file_insecure``, or any code of `from_jwks()`; the message names
                the path.
        """
        try:
            text = read_keys_file(path)
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            msg = f"cannot read the key file {os.fspath(path)}: {reason or type(exc).__name__}"
            raise _config_error(msg, InvalidSettings.SETTINGS_FILE_UNREADABLE) from exc
        try:
            return cls.from_jwks(text)
        except ConfigurationError as exc:
            msg = f"the key file {os.fspath(path)}: {exc.detail}"
            raise _config_error(msg, exc.code) from exc

    @classmethod
    def from_jwks(cls, jwks: str | Mapping[str, Any]) -> KeyRing:
        """Load a ring from a JWK Set (JSON text or a parsed mapping); see the class docs.

        Text that is not JSON but PEM, OpenSSH or PuTTY key material is refused with
        ``key_is_pem``; a single JWK or a bare array of JWKs with ``jwks_invalid`` and a
        message that says so.

        Raises:
            ConfigurationError: ``jwks_invalid``, ``key_is_pem``, ``key_alg_mismatch``,
                ``key_ops_invalid``, ``key_invalid`` (also for an Ed25519 ``x`` that is not
                the public half of its ``d``), the key-strength codes of
                `from_secret()`, ``alg_not_allowed``, ``duplicate_kid``,
                ``empty_keyring`` or ``no_active_key``.
        """
        data = _parse_jwks_text(jwks) if isinstance(jwks, str) else jwks
        _refuse_other_shapes(data)
        if not isinstance(data, Mapping):
            msg = "a JWKS is a JSON object with a 'keys' array"
            raise _config_error(msg, InvalidKeys.JWKS_INVALID)
        unknown = set(data) - _JWKS_MEMBERS
        if unknown:
            msg = "the JWKS has members other than 'keys' and 'active'"
            raise _config_error(msg, InvalidKeys.JWKS_INVALID)
        keys = data.get("keys")
        if not isinstance(keys, list | tuple):
            msg = "a JWKS is a JSON object with a 'keys' array"
            raise _config_error(msg, InvalidKeys.JWKS_INVALID)
        parsed = [_entry_from_jwk(jwk) for jwk in keys]
        entries = tuple(entry for entry, _ops in parsed)
        active = data.get("active")
        if active is None:
            current = [e.kid for e in entries if e.retire_at is None]
            if len(current) != 1:
                msg = "name the signing key with a top-level 'active' member"
                raise _config_error(
                    msg, InvalidKeys.NO_ACTIVE_KEY if entries else InvalidKeys.EMPTY_KEYRING
                )
            active = current[0]
        if not isinstance(active, str):
            msg = "'active' must be the kid of the signing key"
            raise _config_error(msg, InvalidKeys.NO_ACTIVE_KEY)
        ring = cls(entries=entries, active=active)
        for entry, ops in parsed:
            make = _OPS[_USE[entry.alg]][0]
            if entry.kid == ring.active and entry.private and ops is not None and make not in ops:
                msg = f"key {entry.kid!r} signs, but its 'key_ops' do not include {make!r}"
                raise _config_error(msg, InvalidKeys.KEY_OPS_INVALID)
        return ring

    # -- views -------------------------------------------------------------------------------

    @property
    def kids(self) -> tuple[str, ...]:
        """Every key id in the ring, the active one first."""
        return (self.active, *(e.kid for e in self._entries if e.kid != self.active))

    @property
    def algorithms(self) -> frozenset[str]:
        """The algorithms the ring's keys are used with (the verifier's allow-list)."""
        return frozenset(e.alg for e in self._entries)

    @property
    def active_algorithm(self) -> str:
        """The algorithm of the signing key."""
        return self._index[self.active].alg

    @property
    def can_sign(self) -> bool:
        """Whether the ring holds the private half of its active key."""
        return self._index[self.active].private

    def signing_key(self) -> tuple[str, JoseKey, str]:
        """The active key: ``(kid, key, alg)``.

        Raises:
            ConfigurationError: ``key_cannot_sign`` for a verify-only ring.
        """
        entry = self._index[self.active]
        if not entry.private:
            msg = "this key ring is verify-only; it holds no private signing key"
            raise _config_error(msg, InvalidKeys.KEY_CANNOT_SIGN)
        return entry.kid, entry.key, entry.alg

    def key_for(self, kid: str, *, now: float) -> tuple[JoseKey, str]:
        """The key that verifies tokens carrying ``kid`` at time ``now``.

        Args:
            kid: The token header's ``kid``.
            now: Seconds since the epoch.

        Returns:
            ``(key, alg)``: the key object and the one algorithm it is used with.

        Raises:
            InvalidToken: ``token_key_unknown`` or ``token_key_retired``.
        """
        entry = self._index.get(kid)
        if entry is None:
            msg = "the token names a key this service does not have"
            raise InvalidToken(msg, code=InvalidToken.TOKEN_KEY_UNKNOWN)
        if entry.retire_ts is not None and now >= entry.retire_ts:
            msg = "the token's key has been retired"
            raise InvalidToken(msg, code=InvalidToken.TOKEN_KEY_RETIRED)
        return entry.key, entry.alg

    def retirement(self, kid: str) -> datetime | None:
        """When ``kid`` stops verifying, or ``None`` for the active key.

        Raises:
            KeyError: if the ring has no such key.
        """
        return self._index[kid].retire_at

    # -- derivation --------------------------------------------------------------------------

    def rotate(
        self,
        new: KeyRing | None = None,
        *,
        alg: str | None = None,
        grace: timedelta,
        now: datetime | None = None,
    ) -> KeyRing:
        """A new ring whose signing key is fresh; the old one verifies until ``now + grace``.

        Keys already past their deadline are dropped; keys still in their grace period keep
        their deadline.

        Args:
            new: The ring whose keys to add and whose active key signs from now on; a key is
                generated when omitted.
            alg: The algorithm of the generated key (the current one's by default).
            grace: How long the previous signing key keeps verifying. Use at least the token
                lifetime plus leeway so tokens minted just before the rotation stay valid.
            now: The current time (aware); the wall clock by default.

        Raises:
            ConfigurationError: ``duplicate_kid``, ``alg_not_allowed``, ``grace_invalid`` or
                ``naive_datetime``.
        """
        if not isinstance(grace, timedelta) or grace < timedelta(0):
            msg = "grace must be a non-negative timedelta"
            raise _config_error(msg, InvalidKeys.GRACE_INVALID)
        moment = datetime.now(UTC) if now is None else _aware(now, "now")
        if new is None:
            new = KeyRing.generate(self.active_algorithm if alg is None else alg)
        elif alg is not None and new.active_algorithm != alg:
            msg = "the new ring's signing key does not use the requested algorithm"
            raise _config_error(msg, InvalidKeys.KEY_ALG_MISMATCH)
        deadline = moment + grace
        kept = tuple(
            e.with_retirement(deadline) if e.kid == self.active else e
            for e in self._entries
            if e.kid == self.active or e.retire_at is None or e.retire_at > moment
        )
        ring = KeyRing(entries=(*new._entries, *kept), active=new.active)  # noqa: SLF001
        logger.info(
            "rotated signing key to kid %s; kid %s verifies until %s",
            ring.active,
            self.active,
            deadline.isoformat(),
        )
        return ring

    def verify_only(self) -> KeyRing:
        """The same ring with public keys only: it verifies but cannot sign.

        Raises:
            ConfigurationError: ``key_no_public_half`` for symmetric (HS256, dir) keys.
        """
        entries = []
        for e in self._entries:
            if e.alg in {"HS256", "dir"}:
                msg = "symmetric keys have no public half; a verify-only ring needs EdDSA or ES256"
                raise _config_error(msg, InvalidKeys.KEY_NO_PUBLIC_HALF)
            public = type(e.key).import_key(e.key.as_dict(private=False))
            entries.append(_Entry(kid=e.kid, alg=e.alg, key=public, retire_at=e.retire_at))
        return KeyRing(entries=tuple(entries), active=self.active)

    def to_jwks(self, *, private: bool = True) -> dict[str, Any]:
        """Export the ring as a JWKS (see the class docs for the format).

        Args:
            private: Include private key material. ``False`` exports the public halves,
                which is refused for symmetric keys.

        Raises:
            ConfigurationError: ``key_no_public_half`` when ``private=False`` and the ring
                holds symmetric keys.
        """
        keys = []
        for e in self._entries:
            if not private and e.alg in {"HS256", "dir"}:
                msg = "symmetric keys have no public half to export"
                raise _config_error(msg, InvalidKeys.KEY_NO_PUBLIC_HALF)
            jwk: dict[str, Any] = dict(e.key.as_dict(private=private and e.private))
            jwk.update(kid=e.kid, alg=e.alg, use=_USE[e.alg])
            if e.retire_at is not None:
                seconds = e.retire_at.timestamp()
                jwk["retire_at"] = int(seconds) if seconds.is_integer() else seconds
            keys.append(jwk)
        return {"active": self.active, "keys": keys}

    def __repr__(self) -> str:
        described = ", ".join(e.describe() for e in self._entries)
        return f"KeyRing(active={self.active!r}, keys=[{described}])"


def read_keys_file(path: str | os.PathLike[str]) -> str:
    """Read a key file (a JWKS), refusing one that other users may write.

    The mode is read from the open file, so it is the file that is read that is judged. A
    file that group or others may read, or group may write, is read with a warning on the
    ``pausetoken.keys`` logger (it names the path and the mode, never the content): keep
    key files ``chmod 600``, as ``pausetoken keygen -o`` writes them. On Windows, where
    modes do not describe access, no check is made.

    Args:
        path: The key file.

    Returns:
        Its text (UTF-8).

    Raises:
        ConfigurationError: ``key_file_insecure`` when others may write the file.
        OSError: the file cannot be opened or read.
        UnicodeDecodeError: the file is not UTF-8.
    """
    with Path(path).open("rb") as file:
        if sys.platform != "win32":
            _check_key_file_mode(os.fspath(path), os.fstat(file.fileno()).st_mode)
        return file.read().decode("utf-8")


def _check_key_file_mode(path: str, mode: int) -> None:
    shown = f"{stat.S_IMODE(mode):03o}"
    if mode & stat.S_IWOTH:
        msg = f"the key file {path} can be written by other users (mode {shown}); chmod 600 it"
        raise _config_error(msg, InvalidKeys.KEY_FILE_INSECURE)
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        logger.warning(
            "key file %s can be read or written by group or others (mode %s); chmod 600 it",
            path,
            shown,
        )


def ring_keys(ring: KeyRing) -> tuple[tuple[str, Algorithm, JoseKey], ...]:
    """Every key of ``ring`` as ``(kid, alg, key)``, retired or not, for a signer's set-up.

    Retirement is still checked per token by `KeyRing.key_for()`.
    """
    return tuple((e.kid, e.alg, e.key) for e in ring._entries)  # noqa: SLF001
