"""PauseTokenStateCodec: round trips, tampering, rotation, limits; only InvalidRequestState."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.server.request_state import InvalidRequestState

from pausetoken import KeyRing, SealedSigner
from pausetoken.exceptions import ConfigurationError
from pausetoken_mcp import PauseTokenStateCodec

SEALING = KeyRing.generate("dir")
CODEC = PauseTokenStateCodec(SEALING)
SIGNING = PauseTokenStateCodec(KeyRing.generate(), signed_only=True)


@given(st.binary(max_size=2048))
def test_a_sealed_state_unseals_to_the_same_bytes(payload: bytes) -> None:
    assert CODEC.unseal(CODEC.seal(payload)) == payload


@given(st.binary(max_size=2048))
def test_a_signed_state_unseals_to_the_same_bytes(payload: bytes) -> None:
    assert SIGNING.unseal(SIGNING.seal(payload)) == payload


def test_a_sealed_state_hides_its_payload() -> None:
    sealed = CODEC.seal(b'{"order":"order-1"}')
    assert "order" not in sealed
    assert "b3JkZXI" not in sealed  # nor its base64


@given(st.integers(min_value=0), st.sampled_from("AQgw_-"))
def test_any_changed_character_is_refused(position: int, character: str) -> None:
    sealed = CODEC.seal(b'{"v":1}')
    at = position % len(sealed)
    if sealed[at] == character or sealed[at] == ".":
        return
    tampered = sealed[:at] + character + sealed[at + 1 :]
    with pytest.raises(InvalidRequestState):
        CODEC.unseal(tampered)


@pytest.mark.parametrize(
    "state",
    ["", "v1.abc", "a.b.c.d.e", "....", "\x00", "é" * 10, "a" * 20_000, "eyJhbGciOiJub25lIn0.e30."],
)
def test_malformed_states_are_invalid_request_state(state: str) -> None:
    with pytest.raises(InvalidRequestState) as refused:
        CODEC.unseal(state)
    assert str(refused.value) in {"too_large", "malformed", "not_a_request_state"} or str(
        refused.value
    ).startswith("token_")


def test_a_state_sealed_on_another_ring_is_refused() -> None:
    other = PauseTokenStateCodec(KeyRing.generate("dir"))
    with pytest.raises(InvalidRequestState):
        CODEC.unseal(other.seal(b"{}"))


def test_a_signed_state_is_not_accepted_by_the_sealing_codec() -> None:
    with pytest.raises(InvalidRequestState):
        CODEC.unseal(SIGNING.seal(b"{}"))


def test_after_rotation_old_states_still_unseal_and_new_ones_use_the_new_key() -> None:
    ring = KeyRing.generate("dir")
    before = PauseTokenStateCodec(ring)
    old_state = before.seal(b"old")
    new_ring = ring.rotate(grace=timedelta(hours=1))
    after = PauseTokenStateCodec(new_ring)
    assert after.unseal(old_state) == b"old"
    new_state = after.seal(b"new")
    with pytest.raises(InvalidRequestState):
        before.unseal(new_state)  # a worker on the old ring does not know the new kid


def test_a_pause_token_sealed_with_the_same_ring_is_not_a_request_state() -> None:
    token = SealedSigner(SEALING).sign({"jti": "x", "name": "refund"})
    with pytest.raises(InvalidRequestState) as refused:
        CODEC.unseal(token)
    assert str(refused.value) == "not_a_request_state"


def test_a_state_over_the_limit_is_refused_before_parsing() -> None:
    small = PauseTokenStateCodec(SEALING, max_bytes=300)
    with pytest.raises(InvalidRequestState) as refused:
        small.unseal("x" * 301)
    assert str(refused.value) == "too_large"
    with pytest.raises(InvalidRequestState):
        small.seal(b"x" * 400)


def test_the_mode_must_fit_the_ring() -> None:
    with pytest.raises(ConfigurationError):
        PauseTokenStateCodec(KeyRing.generate())  # signing keys cannot seal
    with pytest.raises(ConfigurationError):
        PauseTokenStateCodec(SEALING, max_bytes=0)


def test_the_repr_shows_no_key() -> None:
    assert repr(CODEC) == "PauseTokenStateCodec(sealed, max_bytes=16384)"
