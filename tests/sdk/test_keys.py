"""Key rings: generation, JWKS round trips, weak-key refusals, rotation, verify-only rings."""

from __future__ import annotations

import base64
import json
import logging
import random
import secrets
import string
import sys
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pausetoken import JoseSigner, KeyRing, SealedSigner, _keys
from pausetoken._cli import main
from pausetoken._keys import KID_PATTERN, check_secret
from pausetoken.exceptions import ConfigurationError, InvalidToken

if TYPE_CHECKING:
    from pathlib import Path

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SIGNING_ALGS = ("HS256", "EdDSA", "ES256")


def code_of(exc_info: pytest.ExceptionInfo[Exception]) -> str:
    return getattr(exc_info.value, "code", "")


# -- generation and JWKS ---------------------------------------------------------------------


@pytest.mark.parametrize("alg", [*SIGNING_ALGS, "dir"])
def test_generated_ring_has_one_active_key_that_signs(alg: str) -> None:
    ring = KeyRing.generate(alg)
    assert ring.can_sign
    assert ring.algorithms == {alg}
    assert ring.kids == (ring.active,)
    assert KID_PATTERN.match(ring.active)
    assert ring.retirement(ring.active) is None


def test_generated_kids_are_random() -> None:
    assert len({KeyRing.generate().active for _ in range(20)}) == 20


@pytest.mark.parametrize("alg", SIGNING_ALGS)
@pytest.mark.parametrize("as_text", [False, True])
def test_jwks_round_trip_keeps_keys_that_verify_each_others_tokens(alg: str, as_text: bool) -> None:
    ring = KeyRing.generate(alg, kid="k1").rotate(grace=timedelta(hours=1), now=T0)
    jwks = ring.to_jwks()
    loaded = KeyRing.from_jwks(json.dumps(jwks) if as_text else jwks)
    assert loaded.active == ring.active
    assert loaded.kids == ring.kids
    assert loaded.retirement("k1") == T0 + timedelta(hours=1)
    token = JoseSigner(ring).sign({"x": 1})
    assert JoseSigner(loaded).verify(token, now=T0.timestamp()) == {"x": 1}
    back = JoseSigner(loaded).sign({"y": 2})
    assert JoseSigner(ring).verify(back, now=T0.timestamp()) == {"y": 2}


def test_jwks_marks_the_active_key_and_the_retirement_of_the_others() -> None:
    ring = KeyRing.generate(kid="old").rotate(
        KeyRing.generate(kid="new"), grace=timedelta(seconds=90), now=T0
    )
    jwks = ring.to_jwks()
    assert jwks["active"] == "new"
    by_kid = {k["kid"]: k for k in jwks["keys"]}
    assert "retire_at" not in by_kid["new"]
    assert by_kid["old"]["retire_at"] == int(T0.timestamp()) + 90
    assert all(k["alg"] == "HS256" and k["use"] == "sig" for k in jwks["keys"])


def test_sealed_ring_round_trips_and_seals() -> None:
    ring = KeyRing.generate("dir")
    loaded = KeyRing.from_jwks(ring.to_jwks())
    token = SealedSigner(ring).sign({"x": 1})
    assert SealedSigner(loaded).verify(token, now=0.0) == {"x": 1}
    assert ring.to_jwks()["keys"][0]["use"] == "enc"


@pytest.mark.parametrize(
    "secret",
    [
        secrets.token_bytes(32),
        secrets.token_bytes(64),
        secrets.token_hex(32),
        secrets.token_urlsafe(32),
    ],
    ids=["bytes32", "bytes64", "hex64", "base64url43"],
)
def test_from_secret_accepts_generated_secrets(secret: bytes | str) -> None:
    ring = KeyRing.from_secret(secret, kid="main")
    signer = JoseSigner(ring)
    assert signer.verify(signer.sign({"a": "b"}), now=0.0) == {"a": "b"}


def _keygen_style(seed: int, size: int, form: str) -> bytes:
    """Random key material as generators produce it: raw bytes, base64url, base64 or hex."""
    raw = random.Random(seed).randbytes(size)  # noqa: S311 - stands in for secrets, seeded
    if form == "base64url":
        return base64.urlsafe_b64encode(raw).rstrip(b"=")
    if form == "base64":
        return base64.b64encode(raw)
    if form == "hex":
        return raw.hex().encode()
    return raw


@given(
    seed=st.integers(0, 2**64),
    size=st.integers(32, 96),
    form=st.sampled_from(["raw", "base64url", "base64", "hex"]),
)
def test_keygen_style_keys_are_accepted(seed: int, size: int, form: str) -> None:
    check_secret(_keygen_style(seed, size, form))


@given(seed=st.integers(0, 2**64), form=st.sampled_from(["raw", "base64url", "base64", "hex"]))
def test_keygen_style_sealed_keys_are_accepted(seed: int, form: str) -> None:
    secret = _keygen_style(seed, 32, form)
    if form == "raw":
        check_secret(secret, alg="dir")
    else:  # text is never 32 bytes of key material: refused, whatever its randomness
        with pytest.raises(ConfigurationError):
            check_secret(secret, alg="dir")


@pytest.mark.parametrize("alg", ["HS256", "dir"])
def test_generated_and_keygen_keys_always_load_again(alg: str, tmp_path: Path) -> None:
    # Each loaded ring is the same key: it verifies what the original signed, and the
    # original verifies what it signs. Key files come from `pausetoken keygen` too.
    signer_type = SealedSigner if alg == "dir" else JoseSigner
    claims = {"sub": "s", "exp": 2_000_000_000}
    rings = [KeyRing.generate(alg) for _ in range(100)]
    for number in range(100):
        path = tmp_path / f"keys-{number}.json"
        assert main(["keygen", "--alg", alg, "-o", str(path)]) == 0
        rings.append(KeyRing.from_file(path))
    for ring in rings:
        loaded = KeyRing.from_jwks(json.dumps(ring.to_jwks()))
        assert loaded.kids == ring.kids
        assert loaded.active_algorithm == alg
        original, again = signer_type(ring), signer_type(loaded)
        assert again.verify(original.sign(claims), now=1_900_000_000) == claims
        assert original.verify(again.sign(claims), now=1_900_000_000) == claims


# -- key hygiene: text keys, sequences, entropy -------------------------------------------------

URLSAFE_KEY = secrets.token_urlsafe(32)


@pytest.mark.parametrize(
    "secret",
    [
        URLSAFE_KEY + "\n",
        URLSAFE_KEY + "\r\n",
        " " + URLSAFE_KEY,
        "\t" + URLSAFE_KEY,
        URLSAFE_KEY + "\x00",
        "\ufeff" + URLSAFE_KEY,
        secrets.token_hex(32) + "\n",
        (URLSAFE_KEY + "\n").encode(),
    ],
    ids=["newline", "crlf", "space", "tab", "nul", "bom", "hex-newline", "bytes-newline"],
)
def test_text_keys_with_surrounding_whitespace_or_control_characters_are_refused(
    secret: str | bytes,
) -> None:
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.from_secret(secret, kid="k")
    assert code_of(exc_info) == "key_whitespace"
    assert URLSAFE_KEY[:8] not in str(exc_info.value)


@pytest.mark.parametrize(
    "secret",
    [
        "geheimer-Schlüssel-für-die-Signatur-unserer-Tokens",
        "clé-de-signature-très-longue-pour-la-production",
        "ключ-для-подписи-токенов-в-продакшене-2024",
        "签名密钥签名密钥签名密钥签名密钥",
        URLSAFE_KEY[:40] + "é",
    ],
    ids=["german", "french", "russian", "chinese", "random-plus-accent"],
)
def test_non_ascii_text_keys_are_refused(secret: str) -> None:
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.from_secret(secret, kid="k")
    assert code_of(exc_info) == "key_not_ascii"


@pytest.mark.parametrize(
    "secret",
    [
        bytes(range(32)),
        bytes(range(128, 192)),
        bytes(range(255, 191, -1)),
        bytes(range(130, 226, 3)),
        string.ascii_lowercase + string.ascii_uppercase + string.digits,
        string.digits + string.ascii_lowercase + string.ascii_uppercase,
        string.ascii_letters[::-1],
        bytes(range(128, 144)) + bytes(range(200, 216)),
        secrets.token_bytes(16) + bytes(range(200, 216)),
    ],
    ids=[
        "range-32",
        "range-high",
        "descending",
        "step-3",
        "abc-ABC-012",
        "012-abc-ABC",
        "zyx",
        "two-runs",
        "half-random-half-run",
    ],
)
def test_arithmetic_sequences_are_refused(secret: str | bytes) -> None:
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.from_secret(secret, kid="k")
    assert code_of(exc_info) == "key_low_entropy"


@pytest.mark.parametrize(
    "secret",
    [
        "HelloWorldThisIsMyJwtSigningKey123",
        "ThisIsTheJwtKeyOfTheBillingService",
        "Tr0ub4dor&3Tr0ub4dor&3Tr0ub4dor&3x",
        secrets.token_urlsafe(32)[:42],
        secrets.token_hex(32)[:63],
        secrets.token_hex(16).upper() + secrets.token_hex(16).upper()[:31],
        "".join(secrets.choice(string.printable[:94]) for _ in range(38)),
    ],
    ids=[
        "camel-case-sentence",
        "another-sentence",
        "repeated-password",
        "base64url-42",
        "hex-63",
        "upper-hex-63",
        "printable-38",
    ],
)
def test_text_keys_under_256_bits_by_their_alphabet_are_refused(secret: str) -> None:
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.from_secret(secret, kid="k")
    assert code_of(exc_info) == "key_low_entropy"


@pytest.mark.parametrize(
    "secret",
    [
        secrets.token_urlsafe(32),
        base64.b64encode(secrets.token_bytes(32)).decode(),
        secrets.token_hex(32),
        secrets.token_hex(32).upper(),
        "".join(secrets.choice(string.printable[:94]) for _ in range(39)),
    ],
    ids=["base64url-43", "base64-44-padded", "hex-64", "upper-hex-64", "printable-39"],
)
def test_text_keys_of_256_bits_by_their_alphabet_are_accepted(secret: str) -> None:
    KeyRing.from_secret(secret, kid="k")


# -- refusals (notes/security.md rules 1 and 2) --------------------------------------------------

_PEM = (
    b"-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n"
    b"-----END PUBLIC KEY-----\n"
)
_SSH = b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE me@host"


@pytest.mark.parametrize(
    ("secret", "code"),
    [
        (secrets.token_bytes(31), "key_too_short"),
        (b"", "key_too_short"),
        ("your-256-bit-secret", "key_too_short"),
        ("your-256-bit-secret-your-256-bit-secret", "key_placeholder"),
        ("changeme-changeme-changeme-changeme!", "key_placeholder"),
        ("Example-Key-For-Documentation-0123456789", "key_placeholder"),
        ("correct horse battery staple forever more", "key_placeholder"),
        ("my-super-long-and-very-Secret-value-2024", "key_placeholder"),
        ("a" * 64, "key_low_entropy"),
        ("abababababababababababababababababababab", "key_low_entropy"),
        ("0123456789abcdef" * 4, "key_low_entropy"),
        ("Tr0ub4dor&3Tr0ub4dor&3Tr0ub4dor&3", "key_low_entropy"),
        (b"\x00" * 32, "key_low_entropy"),
        (_PEM, "key_is_pem"),
        (_SSH, "key_is_pem"),
        (b"-----BEGIN OPENSSH PRIVATE KEY-----" + secrets.token_bytes(40), "key_is_pem"),
    ],
    ids=[
        "31-bytes",
        "empty",
        "jwt-io-default",
        "jwt-io-default-doubled",
        "changeme",
        "example",
        "passphrase-with-spaces",
        "secret-word",
        "one-character",
        "two-characters",
        "repeated-hex-pattern",
        "repeated-password",
        "all-zero",
        "pem-public-key",
        "ssh-public-key",
        "openssh-private-key",
    ],
)
def test_weak_or_wrong_secrets_are_refused_with_a_specific_code(
    secret: bytes | str, code: str
) -> None:
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.from_secret(secret, kid="k")
    assert code_of(exc_info) == code


@pytest.mark.parametrize("alg", ["none", "HS512", "RS256", "A256GCM", "", "hs256"])
def test_unknown_or_none_algorithms_are_refused(alg: str) -> None:
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.generate(alg)
    assert code_of(exc_info) == "alg_not_allowed"


def test_from_secret_refuses_asymmetric_algorithms() -> None:
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.from_secret(secrets.token_bytes(32), kid="k", alg="EdDSA")
    assert code_of(exc_info) == "alg_not_allowed"


def test_a_sealed_key_must_be_exactly_256_bits() -> None:
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.from_secret(secrets.token_bytes(48), kid="k", alg="dir")
    assert code_of(exc_info) == "key_size_invalid"


def test_two_keys_with_one_kid_are_refused() -> None:
    a = KeyRing.generate(kid="same").to_jwks()
    b = KeyRing.generate(kid="same").to_jwks()
    jwks = {"active": "same", "keys": [a["keys"][0], {**b["keys"][0], "retire_at": 2e9}]}
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.from_jwks(jwks)
    assert code_of(exc_info) == "duplicate_kid"


def test_rotating_to_a_ring_with_a_taken_kid_is_refused() -> None:
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.generate(kid="k").rotate(KeyRing.generate(kid="k"), grace=timedelta(0))
    assert code_of(exc_info) == "duplicate_kid"


@pytest.mark.parametrize("jwks", [{"keys": []}, '{"keys": []}'])
def test_an_empty_ring_is_refused(jwks: object) -> None:
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.from_jwks(jwks)  # type: ignore[arg-type]
    assert code_of(exc_info) == "empty_keyring"


def test_a_ring_without_an_active_key_is_refused() -> None:
    jwk = KeyRing.generate(kid="k").to_jwks()["keys"][0]
    for jwks in (
        {"keys": [{**jwk, "retire_at": 2e9}]},
        {"active": "other", "keys": [jwk]},
        {"active": "k", "keys": [{**jwk, "retire_at": 2e9}]},
    ):
        with pytest.raises(ConfigurationError) as exc_info:
            KeyRing.from_jwks(jwks)
        assert code_of(exc_info) == "no_active_key"


def test_a_second_key_without_a_deadline_is_refused() -> None:
    one = KeyRing.generate(kid="a").to_jwks()["keys"][0]
    two = KeyRing.generate(kid="b").to_jwks()["keys"][0]
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.from_jwks({"active": "a", "keys": [one, two]})
    assert code_of(exc_info) == "no_active_key"


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"alg": "none"}, "alg_not_allowed"),
        ({"alg": None}, "alg_not_allowed"),
        ({"alg": "EdDSA"}, "key_alg_mismatch"),
        ({"alg": "ES256"}, "key_alg_mismatch"),
        ({"use": "enc"}, "key_alg_mismatch"),
        ({"kid": "spaces are not allowed"}, "kid_invalid"),
        ({"kid": None}, "kid_invalid"),
        ({"k": "c2VjcmV0"}, "key_too_short"),
        ({"k": "not base64!"}, "key_invalid"),
        ({"k": "AAB"}, "key_invalid"),
        ({"retire_at": "tomorrow"}, "jwks_invalid"),
        ({"retire_at": True}, "jwks_invalid"),
    ],
)
def test_bad_hmac_jwk_members_are_refused(change: dict[str, object], code: str) -> None:
    jwk = {**KeyRing.generate(kid="k").to_jwks()["keys"][0], **change}
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.from_jwks({"keys": [jwk]})
    assert code_of(exc_info) == code


@pytest.mark.parametrize(
    ("alg", "change", "code"),
    [
        ("EdDSA", {"alg": "HS256"}, "key_alg_mismatch"),
        ("EdDSA", {"alg": "ES256"}, "key_alg_mismatch"),
        ("EdDSA", {"crv": "Ed448"}, "key_alg_mismatch"),
        ("ES256", {"alg": "EdDSA"}, "key_alg_mismatch"),
        ("ES256", {"crv": "P-384"}, "key_alg_mismatch"),
        ("ES256", {"x": "AAAA"}, "key_invalid"),
    ],
)
def test_asymmetric_jwks_whose_alg_does_not_fit_the_key_are_refused(
    alg: str, change: dict[str, object], code: str
) -> None:
    jwk = {**KeyRing.generate(alg, kid="k").to_jwks()["keys"][0], **change}
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.from_jwks({"keys": [jwk]})
    assert code_of(exc_info) == code


@pytest.mark.parametrize("alg", ["EdDSA", "ES256"])
def test_a_private_jwk_whose_public_half_belongs_to_another_key_is_refused(alg: str) -> None:
    jwk = KeyRing.generate(alg, kid="k").to_jwks()["keys"][0]
    other = KeyRing.generate(alg, kid="k").to_jwks()["keys"][0]
    public = {name: other[name] for name in ("x", "y") if name in other}
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.from_jwks({"keys": [{**jwk, **public}]})
    assert code_of(exc_info) == "key_invalid"
    assert jwk["d"][:8] not in str(exc_info.value)


@pytest.mark.parametrize(
    ("alg", "key_ops"),
    [
        ("HS256", ["encrypt", "decrypt"]),
        ("HS256", ["sign", "verify", "wrapKey"]),
        ("HS256", ["verify"]),
        ("HS256", ["sign"]),
        ("HS256", "sign"),
        ("HS256", []),
        ("HS256", ["sign", "sign", "verify"]),
        ("HS256", ["sign", 7]),
        ("EdDSA", ["verify"]),
        ("ES256", ["deriveKey", "sign", "verify"]),
        ("dir", ["sign", "verify"]),
        ("dir", ["decrypt"]),
    ],
)
def test_jwks_whose_key_ops_contradict_how_the_key_is_used_are_refused(
    alg: str, key_ops: object
) -> None:
    jwk = {**KeyRing.generate(alg, kid="k").to_jwks()["keys"][0], "key_ops": key_ops}
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.from_jwks({"keys": [jwk]})
    assert code_of(exc_info) == "key_ops_invalid"


@pytest.mark.parametrize(
    ("alg", "use"), [("HS256", "enc"), ("EdDSA", "enc"), ("dir", "sig"), ("HS256", ["sig"])]
)
def test_jwks_whose_use_contradicts_the_algorithm_are_refused(alg: str, use: object) -> None:
    jwk = {**KeyRing.generate(alg, kid="k").to_jwks()["keys"][0], "use": use}
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.from_jwks({"keys": [jwk]})
    assert code_of(exc_info) == "key_alg_mismatch"


def test_key_ops_that_fit_the_key_are_accepted() -> None:
    old = KeyRing.generate("EdDSA", kid="old").to_jwks()["keys"][0]
    new = KeyRing.generate("EdDSA", kid="new").to_jwks()["keys"][0]
    sealed = KeyRing.generate("dir", kid="s").to_jwks()["keys"][0]
    ring = KeyRing.from_jwks(
        {
            "active": "new",
            "keys": [
                {**new, "key_ops": ["sign", "verify"]},
                {**old, "key_ops": ["verify"], "retire_at": 2e9},
            ],
        }
    )
    assert ring.can_sign
    public = KeyRing.from_jwks(
        {"keys": [{**ring.verify_only().to_jwks(private=False)["keys"][0], "key_ops": ["verify"]}]}
    )
    assert not public.can_sign
    KeyRing.from_jwks({"keys": [{**sealed, "key_ops": ["encrypt", "decrypt"]}]})


# -- key files ------------------------------------------------------------------------------------


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps(KeyRing.generate(kid="k").to_jwks()))
    path.chmod(0o600)
    return path


posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")


@posix_only
def test_a_private_key_file_loads_without_a_warning(
    key_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="pausetoken"):
        assert KeyRing.from_jwks(_keys.read_keys_file(key_file)).active == "k"
    assert caplog.records == []


@posix_only
@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644, 0o660, 0o620])
def test_a_key_file_others_may_read_or_group_may_write_loads_with_a_warning(
    key_file: Path, mode: int, caplog: pytest.LogCaptureFixture
) -> None:
    key_file.chmod(mode)
    with caplog.at_level(logging.WARNING, logger="pausetoken"):
        KeyRing.from_jwks(_keys.read_keys_file(key_file))
    [record] = caplog.records
    assert str(key_file) in record.getMessage()
    assert f"{mode:o}" in record.getMessage()
    secret = json.loads(key_file.read_text())["keys"][0]["k"]
    assert secret[:8] not in record.getMessage()


@posix_only
@pytest.mark.parametrize("mode", [0o602, 0o606, 0o666, 0o777])
def test_a_key_file_others_may_write_is_refused(key_file: Path, mode: int) -> None:
    key_file.chmod(mode)
    with pytest.raises(ConfigurationError) as exc_info:
        _keys.read_keys_file(key_file)
    assert code_of(exc_info) == "key_file_insecure"
    assert str(key_file) in str(exc_info.value)


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"keys": {}}',
        '{"keys": [], "keys": []}',
        '{"keys": [], "actve": "k"}',
        '{"keys": [1]}',
    ],
)
def test_malformed_jwks_documents_are_refused(text: str) -> None:
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.from_jwks(text)
    assert code_of(exc_info) == "jwks_invalid"


_KEYGEN = "create a key set with `pausetoken keygen -o FILE`"


@pytest.mark.parametrize(
    "text",
    [
        _PEM.decode(),
        "\n" + _PEM.decode(),
        _SSH.decode(),
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n",
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n",
    ],
    ids=["pem", "pem-after-a-blank-line", "ssh-public", "openssh-private", "putty"],
)
def test_a_key_file_instead_of_a_jwks_is_key_is_pem(text: str) -> None:
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.from_jwks(text)
    assert code_of(exc_info) == "key_is_pem"
    assert exc_info.value.detail == (
        f"the key set is PEM, OpenSSH or PuTTY key material, not a JWK Set (JSON): {_KEYGEN}"
    )


def test_a_single_jwk_is_refused_saying_how_to_wrap_it() -> None:
    jwk = KeyRing.generate(kid="k1").to_jwks()["keys"][0]
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.from_jwks(json.dumps(jwk))
    assert code_of(exc_info) == "jwks_invalid"
    assert exc_info.value.detail == (
        'the key set is a single JWK, not a JWK Set: wrap it as {"keys": [<the JWK, with '
        f'"kid" and "alg">]}}, or {_KEYGEN}'
    )
    assert jwk["k"] not in str(exc_info.value)


def test_a_single_jwk_mapping_is_refused_too() -> None:
    with pytest.raises(ConfigurationError, match="a single JWK"):
        KeyRing.from_jwks({"kty": "OKP", "crv": "Ed25519", "x": "AAAA"})


def test_a_bare_array_of_jwks_is_refused_saying_how_to_wrap_it() -> None:
    jwks = KeyRing.generate(kid="k1").to_jwks()["keys"]
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.from_jwks(json.dumps(jwks))
    assert code_of(exc_info) == "jwks_invalid"
    assert exc_info.value.detail == (
        f'the key set is a JSON array, not a JWK Set: wrap it as {{"keys": [...]}}, or {_KEYGEN}'
    )


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("", f"the key set is empty: {_KEYGEN}"),
        (" \n", f"the key set is empty: {_KEYGEN}"),
        ("k3y-m4t3r14l", f"the key set is not valid JSON (line 1, column 1): fix it, or {_KEYGEN}"),
        (
            '{\n  "keys": [\n',
            f"the key set is not valid JSON (line 3, column 1): fix it, or {_KEYGEN}",
        ),
    ],
    ids=["empty", "blank", "bare-secret", "truncated"],
)
def test_text_that_is_not_json_says_where_without_quoting_it(text: str, detail: str) -> None:
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.from_jwks(text)
    assert code_of(exc_info) == "jwks_invalid"
    assert exc_info.value.detail == detail


def test_pem_material_inside_a_jwk_is_refused() -> None:
    import base64

    k = base64.urlsafe_b64encode(_PEM).rstrip(b"=").decode()
    jwk = {"kty": "oct", "kid": "k", "alg": "HS256", "k": k}
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.from_jwks({"keys": [jwk]})
    assert code_of(exc_info) == "key_is_pem"


# -- rotation and retirement -------------------------------------------------------------------


def test_rotation_keeps_the_old_key_valid_until_its_deadline_then_refuses_it() -> None:
    old_ring = KeyRing.generate(kid="old")
    old_token = JoseSigner(old_ring).sign({"n": 1})
    ring = old_ring.rotate(grace=timedelta(minutes=10), now=T0)
    signer = JoseSigner(ring)
    deadline = (T0 + timedelta(minutes=10)).timestamp()

    assert signer.verify(old_token, now=deadline - 1) == {"n": 1}
    with pytest.raises(InvalidToken) as exc_info:
        signer.verify(old_token, now=deadline)
    assert code_of(exc_info) == "token_key_retired"
    # The new key signs, and its tokens verify after the old key's deadline.
    new_token = signer.sign({"n": 2})
    assert signer.verify(new_token, now=deadline + 3600) == {"n": 2}
    assert ring.active != "old"


def test_rotation_can_switch_algorithm() -> None:
    ring = KeyRing.generate("HS256").rotate(alg="EdDSA", grace=timedelta(hours=1), now=T0)
    assert ring.active_algorithm == "EdDSA"
    assert ring.algorithms == {"HS256", "EdDSA"}


def test_rotation_drops_keys_already_past_their_deadline() -> None:
    first = KeyRing.generate(kid="a")
    second = first.rotate(KeyRing.generate(kid="b"), grace=timedelta(minutes=1), now=T0)
    third = second.rotate(
        KeyRing.generate(kid="c"), grace=timedelta(minutes=1), now=T0 + timedelta(hours=1)
    )
    assert third.kids == ("c", "b")
    still = second.rotate(
        KeyRing.generate(kid="c"), grace=timedelta(minutes=5), now=T0 + timedelta(seconds=30)
    )
    assert set(still.kids) == {"a", "b", "c"}
    assert still.retirement("a") == T0 + timedelta(minutes=1)


@pytest.mark.parametrize("grace", [timedelta(seconds=-1), 60])
def test_rotation_needs_a_non_negative_grace(grace: object) -> None:
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.generate().rotate(grace=grace)  # type: ignore[arg-type]
    assert code_of(exc_info) == "grace_invalid"


def test_rotation_refuses_a_naive_now() -> None:
    with pytest.raises(ConfigurationError) as exc_info:
        KeyRing.generate().rotate(grace=timedelta(0), now=datetime(2026, 1, 1))  # noqa: DTZ001
    assert code_of(exc_info) == "naive_datetime"


def test_unknown_kid_lookup_is_an_invalid_token() -> None:
    with pytest.raises(InvalidToken) as exc_info:
        KeyRing.generate(kid="k").key_for("other", now=0.0)
    assert code_of(exc_info) == "token_key_unknown"


# -- verify-only rings -------------------------------------------------------------------------


@pytest.mark.parametrize("alg", ["EdDSA", "ES256"])
def test_verify_only_ring_verifies_but_cannot_sign(alg: str) -> None:
    ring = KeyRing.generate(alg)
    token = JoseSigner(ring).sign({"ok": True})
    public = ring.verify_only()
    assert not public.can_sign
    verifier = JoseSigner(public)
    assert verifier.verify(token, now=0.0) == {"ok": True}
    with pytest.raises(ConfigurationError) as exc_info:
        verifier.sign({"ok": False})
    assert code_of(exc_info) == "key_cannot_sign"
    exported = public.to_jwks(private=False)
    assert "d" not in exported["keys"][0]
    assert KeyRing.from_jwks(exported).can_sign is False


@pytest.mark.parametrize("alg", ["HS256", "dir"])
def test_symmetric_rings_have_no_verify_only_form(alg: str) -> None:
    ring = KeyRing.generate(alg)
    with pytest.raises(ConfigurationError) as exc_info:
        ring.verify_only()
    assert code_of(exc_info) == "key_no_public_half"
    with pytest.raises(ConfigurationError) as exc_info:
        ring.to_jwks(private=False)
    assert code_of(exc_info) == "key_no_public_half"


# -- repr ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("alg", [*SIGNING_ALGS, "dir"])
def test_repr_shows_no_key_material(alg: str) -> None:
    ring = KeyRing.generate(alg, kid="visible").rotate(grace=timedelta(hours=1), now=T0)
    text = repr(ring) + repr(JoseSigner(ring) if alg != "dir" else SealedSigner(ring))
    assert "visible" in text
    for jwk in ring.to_jwks()["keys"]:
        for member in ("k", "d", "x", "y"):
            if member in jwk:
                assert jwk[member] not in text
                assert jwk[member][:8] not in text


def test_repr_of_a_secret_ring_does_not_contain_the_secret() -> None:
    secret = secrets.token_hex(32)
    text = repr(KeyRing.from_secret(secret, kid="k"))
    assert secret not in text
    assert secret[:8] not in text


def test_from_file_loads_a_key_file_keygen_would_write(tmp_path: Path) -> None:
    ring = KeyRing.generate()
    path = tmp_path / "keys.json"
    path.write_text(json.dumps(ring.to_jwks(private=True)))
    path.chmod(0o600)
    assert KeyRing.from_file(path).active == ring.active


def test_from_file_names_the_path_of_a_file_it_cannot_read(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(ConfigurationError) as caught:
        KeyRing.from_file(missing)
    assert caught.value.code == "settings_file_unreadable"
    assert str(missing) in caught.value.detail


def test_from_file_keeps_the_code_of_a_bad_key_set_and_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_text("-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n")
    path.chmod(0o600)
    with pytest.raises(ConfigurationError) as caught:
        KeyRing.from_file(path)
    assert caught.value.code == "key_is_pem"
    assert str(path) in caught.value.detail
    assert "MIIB" not in str(caught.value)


def test_from_file_refuses_a_file_others_may_write(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps(KeyRing.generate().to_jwks(private=True)))
    path.chmod(0o666)
    with pytest.raises(ConfigurationError) as caught:
        KeyRing.from_file(path)
    assert caught.value.code == "key_file_insecure"
