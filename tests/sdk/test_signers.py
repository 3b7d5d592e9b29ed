"""The signers: strict parsing in DESIGN order, one test per bad-input kind, sealed tokens."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn

import pytest
from hypothesis import given
from hypothesis import strategies as st
from joserfc.jwa import HMACAlgorithm
from joserfc.jwk import OctKey, OKPKey

from pausetoken import JoseSigner, KeyRing, SealedSigner
from pausetoken._signer_api import SIGNERS_API_VERSION, Signer
from pausetoken._signers import _HmacSha256
from pausetoken.exceptions import ConfigurationError, InvalidToken, UnsupportedPayload
from pausetoken.testing import strategies as pst

SECRET = secrets.token_bytes(32)
RING = KeyRing.from_secret(SECRET, kid="k1")
SIGNER = JoseSigner(RING)
HEADER = {"alg": "HS256", "typ": "pause+jwt", "kid": "k1"}
P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
SIGNERS: dict[str, Signer] = {
    "HS256": JoseSigner(KeyRing.generate("HS256")),
    "EdDSA": JoseSigner(KeyRing.generate("EdDSA")),
    "ES256": JoseSigner(KeyRing.generate("ES256")),
    "sealed": SealedSigner(KeyRing.generate("dir")),
}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forge(
    header: dict[str, Any] | bytes = HEADER,
    payload: dict[str, Any] | bytes = b'{"x":1}',
    key: bytes = SECRET,
) -> str:
    """An HS256 token over arbitrary header and payload bytes, validly signed with ``key``."""
    raw_header = header if isinstance(header, bytes) else json.dumps(header).encode()
    raw_payload = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    signing_input = f"{b64(raw_header)}.{b64(raw_payload)}"
    mac = hmac.new(key, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64(mac)}"


def refused(token: object, signer: Signer = SIGNER, now: float = 0.0) -> str:
    with pytest.raises(InvalidToken) as exc_info:
        signer.verify(token, now=now)  # type: ignore[arg-type]
    return exc_info.value.code


# -- round trips and the token's form ------------------------------------------------------------


@pytest.mark.parametrize("name", SIGNERS)
@given(claims=pst.json_objects())
def test_signed_claims_come_back_unchanged(name: str, claims: dict[str, Any]) -> None:
    signer = SIGNERS[name]
    assert signer.verify(signer.sign(claims), now=0.0) == claims


@pytest.mark.parametrize("alg", ["HS256", "EdDSA", "ES256"])
def test_header_is_exactly_alg_typ_kid(alg: str) -> None:
    ring = KeyRing.generate(alg, kid="kid-1")
    token = JoseSigner(ring).sign({"a": 1})
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    assert header == {"alg": alg, "typ": "pause+jwt", "kid": "kid-1"}


def test_signers_declare_the_api_version_and_build_from_keys() -> None:
    assert JoseSigner.api_version == SealedSigner.api_version == SIGNERS_API_VERSION
    signer = JoseSigner.from_keys(RING, max_token_bytes=1024)
    assert isinstance(signer, JoseSigner)
    assert isinstance(signer, Signer)
    assert isinstance(SealedSigner.from_keys(KeyRing.generate("dir")), SealedSigner)


def test_hs256_tokens_verify_with_joserfc_and_pyjwt() -> None:
    import jwt as pyjwt
    from joserfc import jws

    token = SIGNER.sign({"a": 1})
    assert jws.deserialize_compact(token, OctKey.import_key(SECRET)).payload == b'{"a":1}'
    assert pyjwt.decode(token, SECRET, algorithms=["HS256"]) == {"a": 1}


def test_sealed_tokens_decrypt_with_joserfc() -> None:
    from joserfc import jwe

    ring = KeyRing.generate("dir")
    token = SealedSigner(ring).sign({"a": 1})
    assert jwe.decrypt_compact(token, ring.signing_key()[1]).plaintext == b'{"a":1}'


# -- any change to a token is refused --------------------------------------------------------


def _mutations(token: str) -> st.SearchStrategy[str]:
    alphabet = st.sampled_from(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ \x00é"
    )
    position = st.integers(0, len(token) - 1)
    flip = st.tuples(position, alphabet).map(lambda pc: token[: pc[0]] + pc[1] + token[pc[0] + 1 :])
    delete = position.map(lambda p: token[:p] + token[p + 1 :])
    insert = st.tuples(st.integers(0, len(token)), alphabet).map(
        lambda pc: token[: pc[0]] + pc[1] + token[pc[0] :]
    )
    return (flip | delete | insert).filter(lambda t: t != token)


TOKENS = {name: signer.sign({"jti": "x" * 22, "n": 1}) for name, signer in SIGNERS.items()}


@pytest.mark.parametrize("name", SIGNERS)
@given(data=st.data())
def test_every_altered_token_is_refused_with_invalid_token(name: str, data: st.DataObject) -> None:
    mutated = data.draw(_mutations(TOKENS[name]))
    with pytest.raises(InvalidToken):
        SIGNERS[name].verify(mutated, now=0.0)


# -- size and shape (rule 5) -------------------------------------------------------------------


def test_oversize_tokens_are_refused_before_parsing() -> None:
    assert refused("a" * 4097) == "token_too_large"
    assert refused("a." * (1 << 19)) == "token_too_large"


def test_the_size_limit_is_configurable() -> None:
    token = SIGNER.sign({"pad": "x" * 400})
    assert refused(token, JoseSigner(RING, max_token_bytes=256)) == "token_too_large"


@pytest.mark.parametrize("value", [None, b"a.b.c", 12, ["a", "b", "c"]])
def test_non_string_tokens_are_malformed(value: object) -> None:
    assert refused(value) == "token_malformed"


def _respell(token: str, index: int, transform: Any) -> str:
    parts = token.split(".")
    parts[index] = transform(parts[index])
    return ".".join(parts)


@pytest.mark.parametrize(
    "make",
    [
        lambda t: t + "=",
        lambda t: _respell(t, 2, lambda s: s + "="),
        lambda t: _respell(t, 0, lambda s: s + "=="),
        lambda t: " " + t,
        lambda t: t + "\n",
        lambda t: _respell(t, 1, lambda s: s[:10] + " " + s[10:]),
        lambda t: t.replace("-", "+").replace("_", "/") if ("-" in t or "_" in t) else t + "+",
        lambda t: t + ".",
        lambda t: t + ".AAAA",
        lambda t: ".".join(t.split(".")[:2]),
        lambda t: "." + t.split(".", 1)[1],
        lambda t: _respell(t, 1, lambda _s: ""),
        lambda t: _respell(t, 1, lambda s: s + "A" * ((1 - len(s)) % 4)),
    ],
    ids=[
        "trailing-padding",
        "padded-signature",
        "padded-header",
        "leading-space",
        "trailing-newline",
        "inner-space",
        "standard-alphabet",
        "four-segments-empty",
        "four-segments",
        "two-segments",
        "empty-header",
        "empty-payload",
        "impossible-length",
    ],
)
def test_non_canonical_shapes_are_malformed(make: Any) -> None:
    token = SIGNER.sign({"x": "~~~???>>>"})
    assert refused(make(token)) == "token_malformed"


def test_non_zero_trailing_bits_are_refused_even_though_they_decode_to_the_same_bytes() -> None:
    token = SIGNER.sign({"x": 1})
    signature = token.split(".")[2]  # 43 characters: the last one carries 2 unused bits
    assert len(signature) % 4 == 3
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    twin = alphabet[alphabet.index(signature[-1]) | 1]
    altered = token[:-1] + twin
    assert base64.urlsafe_b64decode(signature + "=") == base64.urlsafe_b64decode(
        altered.split(".")[2] + "="
    )
    assert refused(altered) == "token_malformed"


# -- header JSON, algorithm, whitelist, typ, kid (rules 2-6) -----------------------------------


@pytest.mark.parametrize(
    "header",
    [
        b'{"alg":"HS256","alg":"HS256","typ":"pause+jwt","kid":"k1"}',
        b'{"alg":"none","typ":"pause+jwt","kid":"k1","alg":"HS256"}',
        b"not json",
        b'["HS256"]',
        b"\xff\xfe{}",
        '{"alg":"HS256","typ":"pause+jwt","kid":"k1"}'.encode("utf-16"),
        b'{"alg":"HS256","typ":"pause+jwt","kid":7}',
        b'{"alg":"HS256","typ":"pause+jwt"}',
        b'{"alg":"HS256","typ":"pause+jwt","kid":"k1","x":1234567890123456789012345678901234567}',
        b'{"alg":"HS256","typ":"pause+jwt","kid":"../../etc/passwd"}',
        b'{"alg":"HS256","typ":"pause+jwt","kid":""}',
    ],
    ids=[
        "duplicate-alg",
        "duplicate-alg-none-first",
        "not-json",
        "array",
        "not-utf8",
        "utf16",
        "kid-number",
        "no-kid",
        "long-number",
        "kid-path",
        "kid-empty",
    ],
)
def test_bad_headers_are_refused(header: bytes) -> None:
    assert refused(forge(header)) == "token_header_invalid"


@pytest.mark.parametrize("alg", ["none", "None", "HS512", "RS256", "ES256", "EdDSA", "dir", ""])
def test_algorithms_outside_the_rings_allow_list_are_refused(alg: str) -> None:
    assert refused(forge({**HEADER, "alg": alg})) == "token_algorithm_not_allowed"


@pytest.mark.parametrize(
    "header",
    [
        b'{"typ":"pause+jwt","kid":"k1"}',
        b'{"alg":["HS256"],"typ":"pause+jwt","kid":"k1"}',
        b'{"alg":null,"typ":"pause+jwt","kid":"k1"}',
        b'{"alg":256,"typ":"pause+jwt","kid":"k1"}',
        b'{"alg":{"name":"HS256"},"typ":"pause+jwt","kid":"k1"}',
        b'{"alg":true,"typ":7,"kid":["k1"],"crit":["exp"]}',
    ],
    ids=["no-alg", "alg-array", "alg-null", "alg-number", "alg-object", "alg-bool-and-worse"],
)
def test_a_missing_or_non_string_alg_is_an_algorithm_refusal(header: bytes) -> None:
    assert refused(forge(header)) == "token_algorithm_not_allowed"


@pytest.mark.parametrize("alg", ["none", "None", "NONE", ""])
def test_an_unsecured_token_with_an_empty_signature_is_an_algorithm_refusal(alg: str) -> None:
    token = forge({**HEADER, "alg": alg})
    assert refused(token.rsplit(".", 1)[0] + ".") == "token_algorithm_not_allowed"


def test_an_allowed_alg_with_an_empty_signature_is_malformed() -> None:
    assert refused(forge().rsplit(".", 1)[0] + ".") == "token_malformed"


@pytest.mark.parametrize(
    ("member", "value"),
    [
        ("crit", ["exp"]),
        ("crit", []),
        ("b64", False),
        ("zip", None),
        ("jku", 7),
        ("jwk", {"kty": "oct", "k": "AAAA"}),
        ("x5u", ["https://attacker.example"]),
        ("x5c", ["MIIB"]),
        ("x5t#S256", 1.5),
    ],
)
def test_forbidden_members_are_forbidden_whatever_their_type(member: str, value: object) -> None:
    assert refused(forge({**HEADER, member: value})) == "token_header_forbidden"


def test_a_typ_that_is_not_a_string_is_a_type_refusal() -> None:
    assert refused(forge({**HEADER, "typ": ["pause+jwt"]})) == "token_type_invalid"


@pytest.mark.parametrize(
    "header",
    [
        {"typ": "pause+jwt", "kid": "k1"},
        {**HEADER, "alg": "none"},
        {**HEADER, "alg": ["HS256"]},
        {**HEADER, "crit": ["exp"]},
        {**HEADER, "jwk": {"kty": "oct", "k": "AAAA"}},
        {**HEADER, "typ": 7},
    ],
    ids=["no-alg", "alg-none", "alg-array", "crit", "jwk", "typ-number"],
)
def test_header_refusals_do_no_key_work(
    header: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_key_work(*_args: object, **_kwargs: object) -> NoReturn:
        pytest.fail("a key was consulted for a header that is refused by name")

    monkeypatch.setattr(KeyRing, "key_for", no_key_work)
    monkeypatch.setattr(HMACAlgorithm, "verify", no_key_work)
    with pytest.raises(InvalidToken):
        JoseSigner(RING).verify(forge(header), now=0.0)


def test_hs256_signed_with_the_public_key_of_an_eddsa_ring_is_refused() -> None:
    ring = KeyRing.generate("EdDSA", kid="ed")
    public = ring.to_jwks(private=False)["keys"][0]
    ed_key = ring.signing_key()[1]
    assert isinstance(ed_key, OKPKey)
    pem = ed_key.as_pem(private=False)
    signer = JoseSigner(ring.verify_only())
    for key in (pem, public["x"].encode(), base64.urlsafe_b64decode(public["x"] + "=")):
        token = forge({**HEADER, "kid": "ed"}, key=key)
        assert refused(token, signer) == "token_algorithm_not_allowed"


def test_a_key_is_used_only_with_its_own_algorithm_in_a_mixed_ring() -> None:
    ring = KeyRing.generate("EdDSA", kid="ed").rotate(
        KeyRing.from_secret(SECRET, kid="hs"), grace=timedelta(days=1)
    )
    signer = JoseSigner(ring)
    public_x = ring.to_jwks()["keys"][1]["x"].encode()
    token = forge({**HEADER, "kid": "ed"}, key=public_x)
    assert refused(token, signer) == "token_algorithm_not_allowed"


def test_configured_algorithms_narrow_the_allow_list() -> None:
    ring = KeyRing.generate("EdDSA", kid="ed").rotate(
        KeyRing.from_secret(SECRET, kid="k1"), grace=timedelta(days=1)
    )
    narrow = JoseSigner(ring, algorithms=["HS256"])
    ed_token = JoseSigner(KeyRing.generate("EdDSA", kid="ed")).sign({"a": 1})
    assert refused(ed_token, narrow) == "token_algorithm_not_allowed"
    assert narrow.verify(forge(), now=0.0) == {"x": 1}


@pytest.mark.parametrize(
    "member", ["crit", "b64", "zip", "jku", "jwk", "x5u", "x5c", "x5t", "cty", "enc", "foo"]
)
def test_headers_outside_the_whitelist_are_forbidden(member: str) -> None:
    assert refused(forge({**HEADER, member: "x"})) == "token_header_forbidden"


@pytest.mark.parametrize(
    "typ", ["JWT", "jwt", "at+jwt", "pause+JWT", "application/pause+jwt", None]
)
def test_wrong_or_missing_typ_is_refused(typ: str | None) -> None:
    header = {k: v for k, v in HEADER.items() if k != "typ"}
    if typ is not None:
        header["typ"] = typ
    assert refused(forge(header)) == "token_type_invalid"


def test_unknown_kid_is_refused_even_when_the_signature_is_valid() -> None:
    assert refused(forge({**HEADER, "kid": "k2"})) == "token_key_unknown"


def test_retired_kid_is_refused() -> None:
    ring = RING.rotate(grace=timedelta(seconds=5), now=datetime.fromtimestamp(0, tz=UTC))
    signer = JoseSigner(ring)
    assert signer.verify(forge(), now=4.0) == {"x": 1}
    assert refused(forge(), signer, now=5.0) == "token_key_retired"


# -- the unauthenticated parse is bounded (header cap, number length) --------------------------

_BASE = b'{"alg":"HS256","typ":"pause+jwt","kid":"k1","x":'
HOSTILE_HEADERS = {
    "deep-nesting": _BASE + b"[" * 1300 + b"]" * 1300 + b"}",
    "long-number": _BASE + b"9" * 2800 + b"}",
    "duplicate-members": b"{" + b'"alg":"HS256",' * 200 + b'"typ":"pause+jwt","kid":"k1"}',
    "long-strings": b'{"alg":"HS256","typ":"pause+jwt","kid":"' + b"k" * 2700 + b'"}',
}


@pytest.mark.parametrize("name", HOSTILE_HEADERS)
def test_an_oversized_header_is_refused_without_being_parsed(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[int] = []
    decode = json.JSONDecoder.decode

    def spy(self: json.JSONDecoder, text: str, *args: Any, **kwargs: Any) -> Any:
        parsed.append(len(text))
        return decode(self, text, *args, **kwargs)

    monkeypatch.setattr(json.JSONDecoder, "decode", spy)
    token = forge(HOSTILE_HEADERS[name])
    assert len(token) <= 4096
    assert refused(token) == "token_header_invalid"
    assert parsed == []


@pytest.mark.parametrize(
    ("member", "value"),
    [
        ("jwk", {"kty": "RSA", "n": b64(bytes(range(256))), "e": "AQAB"}),
        ("x5c", [base64.b64encode(bytes(range(256)) * 4).decode()]),
        ("jku", "https://attacker.example/" + "a" * 400),
        ("crit", ["exp"] * 100),
    ],
)
def test_an_oversized_header_naming_a_forbidden_member_is_forbidden(
    member: str, value: object
) -> None:
    token = forge({**HEADER, member: value})
    assert len(token.split(".")[0]) > 512
    assert refused(token) == "token_header_forbidden"


@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": ")])
def test_the_longest_headers_a_ring_can_produce_are_under_the_cap(
    separators: tuple[str, str],
) -> None:
    kid = "k" * 64
    ring = KeyRing.from_secret(SECRET, kid=kid)
    header = json.dumps({**HEADER, "kid": kid}, separators=separators).encode()
    assert JoseSigner(ring).verify(forge(header), now=0.0) == {"x": 1}
    sealer = SealedSigner(KeyRing.generate("dir", kid=kid))
    assert sealer.verify(sealer.sign({"x": 1}), now=0.0) == {"x": 1}


# -- signature ---------------------------------------------------------------------------------


def test_a_token_signed_with_another_key_is_refused() -> None:
    assert refused(forge(key=secrets.token_bytes(32))) == "token_signature_invalid"


def test_a_signature_of_the_wrong_length_is_refused() -> None:
    token = forge().rsplit(".", 1)[0] + "." + b64(b"\x00" * 31)
    assert refused(token) == "token_signature_invalid"


@pytest.mark.parametrize("alg", ["EdDSA", "ES256"])
def test_asymmetric_signatures_from_another_key_are_refused(alg: str) -> None:
    token = JoseSigner(KeyRing.generate(alg, kid="same")).sign({"a": 1})
    assert (
        refused(token, JoseSigner(KeyRing.generate(alg, kid="same"))) == "token_signature_invalid"
    )


def test_es256_signatures_are_low_s_and_high_s_twins_are_refused() -> None:
    signer = JoseSigner(KeyRing.generate("ES256"))
    for _ in range(16):
        token = signer.sign({"a": 1})
        head, sig = token.rsplit(".", 1)
        raw = base64.urlsafe_b64decode(sig + "==")
        r, s = int.from_bytes(raw[:32]), int.from_bytes(raw[32:])
        assert s <= P256_ORDER // 2
        twin = f"{head}.{b64(r.to_bytes(32) + (P256_ORDER - s).to_bytes(32))}"
        assert refused(twin, signer) == "token_signature_invalid"


# -- payload JSON (rule 5) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        b'{"x":1,"x":2}',
        b'{"a":{"b":1,"b":1}}',
        b'{"x":NaN}',
        b'{"x":Infinity}',
        b'{"x":-Infinity}',
        b"[1,2]",
        b'"text"',
        b"null",
        b"{",
        b"\xff{}",
        '{"x":1}'.encode("utf-16"),
        b"[" * 1300 + b"]" * 1300,
        b'{"a":' * 20 + b"1" + b"}" * 20,
        b'{"a":' + b"[" * 30 + b"]" * 30 + b"}",
    ],
    ids=[
        "duplicate",
        "nested-duplicate",
        "nan",
        "infinity",
        "minus-infinity",
        "array",
        "string",
        "null",
        "truncated",
        "not-utf8",
        "utf16",
        "deep-array",
        "deep-objects",
        "deep-inside-object",
    ],
)
def test_bad_payloads_are_refused_after_a_valid_signature(payload: bytes) -> None:
    assert refused(forge(payload=payload)) == "token_payload_invalid"


def test_moderate_nesting_is_accepted() -> None:
    payload = b'{"a":' * 8 + b"1" + b"}" * 8
    assert SIGNER.verify(forge(payload=payload), now=0.0)["a"]


# -- signing errors and configuration ----------------------------------------------------------


@pytest.mark.parametrize(
    "claims", [{"x": float("nan")}, {"x": {1, 2}}, {"x": b"raw"}, ["not", "a", "mapping"]]
)
def test_claims_that_are_not_json_cannot_be_signed(claims: Any) -> None:
    with pytest.raises(UnsupportedPayload) as exc_info:
        SIGNER.sign(claims)
    assert exc_info.value.code == "claims_not_json"


@pytest.mark.parametrize("signer", [SIGNER, SIGNERS["sealed"]], ids=["signed", "sealed"])
def test_claims_too_large_for_the_verifier_cannot_be_signed(signer: Signer) -> None:
    with pytest.raises(UnsupportedPayload) as exc_info:
        signer.sign({"pad": "x" * 4000})
    assert exc_info.value.code == "token_too_large"


def test_signers_refuse_rings_of_the_other_kind() -> None:
    with pytest.raises(ConfigurationError) as exc_info:
        JoseSigner(KeyRing.generate("dir"))
    assert exc_info.value.code == "alg_not_allowed"
    with pytest.raises(ConfigurationError) as exc_info:
        SealedSigner(RING)
    assert exc_info.value.code == "alg_not_allowed"


@pytest.mark.parametrize("algorithms", [["none"], ["HS512"], ["EdDSA"]])
def test_configured_algorithms_must_be_supported_and_cover_the_signing_key(
    algorithms: list[str],
) -> None:
    with pytest.raises(ConfigurationError) as exc_info:
        JoseSigner(RING, algorithms=algorithms)
    assert exc_info.value.code == "alg_not_allowed"


@pytest.mark.parametrize("size", [0, 255, 65537, True, 4096.0])
def test_the_size_limit_option_is_validated(size: Any) -> None:
    with pytest.raises(ConfigurationError) as exc_info:
        JoseSigner(RING, max_token_bytes=size)
    assert exc_info.value.code == "max_token_bytes_invalid"


def test_errors_never_contain_the_token() -> None:
    token = forge({**HEADER, "kid": "k2"}, payload={"secret_value": "hunter2-hunter2"})
    with pytest.raises(InvalidToken) as exc_info:
        SIGNER.verify(token, now=0.0)
    text = str(exc_info.value) + repr(exc_info.value) + json.dumps(exc_info.value.to_problem())
    assert token not in text
    assert token.split(".")[1][:16] not in text
    assert "hunter2" not in text


# -- sealed tokens (rule 14) -------------------------------------------------------------------

SEALED_RING = KeyRing.generate("dir", kid="s1")
SEALER = SealedSigner(SEALED_RING)


def _jwe_header(token: str) -> Any:
    return json.loads(base64.urlsafe_b64decode(token.split(".", maxsplit=1)[0] + "=="))


def test_sealed_tokens_hide_their_claims() -> None:
    marker = "visible-marker-" + secrets.token_hex(4)
    token = SEALER.sign({"thread_id": marker})
    assert marker not in token
    decoded = b"".join(
        base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)) for part in token.split(".")
    )
    assert marker.encode() not in decoded
    assert b"thread_id" not in decoded
    assert _jwe_header(token) == {"alg": "dir", "enc": "A256GCM", "typ": "pause+jwt", "kid": "s1"}
    assert token.split(".")[1] == ""


def test_sealing_the_same_claims_twice_gives_different_tokens() -> None:
    assert SEALER.sign({"a": 1}) != SEALER.sign({"a": 1})


def test_sealed_tokens_are_unreadable_with_another_key() -> None:
    token = SEALER.sign({"a": 1})
    other = SealedSigner(KeyRing.generate("dir", kid="s1"))
    assert refused(token, other) == "token_signature_invalid"
    assert refused(token, SealedSigner(KeyRing.generate("dir"))) == "token_key_unknown"


def _reseal(header: dict[str, Any], claims: bytes = b'{"a":1}') -> str:
    """A sealed token with an arbitrary header, validly encrypted under SEALED_RING."""
    from joserfc.jwa import GCMEncModel

    header_segment = b64(json.dumps(header).encode())
    iv = secrets.token_bytes(12)
    key = SEALED_RING.signing_key()[1]
    assert isinstance(key, OctKey)
    ciphertext, tag = GCMEncModel(256).encrypt(claims, key.raw_value, iv, header_segment.encode())
    return ".".join((header_segment, "", b64(iv), b64(ciphertext), b64(tag)))


SEALED_HEADER = {"alg": "dir", "enc": "A256GCM", "typ": "pause+jwt", "kid": "s1"}


def test_a_resealed_token_with_the_right_header_verifies() -> None:
    assert SEALER.verify(_reseal(SEALED_HEADER), now=0.0) == {"a": 1}


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"zip": "DEF"}, "token_header_forbidden"),
        ({"cty": "JWT"}, "token_header_forbidden"),
        ({"alg": "A256KW"}, "token_algorithm_not_allowed"),
        ({"alg": "HS256"}, "token_algorithm_not_allowed"),
        ({"enc": "A128GCM"}, "token_algorithm_not_allowed"),
        ({"enc": "A256CBC-HS512"}, "token_algorithm_not_allowed"),
        ({"typ": "JWT"}, "token_type_invalid"),
        ({"kid": "nope"}, "token_key_unknown"),
    ],
)
def test_sealed_headers_are_checked_like_signed_ones(change: dict[str, str], code: str) -> None:
    assert refused(_reseal({**SEALED_HEADER, **change}), SEALER) == code


@pytest.mark.parametrize(
    ("claims", "code"),
    [(b'{"a":1,"a":2}', "token_payload_invalid"), (b'{"a":NaN}', "token_payload_invalid")],
)
def test_sealed_payloads_are_parsed_strictly(claims: bytes, code: str) -> None:
    assert refused(_reseal(SEALED_HEADER, claims), SEALER) == code


def test_a_signed_token_is_not_a_sealed_token_and_vice_versa() -> None:
    assert refused(SIGNER.sign({"a": 1}), SEALER) == "token_malformed"
    assert refused(SEALER.sign({"a": 1}), SIGNER) == "token_malformed"


@pytest.mark.parametrize(
    "header",
    [
        {"alg": "A256KW", "enc": "A256GCM"},
        {"alg": "A128KW", "enc": "A128CBC-HS256"},
        {"alg": "PBES2-HS256+A128KW", "enc": "A256GCM", "p2s": "c2FsdHNhbHQ", "p2c": 1000000},
        {"alg": "RSA-OAEP-256", "enc": "A256GCM"},
        {"alg": "ECDH-ES+A256KW", "enc": "A256GCM", "epk": {"kty": "EC", "crv": "P-256"}},
    ],
    ids=["A256KW", "A128KW-CBC", "PBES2", "RSA-OAEP", "ECDH-ES-KW"],
)
def test_a_sealed_token_with_a_wrapped_key_is_an_algorithm_refusal(
    header: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_key_work(*_args: object, **_kwargs: object) -> NoReturn:
        pytest.fail("a key was consulted for a header that is refused by name")

    monkeypatch.setattr(KeyRing, "key_for", no_key_work)
    parts = _reseal({**SEALED_HEADER, **header}).split(".")
    parts[1] = b64(secrets.token_bytes(40))
    assert refused(".".join(parts), SEALER) == "token_algorithm_not_allowed"


def test_a_sealed_token_without_alg_or_with_a_non_string_enc_is_an_algorithm_refusal() -> None:
    no_alg = {k: v for k, v in SEALED_HEADER.items() if k != "alg"}
    assert refused(_reseal(no_alg), SEALER) == "token_algorithm_not_allowed"
    assert refused(_reseal({**SEALED_HEADER, "enc": ["A256GCM"]}), SEALER) == (
        "token_algorithm_not_allowed"
    )
    assert refused(_reseal({**SEALED_HEADER, "zip": ["DEF"]}), SEALER) == "token_header_forbidden"


def test_a_sealed_token_with_an_encrypted_key_segment_is_malformed() -> None:
    parts = SEALER.sign({"a": 1}).split(".")
    parts[1] = "AAAA"
    assert refused(".".join(parts), SEALER) == "token_malformed"


def test_a_sealed_token_with_a_short_nonce_is_malformed() -> None:
    parts = SEALER.sign({"a": 1}).split(".")
    parts[2] = b64(b"\x00" * 8)
    assert refused(".".join(parts), SEALER) == "token_malformed"


# -- HS256 headers this signer writes are checked with the standard library's HMAC --------------


def _general(ring: KeyRing) -> JoseSigner:
    """A signer over ``ring`` that checks every token through joserfc's algorithm objects."""
    signer = JoseSigner(ring)
    signer._hmac_secrets = {}  # the path the standard-library one is compared with
    return signer


def _outcome(signer: Signer, token: str, now: float = 0.0) -> tuple[str, object]:
    try:
        return "verified", signer.verify(token, now=now)
    except InvalidToken as exc:
        return "refused", exc.code


ROTATED = RING.rotate(grace=timedelta(seconds=5), now=datetime.fromtimestamp(0, tz=UTC))


def test_the_signers_own_hs256_headers_take_the_standard_library_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_joserfc(*_args: object) -> NoReturn:
        raise AssertionError

    tokens = [JoseSigner(RING).sign({"x": 1}), JoseSigner(ROTATED).sign({"x": 1})]
    monkeypatch.setattr(HMACAlgorithm, "verify", no_joserfc)
    for token in tokens:
        assert JoseSigner(ROTATED).verify(token, now=0.0) == {"x": 1}


@given(
    key=st.binary(min_size=1, max_size=200) | st.sampled_from([b"k" * 63, b"k" * 64, b"k" * 65]),
    messages=st.lists(st.binary(max_size=300), min_size=1, max_size=3),
)
def test_the_hs256_mac_is_the_standard_library_s_hmac(key: bytes, messages: list[bytes]) -> None:
    # Keys up to, at and over SHA-256's 64-byte block (hashed first, as RFC 2104 says), and
    # one MAC object used for several messages (its key states are copied, never updated).
    mac = _HmacSha256(key)
    for message in messages:
        assert mac.digest(message) == hmac.digest(key, message, "sha256")


def test_hs256_tokens_are_signed_with_the_standard_library_s_hashes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_joserfc(*_args: object) -> NoReturn:
        raise AssertionError

    monkeypatch.setattr(HMACAlgorithm, "sign", no_joserfc)
    token = JoseSigner(RING).sign({"x": 1})
    assert JoseSigner(RING).verify(token, now=0.0) == {"x": 1}


@given(
    length=st.integers(min_value=32, max_value=200) | st.sampled_from([63, 64, 65]),
    seed=st.binary(max_size=8),
    claims=pst.json_objects(),
)
def test_an_hs256_signature_is_the_hmac_of_the_signing_input(
    length: int, seed: bytes, claims: dict[str, Any]
) -> None:
    # Secrets under, at and over SHA-256's 64-byte block (random-looking: the ring refuses
    # weak ones), the signature checked against hmac.digest.
    secret = hashlib.shake_256(seed).digest(length)
    token = JoseSigner(KeyRing.from_secret(secret, kid="k1")).sign(claims)
    signing_input, _, signature = token.rpartition(".")
    assert signature == b64(hmac.digest(secret, signing_input.encode("ascii"), "sha256"))


@given(claims=pst.json_objects(), data=st.data(), now=st.sampled_from([0.0, 4.0, 5.0, 6.0]))
def test_the_standard_library_hmac_path_decides_as_the_general_path(
    claims: dict[str, Any], data: st.DataObject, now: float
) -> None:
    old = JoseSigner(RING).sign(claims)  # under k1, retired at 5 in ROTATED
    new = JoseSigner(ROTATED).sign(claims)
    token = data.draw(st.sampled_from([old, new]) | _mutations(old) | _mutations(new))
    fast, general = JoseSigner(ROTATED), _general(ROTATED)
    assert _outcome(fast, token, now) == _outcome(general, token, now)


@pytest.mark.parametrize(
    "header",
    [
        HEADER,  # json.dumps' default separators
        {"kid": "k1", "typ": "pause+jwt", "alg": "HS256"},
        {"typ": "pause+jwt", "alg": "HS256", "kid": "k1"},
    ],
)
@pytest.mark.parametrize("key", [SECRET, secrets.token_bytes(32)], ids=["right", "wrong"])
def test_other_forms_of_a_valid_header_verify_or_are_refused_as_before(
    header: dict[str, Any], key: bytes
) -> None:
    compact = json.dumps(header, separators=(",", ":")).encode()
    for raw in (json.dumps(header).encode(), compact):
        token = forge(raw, key=key)
        assert _outcome(SIGNER, token) == _outcome(_general(RING), token)
        assert _outcome(SIGNER, token)[0] == ("verified" if key == SECRET else "refused")


def test_the_standard_library_path_refuses_retired_keys_and_empty_signatures() -> None:
    compact = json.dumps(HEADER, separators=(",", ":")).encode()
    token = forge(compact)
    signer = JoseSigner(ROTATED)
    assert signer.verify(token, now=4.0) == {"x": 1}
    assert refused(token, signer, now=5.0) == "token_key_retired"
    assert refused(token.rsplit(".", 1)[0] + ".", signer) == "token_malformed"


def test_algorithms_narrowed_away_from_hs256_leave_no_hmac_shortcut() -> None:
    ring = KeyRing.from_jwks(
        {
            "active": "ed",
            "keys": [
                KeyRing.generate("EdDSA", kid="ed").to_jwks()["keys"][0],
                {**RING.to_jwks()["keys"][0], "retire_at": 10},
            ],
        }
    )
    compact = json.dumps(HEADER, separators=(",", ":")).encode()
    signer = JoseSigner(ring, algorithms=["EdDSA"])
    assert refused(forge(compact), signer) == "token_algorithm_not_allowed"
    assert JoseSigner(ring).verify(forge(compact), now=0.0) == {"x": 1}
