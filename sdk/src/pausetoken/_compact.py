"""Compact tokens and the strict encodings under them, parsed in one place.

The signers and [`decode_unverified()`][pausetoken.decode_unverified] split and parse tokens
here; the key set decodes its base64url and JSON with the same primitives. Everything is
strict: canonical base64url only (no padding, no unused bits, so a token cannot be altered
while it still verifies), JSON objects without duplicate members or non-finite numbers,
and fixed bounds on what is parsed before anything is authenticated.
"""

from __future__ import annotations

import binascii
import json
import re
from typing import Any, Final, NoReturn

from pausetoken.exceptions import Code, InvalidToken

__all__ = [
    "MAX_HEADER_CHARS",
    "MAX_HEADER_NUMBER_CHARS",
    "MAX_PAYLOAD_DEPTH",
    "DuplicateMember",
    "b64decode_segment",
    "b64url_decode",
    "b64url_encode",
    "no_duplicates",
    "parse_header",
    "parse_payload",
    "split_token",
]

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

_BASE64URL: Final = re.compile(r"[A-Za-z0-9_-]*")
# The one segment that may be empty: a signed token's signature, a sealed token's encrypted
# key. Both are refused after the header, so that an unsecured ('none') or key-wrapping
# token is reported as the algorithm it names.
_MAY_BE_EMPTY: Final = {3: 2, 5: 1}
# Members that carry a key, a certificate or processing rules (RFC 7515 §4.1, RFC 7797).
_FORBIDDEN_NAME: Final = re.compile(rb'"(crit|b64|zip|jku|jwk|x5u|x5c)"[ \t\r\n]*:')

_URLSAFE_TO_STANDARD: Final = bytes.maketrans(b"-_", b"+/")
_STANDARD_TO_URLSAFE: Final = bytes.maketrans(b"+/", b"-_")
_ALPHABET: Final = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_B64_VALUES: Final = {c: i for i, c in enumerate(_ALPHABET.decode("ascii"))}
_TOKEN_ALPHABET: Final = _ALPHABET + b"."


def _fail(code: Code, msg: str) -> NoReturn:
    raise InvalidToken(msg, code=code)


# -- base64url and JSON, for tokens and key sets alike ------------------------------------


def b64url_encode(data: bytes) -> str:
    """Base64url without padding."""
    # binascii directly: base64.urlsafe_b64encode() is the same through two more calls.
    return (
        binascii.b2a_base64(data, newline=False)
        .translate(_STANDARD_TO_URLSAFE)
        .rstrip(b"=")
        .decode("ascii")
    )


def b64url_decode(text: str) -> bytes:
    """Decode canonical base64url: the URL-safe alphabet, no padding, no unused bits set.

    Raises:
        ValueError: for anything else (callers raise their own typed error from it).
    """
    # What _BASE64URL matches, checked by deleting the alphabet from the ASCII bytes: the
    # regular expression costs several times more on a token's payload.
    raw = text.encode("ascii") if text.isascii() else b"?"
    if raw.translate(None, _ALPHABET) or not _canonical_end(text):
        msg = "not canonical base64url without padding"
        raise ValueError(msg)
    try:
        return _a2b(raw)
    except binascii.Error as exc:
        msg = "not base64url"
        raise ValueError(msg) from exc


def _a2b(raw: bytes) -> bytes:
    """Decode base64url bytes of the alphabet, padding them; `binascii.Error` otherwise."""
    return binascii.a2b_base64(
        raw.translate(_URLSAFE_TO_STANDARD) + b"=" * (-len(raw) % 4), strict_mode=True
    )


def _canonical_end(text: str) -> bool:
    """Whether the last group of base64url ``text`` leaves no bit unused but zero."""
    rest = len(text) % 4
    if rest == 0:
        return True
    # A final group of 2 or 3 characters carries 4 or 2 unused bits; they must be zero.
    return rest != 1 and not _B64_VALUES[text[-1]] & (0x0F if rest == 2 else 0x03)  # noqa: PLR2004


class DuplicateMember(ValueError):
    """A JSON object names one member twice (raised by `no_duplicates`)."""


def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON ``object_pairs_hook`` refusing duplicate members with `DuplicateMember`."""
    out = dict(pairs)
    if len(out) != len(pairs):
        raise DuplicateMember
    return out


# -- compact tokens -------------------------------------------------------------------------


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
        _fail(InvalidToken.TOKEN_MALFORMED, "a token must be a string")
    if len(token) > max_token_bytes:
        _fail(InvalidToken.TOKEN_TOO_LARGE, f"the token is longer than {max_token_bytes} bytes")
    # Before the shape check, whose cost grows with the token: an oversized header is
    # refused at a fixed cost.
    if len(token) > MAX_HEADER_CHARS and token.find(".", 0, MAX_HEADER_CHARS + 1) == -1:
        _refuse_oversized_header(token)
    parts = token.split(".")
    if not _has_compact_shape(token, parts, segments):
        _fail(InvalidToken.TOKEN_MALFORMED, _what_is_wrong_with(token, segments))
    for part in parts:
        _check_canonical(part)
    return parts


def _has_compact_shape(token: str, parts: list[str], segments: int) -> bool:
    """Whether ``token`` is ``segments`` segments of the base64url alphabet joined by '.'.

    Every segment is non-empty but the one `_MAY_BE_EMPTY` names. The alphabet is checked
    by deleting it from the ASCII bytes: a regular expression costs several times more on a
    whole token.
    """
    if (
        len(parts) != segments
        or not token.isascii()
        or token.encode("ascii").translate(None, _TOKEN_ALPHABET)
    ):
        return False
    empty = parts.count("")
    return empty == 0 or (empty == 1 and not parts[_MAY_BE_EMPTY[segments]])


def _refuse_oversized_header(token: str) -> NoReturn:
    if "." not in token:
        _fail(
            InvalidToken.TOKEN_MALFORMED,
            "a token is segments of base64url without padding, joined by '.'",
        )
    head = token[:_HEADER_SCAN_CHARS].split(".", 1)[0]
    head = head[: len(head) - len(head) % 4]
    if _BASE64URL.fullmatch(head) is None:
        _fail(InvalidToken.TOKEN_MALFORMED, "the token is not canonical base64url")
    found = _FORBIDDEN_NAME.search(b64decode_segment(head))
    if found is not None:
        name = found[1].decode("ascii")
        _fail(
            InvalidToken.TOKEN_HEADER_FORBIDDEN,
            f"the token header has a forbidden member: '{name}'",
        )
    _fail(
        InvalidToken.TOKEN_HEADER_INVALID,
        f"the token header is longer than {MAX_HEADER_CHARS} characters",
    )


def _check_canonical(segment: str) -> None:
    if not _canonical_end(segment):
        _fail(InvalidToken.TOKEN_MALFORMED, "the token is not canonical base64url")


def b64decode_segment(segment: str) -> bytes:
    """Decode one base64url segment already checked by `split_token()`.

    `split_token()` admitted only the base64url alphabet and canonical ends, so the segment
    is decoded without checking them again (`b64url_decode()` checks them for other text).

    Raises:
        InvalidToken: ``token_malformed``.
    """
    try:
        return _a2b(segment.encode("ascii"))
    except (binascii.Error, ValueError) as exc:
        msg = "the token is not valid base64url"
        raise InvalidToken(msg, code=InvalidToken.TOKEN_MALFORMED) from exc


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
_DECODER: Final = json.JSONDecoder(object_pairs_hook=no_duplicates, parse_constant=_no_constants)
# Headers are parsed before anything is authenticated: numbers are bounded too.
_HEADER_DECODER: Final = json.JSONDecoder(
    object_pairs_hook=no_duplicates,
    parse_constant=_no_constants,
    parse_int=_short_int,
    parse_float=_short_float,
)


def _parse_json_text(
    text: str, code: Code, what: str, decoder: json.JSONDecoder = _DECODER
) -> dict[str, Any]:
    try:
        value = decoder.decode(text)
    except DuplicateMember as exc:
        msg = f"the token {what} has duplicate members"
        raise InvalidToken(msg, code=code) from exc
    except (ValueError, RecursionError) as exc:
        msg = f"the token {what} is not UTF-8 JSON with finite numbers"
        raise InvalidToken(msg, code=code) from exc
    if type(value) is not dict:
        _fail(code, f"the token {what} is not a JSON object")
    return value


def _read_object(text: str) -> dict[str, Any] | None:
    """A JSON object that is all of ``text``, as `_parse_json_text` reads it; else ``None``.

    What a signer writes (an object, no whitespace around it) without `JSONDecoder.decode`'s
    whitespace scans. ``None`` for anything else, duplicate members included: the full parse
    then refuses it with its own message.
    """
    try:
        value, end = _DECODER.raw_decode(text)
    except (ValueError, RecursionError):
        return None
    return value if end == len(text) and type(value) is dict else None


def _utf8(raw: bytes, code: Code, what: str) -> str:
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
    code = InvalidToken.TOKEN_HEADER_INVALID
    text = _utf8(b64decode_segment(segment), code, "header")
    return _parse_json_text(text, code, "header", _HEADER_DECODER)


def parse_payload(raw: bytes) -> dict[str, Any]:
    """Decode a payload: a UTF-8 JSON object, no duplicates, no NaN, bounded nesting.

    Raises:
        InvalidToken: ``token_payload_invalid``.
    """
    code = InvalidToken.TOKEN_PAYLOAD_INVALID
    text = _utf8(raw, code, "payload")
    payload = _read_object(text)
    if payload is None:  # anything but one object, alone: as the full parse reads it
        payload = _parse_json_text(text, code, "payload")
    # Nesting cannot exceed the number of opening brackets; walk only when it could.
    if (
        (text.find("{", 1) != -1 or "[" in text)
        and text.count("{") + text.count("[") > MAX_PAYLOAD_DEPTH
        and _too_deep(payload, MAX_PAYLOAD_DEPTH)
    ):
        _fail(
            InvalidToken.TOKEN_PAYLOAD_INVALID,
            f"the token payload is nested over {MAX_PAYLOAD_DEPTH}",
        )
    return payload
