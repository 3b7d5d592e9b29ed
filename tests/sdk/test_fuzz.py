"""Generated hostile input to verify, redeem and consume: typed errors only, nothing echoed.

Random bytes and text; random JSON headers and payloads signed with the service's real key;
mutations of a valid token (bit flips, truncation, segment swaps, base64 padding, duplicated
members); oversized and deeply nested JSON. Every refusal must be a `PauseTokenError`
subclass, and no part of what was submitted may come back in its message, detail, repr or
problem details. The atheris target in ``tests/fuzz/`` drives the same verifier with coverage.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import secrets
import string
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pausetoken import (
    Interrupt,
    JoseSigner,
    KeyRing,
    MemoryCheckpoints,
    MemoryStore,
    MemoryStoreWarning,
    PauseTokens,
)
from pausetoken.exceptions import PauseTokenError
from scaffolding import ACME

SECRET = secrets.token_bytes(32)
KID = "fuzz-key"
ANSWER = {"approved": True}

# Cheap inputs get more examples than the quick profile's ten; the CI profile's count is
# higher. Generated JSON is slow to draw: it keeps the profile's count.
FUZZ = settings(
    max_examples=max(50, settings().max_examples),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
JSON_FUZZ = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _service() -> PauseTokens:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        store = MemoryStore()
    tokens = PauseTokens(
        signer=JoseSigner(KeyRing.from_secret(SECRET, kid=KID)),
        store=store,
        checkpoints=MemoryCheckpoints(),
    )
    tokens.register(Interrupt("refund", payload=dict, response=dict))
    return tokens


async def _valid_token(tokens: PauseTokens) -> str:
    event = await tokens.mint("refund", {"order": "o-1"}, scope=ACME, thread_id="t-1", run_id="r-1")
    return event.token


TOKENS = _service()
VALID = asyncio.run(_valid_token(TOKENS))
HEADER, PAYLOAD, SIGNATURE = VALID.split(".")


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64(segment: str) -> bytes:
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


def sign(header: bytes, payload: bytes) -> str:
    """A compact JWS over raw header and payload bytes, signed with the service's key."""
    signing_input = f"{b64(header)}.{b64(payload)}".encode("ascii")
    mac = hmac.new(SECRET, signing_input, hashlib.sha256).digest()
    return f"{signing_input.decode('ascii')}.{b64(mac)}"


# -- what must hold for every input ---------------------------------------------------------


def _secret_parts(token: str) -> set[str]:
    """The parts of the input an error must not show (long enough to be recognisable)."""
    parts = {token, *token.split(".")}
    return {part for part in parts if len(part) >= 12}


def assert_refused_quietly(exc: BaseException, token: str, *also: str) -> None:
    assert isinstance(exc, PauseTokenError), f"{type(exc).__name__} is not a PauseTokenError"
    shown = [str(exc), exc.detail, repr(exc), json.dumps(exc.to_problem())]
    for part in _secret_parts(token) | {value for value in also if len(value) >= 12}:
        assert not any(part in text for text in shown), f"{exc.code} echoes the input"


def check_verify(token: str, *also: str) -> None:
    try:
        TOKENS.verify(token)
    except Exception as exc:  # the point: which exceptions come out
        assert_refused_quietly(exc, token, *also)
    else:
        pytest.fail("a generated token verified")


async def _consume(token: str) -> None:
    await TOKENS.consume(token, ANSWER, scope=ACME)


async def _redeem(token: str) -> None:
    async with TOKENS.redeem(token, ANSWER, scope=ACME):
        pytest.fail("the body of a generated token ran")


def check_redeem(token: str, *also: str) -> None:
    for call in (_consume, _redeem):
        try:
            asyncio.run(call(token))
        except Exception as exc:  # the point: which exceptions come out
            assert_refused_quietly(exc, token, *also)
        else:
            pytest.fail("a generated token was redeemed")


def check(token: str, *also: str) -> None:
    check_verify(token, *also)
    check_redeem(token, *also)


# -- strategies ------------------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
header_values = st.fixed_dictionaries(
    {},
    optional={
        "alg": st.sampled_from(["HS256", "none", "RS256", "EdDSA", "dir", "HS512"]) | json_values,
        "typ": st.sampled_from(["pause+jwt", "JWT", ""]) | json_values,
        "kid": st.sampled_from([KID, "other"]) | json_values,
        "crit": json_values,
        "jku": st.just("https://attacker.example/keys"),
        "b64": st.booleans(),
        "zip": st.just("DEF"),
    },
).flatmap(
    lambda fixed: st.dictionaries(st.text(max_size=8), json_values, max_size=3).map(
        lambda extra: {**extra, **fixed}
    )
)
claim_values = st.fixed_dictionaries(
    {},
    optional={
        name: json_values
        | st.integers(0, 2**40)
        | st.text(alphabet=string.hexdigits.lower(), min_size=64, max_size=64)
        for name in (
            "iss",
            "aud",
            "iat",
            "exp",
            "nbf",
            "jti",
            "name",
            "interrupt_id",
            "run_id",
            "session_id",
            "thread_id",
            "checkpoint_id",
            "scope_hash",
            "request_hash",
            "ver",
            "sub",
            "ns",
        )
    },
).flatmap(
    lambda fixed: st.dictionaries(st.text(max_size=8), json_values, max_size=3).map(
        lambda extra: {**extra, **fixed}
    )
)


def nested(depth: int, *, as_list: bool) -> str:
    return ("[" * depth + "]" * depth) if as_list else ('{"a":' * depth + "1" + "}" * depth)


# -- verify, redeem and consume --------------------------------------------------------------


@FUZZ
@given(data=st.binary(max_size=600))
@example(data=b"")
@example(data=b"\xff\xfe")
@example(data=VALID.encode() + b"\x00")
def test_random_bytes_are_refused_with_typed_errors(data: bytes) -> None:
    check(data.decode("latin-1"))
    check(data.decode("utf-8", "surrogateescape"))


@FUZZ
@given(text=st.text(max_size=300) | st.from_regex(r"[A-Za-z0-9_\-.=+/ ]{0,300}", fullmatch=True))
def test_random_text_is_refused_with_typed_errors(text: str) -> None:
    check(text)


@JSON_FUZZ
@given(header=header_values, claims=claim_values)
def test_random_json_signed_with_the_real_key_is_refused_with_typed_errors(
    header: dict[str, Any], claims: dict[str, Any]
) -> None:
    token = sign(json.dumps(header).encode(), json.dumps(claims).encode())
    values = [v for v in (*header.values(), *claims.values()) if isinstance(v, str)]
    check(token, *values)


@JSON_FUZZ
@given(claims=claim_values, raw=st.binary(max_size=200))
def test_a_real_header_over_any_payload_bytes_is_refused_with_typed_errors(
    claims: dict[str, Any], raw: bytes
) -> None:
    header = unb64(HEADER)
    check(sign(header, raw))
    check(sign(header, json.dumps(claims, ensure_ascii=False).encode("utf-8", "surrogatepass")))


@FUZZ
@given(data=st.data())
def test_bit_flips_in_any_segment_are_refused(data: st.DataObject) -> None:
    segments = VALID.split(".")
    which = data.draw(st.integers(0, 2))
    raw = bytearray(unb64(segments[which]))
    position = data.draw(st.integers(0, len(raw) - 1))
    raw[position] ^= 1 << data.draw(st.integers(0, 7))
    segments[which] = b64(bytes(raw))
    check(".".join(segments))


@FUZZ
@given(data=st.data())
def test_truncations_are_refused(data: st.DataObject) -> None:
    end = data.draw(st.integers(0, len(VALID) - 1))
    start = data.draw(st.integers(0, min(end, 40)))
    check(VALID[start:end])


@pytest.mark.parametrize(
    "order", [(1, 0, 2), (0, 2, 1), (2, 1, 0), (0, 0, 2), (1, 1, 2), (0, 1), (0, 1, 2, 2)]
)
def test_swapped_repeated_or_missing_segments_are_refused(order: tuple[int, ...]) -> None:
    segments = VALID.split(".")
    check(".".join(segments[i] for i in order))


@FUZZ
@given(
    which=st.integers(0, 2),
    padding=st.sampled_from(["=", "==", "===", "%3D", " ", "\n"]),
    where=st.sampled_from(["end", "start"]),
)
def test_base64_padding_or_whitespace_in_a_segment_is_refused(
    which: int, padding: str, where: str
) -> None:
    segments = VALID.split(".")
    segments[which] = segments[which] + padding if where == "end" else padding + segments[which]
    check(".".join(segments))


def test_the_standard_base64_alphabet_is_refused() -> None:
    standard = VALID.replace("-", "+").replace("_", "/")
    if standard != VALID:
        check(standard)


@pytest.mark.parametrize("member", ["alg", "typ", "kid"])
def test_a_duplicated_header_member_is_refused(member: str) -> None:
    header = unb64(HEADER).decode()
    value = json.dumps(json.loads(header)[member])
    duplicated = header[:-1] + f',"{member}":{value}}}'
    check(sign(duplicated.encode(), unb64(PAYLOAD)))


@pytest.mark.parametrize("member", ["jti", "exp", "scope_hash", "name"])
def test_a_duplicated_claim_is_refused(member: str) -> None:
    payload = unb64(PAYLOAD).decode()
    value = json.dumps(json.loads(payload)[member])
    duplicated = payload[:-1] + f',"{member}":{value}}}'
    check(sign(unb64(HEADER), duplicated.encode()))


@pytest.mark.parametrize("depth", [17, 100, 1_000, 100_000])
@pytest.mark.parametrize("as_list", [True, False], ids=["arrays", "objects"])
def test_deeply_nested_json_is_refused(depth: int, as_list: bool) -> None:
    inner = nested(depth, as_list=as_list)
    check(sign(unb64(HEADER), f'{{"x":{inner}}}'.encode()))
    check(sign(f'{{"alg":"HS256","x":{inner}}}'.encode(), unb64(PAYLOAD)))


@pytest.mark.parametrize("size", [4_097, 65_536, 1_048_576])
def test_oversized_tokens_are_refused(size: int) -> None:
    claims = json.loads(unb64(PAYLOAD))
    claims["pad"] = "x" * size
    check(sign(unb64(HEADER), json.dumps(claims).encode()))
    check("a" * size)


@pytest.mark.parametrize(
    "number", ["1e400", "-1e400", "NaN", "Infinity", "1" * 5_000, "1.5", "-0", "1e2"]
)
def test_odd_numbers_in_time_claims_are_refused(number: str) -> None:
    payload = unb64(PAYLOAD).decode()
    claims = json.loads(payload)
    text = payload.replace(f'"exp":{claims["exp"]}', f'"exp":{number}')
    assert text != payload
    check(sign(unb64(HEADER), text.encode()))
