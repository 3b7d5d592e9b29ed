"""Compact-token primitives: canonical base64url and the compact shape."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pausetoken._compact import (
    MAX_PAYLOAD_DEPTH,
    _parse_json_text,
    b64url_decode,
    b64url_encode,
    parse_payload,
    split_token,
)
from pausetoken.exceptions import InvalidToken

_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")
_texts = st.text(
    st.sampled_from("ABCXYZabcxyz0189-_+/= \n.\x00éß\u2028") | st.characters(), max_size=12
)


def _reference(text: str) -> bytes | None:
    """Canonical base64url as a regular expression and a round trip define it."""
    if _BASE64URL.fullmatch(text) is None or len(text) % 4 == 1:
        return None
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    return data if b64url_encode(data) == text else None


def _decoded(text: str) -> bytes | None:
    try:
        return b64url_decode(text)
    except ValueError:
        return None


@given(_texts | st.binary(max_size=12).map(b64url_encode))
def test_only_canonical_base64url_decodes(text: str) -> None:
    assert _decoded(text) == _reference(text)


@given(st.binary(max_size=64))
def test_encoding_then_decoding_gives_the_bytes_back(data: bytes) -> None:
    assert b64url_decode(b64url_encode(data)) == data


# The compact shapes by definition: a signed token's signature and a sealed token's encrypted
# key may be empty (the signers refuse both after reading the header); no other segment may.
_SEG, _OPT = "[A-Za-z0-9_-]+", "[A-Za-z0-9_-]*"
_SHAPES = {
    3: re.compile(rf"{_SEG}\.{_SEG}\.{_OPT}"),
    5: re.compile(rf"{_SEG}\.{_OPT}\.{_SEG}\.{_SEG}\.{_SEG}"),
}
# Segments of zero to five characters (every length modulo 4, the one-character remainder
# that is never canonical included), joined by '.', with stray characters mixed in.
_segments = st.text(st.sampled_from("AQgw_-Zz09"), max_size=5)
_tokens = st.lists(_segments, min_size=1, max_size=6).map(".".join) | st.text(
    st.sampled_from("AQw-_.= +/\n\u00e9\x00"), max_size=14
)


def _splits(token: str, segments: int) -> list[str] | str:
    """The segments, or the refusal's code."""
    try:
        return split_token(token, max_token_bytes=8192, segments=segments)
    except InvalidToken as exc:
        return exc.code


@pytest.mark.parametrize("segments", [3, 5])
@given(token=_tokens)
@example(token="AA.AQ.AA")
@example(token="AA.AQ.")
@example(token="AA..AA")
@example(token=".AQ.AA")
@example(token="AA..AA.AA.AA")
@example(token="AA.AA..AA.AA")
@example(token="AA.AA.AA.AA.")
@example(token="AA.A.AA")
@example(token="AA.AQ.AA\n")
def test_a_token_splits_exactly_when_it_has_the_compact_shape(segments: int, token: str) -> None:
    canonical = all(_reference(part) is not None for part in token.split("."))
    compact = _SHAPES[segments].fullmatch(token) is not None and canonical
    expected = token.split(".") if compact else "token_malformed"
    assert _splits(token, segments) == expected


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def _payload_texts(draw: st.DrawFn) -> str:
    """JSON texts a payload may be: compact or spaced, padded, with a duplicate or trailing data."""
    value = draw(st.dictionaries(st.text(max_size=3), _json_values, max_size=4) | _json_values)
    spaced = draw(st.booleans())
    text = json.dumps(value, separators=(", ", ": ") if spaced else (",", ":"))
    if draw(st.booleans()) and text.startswith("{") and len(text) > 2:
        text = text[:-1] + ',"k":1,"k":2}'  # a duplicate member
    before = draw(st.sampled_from(["", "", " ", "\n", "\ufeff"]))
    after = draw(st.sampled_from(["", "", " ", "\t", "x", "{}", ",1"]))
    return before + text + after


def _parsed(raw: bytes) -> Any:
    """What parse_payload() returns, or its refusal's code and detail."""
    try:
        return parse_payload(raw)
    except InvalidToken as exc:
        return (exc.code, exc.detail)


def _parsed_in_full(raw: bytes) -> Any:
    """parse_payload() as the full parse reads a payload (the whitespace scans included)."""
    code = InvalidToken.TOKEN_PAYLOAD_INVALID
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return (code, "the token payload is not UTF-8")
    try:
        value = _parse_json_text(text, code, "payload")
    except InvalidToken as exc:
        return (exc.code, exc.detail)
    return value


@given(_payload_texts())
@example('{"a":1}')
@example(' {"a":1}')
@example('{"a":1} ')
@example('{"a":1,"a":2}')
@example('{"a":1}{"b":2}')
@example("[1]")
@example('"text"')
@example("")
def test_a_payload_reads_as_the_full_parse_reads_it(text: str) -> None:
    raw = text.encode("utf-8")
    assert _parsed(raw) == _parsed_in_full(raw)


@pytest.mark.parametrize("depth", [MAX_PAYLOAD_DEPTH - 1, MAX_PAYLOAD_DEPTH, MAX_PAYLOAD_DEPTH + 1])
@pytest.mark.parametrize("bracket", ["[", "{"])
def test_a_payload_nested_over_the_limit_is_refused(depth: int, bracket: str) -> None:
    inner = "[" * depth + "]" * depth if bracket == "[" else '{"a":' * depth + "1" + "}" * depth
    result = _parsed(f'{{"x":{inner}}}'.encode())
    if depth + 1 > MAX_PAYLOAD_DEPTH:
        assert result[0] == "token_payload_invalid"
        assert "nested" in result[1]
    else:
        assert isinstance(result, dict)
