"""Compact-token primitives: canonical base64url and the compact shape."""

from __future__ import annotations

import base64
import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pausetoken._compact import b64url_decode, b64url_encode, split_token
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
