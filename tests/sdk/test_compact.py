"""Compact-token primitives: canonical base64url."""

from __future__ import annotations

import base64
import re

from hypothesis import given
from hypothesis import strategies as st

from pausetoken._compact import b64url_decode, b64url_encode

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
