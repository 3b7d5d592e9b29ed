"""verify_token: claims, types, time, issuer, audience and jti after the signer's checks."""

from __future__ import annotations

import base64
import json
import secrets
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pausetoken import (
    Claims,
    JoseSigner,
    KeyRing,
    SealedSigner,
    Signer,
    TokenPolicy,
    _verify,
    decode_unverified,
    verify_token,
)
from pausetoken._claims import CLAIMS_VERSION
from pausetoken.exceptions import ConfigurationError, InvalidToken, TokenExpired
from pausetoken.testing import strategies as pst

if TYPE_CHECKING:
    from collections.abc import Callable

POLICY = TokenPolicy()
NOW = 1_800_000_000
SIGNERS: dict[str, Signer] = {
    "HS256": JoseSigner(KeyRing.generate("HS256")),
    "EdDSA": JoseSigner(KeyRing.generate("EdDSA")),
    "ES256": JoseSigner(KeyRing.generate("ES256")),
    "sealed": SealedSigner(KeyRing.generate("dir")),
}
SIGNER = SIGNERS["HS256"]


def claims(**changes: Any) -> dict[str, Any]:
    """A valid claim set issued at NOW for one hour; ``changes`` override or (None) drop."""
    base: dict[str, Any] = {
        "iss": "pausetoken",
        "aud": "pausetoken",
        "iat": NOW,
        "exp": NOW + 3600,
        "jti": secrets.token_urlsafe(16),
        "name": "approval",
        "interrupt_id": "int-1",
        "run_id": "run-1",
        "session_id": "",
        "thread_id": "thread-1",
        "checkpoint_id": "ckpt-1",
        "scope_hash": "a" * 64,
        "request_hash": "b" * 64,
        "ver": CLAIMS_VERSION,
    }
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


def refused(
    body: dict[str, Any],
    *,
    now: float = NOW,
    policy: TokenPolicy = POLICY,
    signer: Signer = SIGNER,
) -> InvalidToken:
    with pytest.raises(InvalidToken) as exc_info:
        verify_token(signer.sign(body), signer=signer, policy=policy, now=now)
    return exc_info.value


texts = st.text(min_size=1, max_size=40)


@st.composite
def valid_claims(draw: st.DrawFn) -> tuple[dict[str, Any], int]:
    iat = draw(st.integers(1_000_000_000, 4_000_000_000))
    lifetime = draw(st.integers(1, 7 * 86400))
    now = iat + draw(st.integers(-30, lifetime + 29))
    body: dict[str, Any] = {
        "iss": "pausetoken",
        "aud": "pausetoken",
        "iat": iat,
        "exp": iat + lifetime,
        "jti": draw(pst.jtis()),
        "name": draw(texts),
        "interrupt_id": draw(texts),
        "run_id": draw(texts),
        "session_id": draw(st.text(max_size=40)),
        "thread_id": draw(texts),
        "checkpoint_id": draw(texts),
        "scope_hash": draw(pst.hashes()),
        "request_hash": draw(pst.hashes()),
        "ver": CLAIMS_VERSION,
    }
    for name in ("tool_call_id", "sub"):
        value = draw(st.none() | texts)
        if value is not None:
            body[name] = value
    if draw(st.booleans()):
        body["nbf"] = draw(st.integers(iat - 60, now + 30))
    return body, now


# -- round trip ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SIGNERS)
@given(case=valid_claims())
def test_signed_claims_verify_into_equal_claims(
    name: str, case: tuple[dict[str, Any], int]
) -> None:
    body, now = case
    signer = SIGNERS[name]
    verified = verify_token(signer.sign(body), signer=signer, policy=POLICY, now=now)
    assert isinstance(verified, Claims)
    expected = {k: v for k, v in body.items() if k != "nbf"}
    assert verified.to_dict() == expected


@pytest.mark.parametrize("name", SIGNERS)
@given(data=st.data())
def test_any_change_to_a_valid_token_raises_only_token_errors(
    name: str, data: st.DataObject
) -> None:
    signer = SIGNERS[name]
    token = signer.sign(claims())
    position = data.draw(st.integers(0, len(token)))
    kind = data.draw(st.sampled_from(["flip", "delete", "insert"]))
    char = data.draw(st.characters(codec="utf-8") | st.sampled_from("AZaz09-_.=+/"))
    if kind == "delete":
        mutated = token[:position] + token[position + 1 :]
    elif kind == "insert":
        mutated = token[:position] + char + token[position:]
    else:
        mutated = token[:position] + char + token[position + 1 :]
    if mutated == token:
        return
    with pytest.raises((InvalidToken, TokenExpired)):
        verify_token(mutated, signer=signer, policy=POLICY, now=NOW)


# -- required claims and exact types (rule 7) ----------------------------------------------------

REQUIRED = (
    "iss",
    "aud",
    "iat",
    "exp",
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
)


@pytest.mark.parametrize("missing", REQUIRED)
def test_each_required_claim_must_be_present(missing: str) -> None:
    body = claims()
    del body[missing]
    error = refused(body)
    assert error.code == "token_claims_invalid"
    assert f"'{missing}'" in error.detail


def test_unknown_claims_are_refused() -> None:
    error = refused(claims(role="admin"))
    assert error.code == "token_claims_invalid"
    assert "'role'" in error.detail


@pytest.mark.parametrize(
    ("claim", "value"),
    [
        ("exp", str(NOW + 3600)),
        ("exp", float(NOW + 3600)),
        ("exp", NOW + 3600.5),
        ("iat", True),
        ("iat", -1),
        ("iat", 2**53),
        ("exp", -1),
        ("exp", 2**53),
        ("nbf", -1),
        ("nbf", 2**53),
        ("nbf", "now"),
        ("nbf", False),
        ("ver", 2),
        ("ver", "1"),
        ("ver", True),
        ("name", 7),
        ("name", ""),
        ("name", "x" * 513),
        ("name", ["approval"]),
        ("iss", {"name": "pausetoken"}),
        ("aud", ["pausetoken"]),
        ("jti", 12345),
        ("thread_id", 0),
        ("session_id", 0),
        ("session_id", "s" * 513),
        ("tool_call_id", ""),
        ("tool_call_id", 5),
        ("sub", ""),
        ("sub", False),
        ("ns", ""),
        ("ns", ["graph"]),
        ("scope_hash", "A" * 64),
        ("scope_hash", "a" * 63),
        ("scope_hash", "a" * 64 + "\n"),
        ("request_hash", "g" * 64),
        ("request_hash", 0),
    ],
)
def test_claims_of_the_wrong_type_or_format_are_refused(claim: str, value: Any) -> None:
    error = refused(claims(**{claim: value}))
    assert error.code == "token_claims_invalid"
    assert f"'{claim}'" in error.detail


# Values a claim may be given: every JSON type, and the edges of the checks on each.
claim_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1, 2**53 + 1),
    st.sampled_from([0, 1, 2, 2**53 - 1, 2**53, NOW, CLAIMS_VERSION, 1.0, float(NOW)]),
    st.text(max_size=3),
    st.sampled_from(["", "a" * 512, "a" * 513, "a" * 64, "A" * 64, "a" * 63, "a" * 64 + "\n"]),
    pst.hashes(),
    pst.jtis(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
claim_names = st.sampled_from([*REQUIRED, "tool_call_id", "sub", "ns", "nbf", "role", "NBF"])


@given(
    base=valid_claims(),
    dropped=st.lists(claim_names, max_size=2),
    changed=st.dictionaries(claim_names, claim_values, max_size=2),
)
def test_the_claim_checks_accept_exactly_what_the_detailed_checks_accept(
    base: tuple[dict[str, Any], int], dropped: list[str], changed: dict[str, Any]
) -> None:
    # verify_token() checks a claim set in one pass and, only when that fails, again
    # claim by claim to say what is wrong: the two must agree on every claim set.
    body = {**base[0], **changed}
    for name in dropped:
        body.pop(name, None)
    verified = _verify._well_formed(body)
    try:
        _verify._check_claims(body)
    except InvalidToken:
        assert verified is None
    else:
        assert verified == Claims(**{k: v for k, v in body.items() if k != "nbf"})


def test_the_detail_names_the_claim_but_never_its_value() -> None:
    value = "hunter2-" + secrets.token_hex(8)
    error = refused(claims(scope_hash=value))
    text = str(error) + repr(error) + json.dumps(error.to_problem())
    assert "scope_hash" in text
    assert value not in text


def test_an_empty_session_and_optional_claims_are_accepted() -> None:
    body = claims(session_id="", tool_call_id="call-1", sub="user-7", nbf=NOW)
    verified = verify_token(SIGNER.sign(body), signer=SIGNER, policy=POLICY, now=NOW)
    assert (verified.session_id, verified.tool_call_id, verified.sub) == ("", "call-1", "user-7")


# -- time ------------------------------------------------------------------------------------------


def test_a_token_expires_at_exp_plus_leeway() -> None:
    token = SIGNER.sign(claims())
    exp = NOW + 3600
    assert verify_token(token, signer=SIGNER, policy=POLICY, now=exp + 29).exp == exp
    with pytest.raises(TokenExpired) as exc_info:
        verify_token(token, signer=SIGNER, policy=POLICY, now=exp + 30)
    assert exc_info.value.code == "token_expired"
    strict = TokenPolicy(leeway=timedelta(0))
    with pytest.raises(TokenExpired):
        verify_token(token, signer=SIGNER, policy=strict, now=exp)


def test_iat_in_the_future_beyond_leeway_is_refused() -> None:
    body = claims(iat=NOW + 31, exp=NOW + 3600)
    assert refused(body).code == "token_not_yet_valid"
    assert verify_token(SIGNER.sign(claims(iat=NOW + 30)), signer=SIGNER, policy=POLICY, now=NOW)


def test_nbf_in_the_future_beyond_leeway_is_refused() -> None:
    assert refused(claims(nbf=NOW + 31)).code == "token_not_yet_valid"


def test_a_lifetime_longer_than_the_maximum_is_refused() -> None:
    week = 7 * 86400
    assert refused(claims(exp=NOW + week + 1)).code == "token_lifetime_too_long"
    assert verify_token(SIGNER.sign(claims(exp=NOW + week)), signer=SIGNER, policy=POLICY, now=NOW)
    short = TokenPolicy(max_lifetime=timedelta(minutes=5))
    assert refused(claims(), policy=short).code == "token_lifetime_too_long"


@pytest.mark.parametrize("exp", [NOW, NOW - 1])
def test_exp_must_be_after_iat(exp: int) -> None:
    error = refused(claims(exp=exp), now=NOW - 100)
    assert error.code == "token_claims_invalid"
    assert "'exp'" in error.detail


# -- issuer, audience, jti -------------------------------------------------------------------------


def test_another_issuer_is_refused() -> None:
    assert refused(claims(iss="someone-else")).code == "token_issuer_invalid"
    assert refused(claims(), policy=TokenPolicy(issuer="billing")).code == "token_issuer_invalid"


def test_another_audience_is_refused() -> None:
    assert refused(claims(aud="session")).code == "token_audience_invalid"
    assert refused(claims(), policy=TokenPolicy(audience="x")).code == "token_audience_invalid"


def test_issuer_and_audience_are_configurable() -> None:
    policy = TokenPolicy(issuer="billing", audience="approvals")
    body = claims(iss="billing", aud="approvals")
    assert verify_token(SIGNER.sign(body), signer=SIGNER, policy=policy, now=NOW).iss == "billing"


@pytest.mark.parametrize("jti", ["abc", "x" * 21, "x" * 65, "a+b/c=" * 5, "space " * 5])
def test_short_or_malformed_jti_is_refused(jti: str) -> None:
    error = refused(claims(jti=jti))
    assert error.code == "token_claims_invalid"
    assert "'jti'" in error.detail


# -- order and size --------------------------------------------------------------------------------


def test_signature_is_checked_before_any_claim() -> None:
    other = JoseSigner(KeyRing.generate("HS256"))
    token = other.sign(claims(exp="never", iss="evil"))
    with pytest.raises(InvalidToken) as exc_info:
        verify_token(token, signer=SIGNER, policy=POLICY, now=NOW)
    assert exc_info.value.code == "token_key_unknown"


def test_an_expired_token_with_a_wrong_issuer_is_expired_first() -> None:
    token = SIGNER.sign(claims(iss="evil"))
    with pytest.raises(TokenExpired):
        verify_token(token, signer=SIGNER, policy=POLICY, now=NOW + 10_000)


def test_the_policy_size_limit_applies_before_the_signer() -> None:
    policy = TokenPolicy(max_token_bytes=256)
    token = SIGNER.sign(claims())
    assert len(token) > 256
    with pytest.raises(InvalidToken) as exc_info:
        verify_token(token, signer=SIGNER, policy=policy, now=NOW)
    assert exc_info.value.code == "token_too_large"


@pytest.mark.parametrize("token", [None, b"a.b.c", 3])
def test_a_token_that_is_not_a_string_is_malformed(token: object) -> None:
    with pytest.raises(InvalidToken) as exc_info:
        verify_token(token, signer=SIGNER, policy=POLICY, now=NOW)
    assert exc_info.value.code == "token_malformed"


class _ListSigner:
    def sign(self, claims: Any) -> str:
        return "a.b.c"

    def verify(self, token: str, *, now: float) -> Any:
        return ["not", "a", "dict"]


def test_a_signer_that_returns_no_claim_set_is_refused() -> None:
    with pytest.raises(InvalidToken) as exc_info:
        verify_token("a.b.c", signer=_ListSigner(), policy=POLICY, now=NOW)
    assert exc_info.value.code == "token_payload_invalid"


# -- policy ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"issuer": ""},
        {"audience": "x" * 513},
        {"issuer": 5},
        {"leeway": timedelta(seconds=-1)},
        {"leeway": 30},
        {"max_lifetime": timedelta(0)},
        {"max_token_bytes": 100},
        {"max_token_bytes": True},
    ],
)
def test_bad_policies_are_configuration_errors(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError) as exc_info:
        TokenPolicy(**options)
    assert exc_info.value.code == "policy_invalid"


# -- decode_unverified -----------------------------------------------------------------------------


def test_decode_unverified_reads_header_and_claims_without_a_key() -> None:
    body = claims()
    header, decoded = decode_unverified(SIGNER.sign(body))
    assert header["typ"] == "pause+jwt"
    assert decoded == body


def test_decode_unverified_cannot_read_sealed_claims() -> None:
    header, decoded = decode_unverified(SIGNERS["sealed"].sign(claims()))
    assert header["alg"] == "dir"
    assert decoded is None


@pytest.mark.parametrize(
    "token",
    [
        "a" * 5000,
        "abc",
        "a.b.c.d",
        "e30.e30.=",
        base64.urlsafe_b64encode(b'{"a":1,"a":2}').rstrip(b"=").decode() + ".e30.AAAA",
        "e30." + base64.urlsafe_b64encode(b'{"x":NaN}').rstrip(b"=").decode() + ".AAAA",
    ],
)
def test_decode_unverified_still_parses_strictly(token: str) -> None:
    with pytest.raises(InvalidToken):
        decode_unverified(token)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_decode_unverified_refuses_an_oversized_header_without_parsing_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed: list[int] = []
    decode = json.JSONDecoder.decode

    def spy(self: json.JSONDecoder, text: str, *args: Any, **kwargs: Any) -> Any:
        parsed.append(len(text))
        return decode(self, text, *args, **kwargs)

    monkeypatch.setattr(json.JSONDecoder, "decode", spy)
    header = b'{"alg":"HS256","x":' + b"[" * 1400 + b"]" * 1400 + b"}"
    with pytest.raises(InvalidToken) as exc_info:
        decode_unverified(_b64(header) + ".e30.AAAA")
    assert exc_info.value.code == "token_header_invalid"
    assert parsed == []


def test_decode_unverified_shows_an_unsecured_token_for_what_it_is() -> None:
    header = {"alg": "none", "typ": "pause+jwt", "kid": "k1", "crit": ["exp"]}
    body = claims()
    token = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(body).encode())}."
    assert decode_unverified(token) == (header, body)


@pytest.mark.parametrize(
    ("header", "code"),
    [
        ({"alg": "none", "typ": "pause+jwt", "kid": "k1"}, "token_algorithm_not_allowed"),
        ({"typ": "pause+jwt", "kid": "k1"}, "token_algorithm_not_allowed"),
        ({"alg": ["HS256"], "typ": "pause+jwt", "kid": "k1"}, "token_algorithm_not_allowed"),
        ({"alg": "HS256", "typ": "pause+jwt", "kid": "k1", "b64": False}, "token_header_forbidden"),
    ],
    ids=["alg-none-unsigned", "no-alg", "alg-array", "b64-false"],
)
def test_attack_signals_keep_their_codes_through_verify_token(
    header: dict[str, Any], code: str
) -> None:
    token = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims()).encode())}."
    with pytest.raises(InvalidToken) as exc_info:
        verify_token(token, signer=SIGNER, policy=POLICY, now=NOW)
    assert exc_info.value.code == code


@pytest.mark.parametrize(
    ("pasted", "said"),
    [
        (lambda t: "Bearer " + t, "starts with 'Bearer '"),
        (lambda t: f'"{t}"', "wrapped in quotes"),
        (lambda t: t + "\n", "ends with a line break"),
        (lambda t: t[:40] + "\n" + t[40:], "a line break at character 41"),
        (lambda t: t[:40] + " " + t[40:], "whitespace at character 41"),
    ],
)
def test_a_token_pasted_with_its_surroundings_says_what_to_remove(
    pasted: Callable[[str], str], said: str
) -> None:
    signer = JoseSigner(KeyRing.generate())
    token = signer.sign({"x": 1})
    with pytest.raises(InvalidToken) as caught:
        verify_token(pasted(token), signer=signer, policy=TokenPolicy(), now=0)
    assert caught.value.code == "token_malformed"
    assert said in caught.value.detail
    assert token[:30] not in caught.value.detail
