"""Settings from code, from PAUSETOKEN_* variables and from TOML, and every refusal."""

from __future__ import annotations

import base64
import json
import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pausetoken import KeyRing, Settings, TokenPolicy
from pausetoken._settings import parse_duration
from pausetoken.exceptions import ConfigurationError

if TYPE_CHECKING:
    from pathlib import Path


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _jwks(secret: bytes, kid: str = "k1") -> str:
    return json.dumps({"keys": [{"kty": "oct", "kid": kid, "alg": "HS256", "k": _b64(secret)}]})


@pytest.fixture
def jwks() -> str:
    return json.dumps(KeyRing.generate(kid="k1").to_jwks())


@pytest.fixture
def env(jwks: str) -> dict[str, str]:
    return {"PAUSETOKEN_STORE_URL": "memory://", "PAUSETOKEN_KEYS": jwks}


def _refused(code: str, call: Any, *args: Any) -> ConfigurationError:
    with pytest.raises(ConfigurationError) as caught:
        call(*args)
    assert caught.value.code == code, caught.value
    return caught.value


# -- from code ----------------------------------------------------------------------------


def test_defaults_need_only_a_store_url_and_keys() -> None:
    settings = Settings(store_url="memory://", keys=KeyRing.generate())
    assert settings.signer == "jose"
    assert settings.checkpoints == "memory"
    assert (settings.issuer, settings.audience) == ("pausetoken", "pausetoken")
    assert settings.ttl == timedelta(hours=24)
    assert settings.leeway == timedelta(seconds=30)
    assert settings.max_lifetime == timedelta(days=7)
    assert settings.max_token_bytes == 4096
    assert settings.lease == timedelta(seconds=30)
    assert dict(settings.signer_options) == {}
    assert dict(settings.store_options) == {}


def test_policy_carries_the_claim_checks() -> None:
    settings = Settings(
        store_url="memory://",
        keys=KeyRing.generate(),
        issuer="billing",
        audience="approvals",
        leeway=timedelta(seconds=5),
        max_lifetime=timedelta(hours=2),
        ttl=timedelta(hours=1),
        max_token_bytes=2048,
    )
    assert settings.policy == TokenPolicy(
        issuer="billing",
        audience="approvals",
        leeway=timedelta(seconds=5),
        max_lifetime=timedelta(hours=2),
        max_token_bytes=2048,
    )


def test_options_are_copied_and_read_only() -> None:
    options = {"pool_size": 5}
    settings = Settings(store_url="memory://", keys=KeyRing.generate(), store_options=options)
    options["pool_size"] = 6
    assert settings.store_options["pool_size"] == 5
    with pytest.raises(TypeError):
        settings.store_options["pool_size"] = 7  # type: ignore[index]


def test_repr_hides_keys_passwords_and_option_values() -> None:
    keys = KeyRing.generate(kid="k1")
    secret = keys.to_jwks()["keys"][0]["k"]
    settings = Settings(
        store_url="postgresql+asyncpg://app:hunter2-db@db/app",
        keys=keys,
        store_options={"password": "opt-secret-value"},
    )
    shown = repr(settings)
    assert secret not in shown
    assert "hunter2-db" not in shown
    assert "opt-secret-value" not in shown
    assert "k1" in shown
    assert "password" in shown


def test_no_store_url_is_refused() -> None:
    _refused("settings_missing", lambda: Settings(store_url="", keys=KeyRing.generate()))


def test_no_keys_is_refused_with_the_keygen_hint() -> None:
    error = _refused("settings_missing", lambda: Settings(store_url="memory://", keys=None))  # type: ignore[arg-type]
    assert "pausetoken keygen" in error.detail


@pytest.mark.parametrize(
    "changes",
    [
        {"ttl": timedelta(days=8)},
        {"ttl": timedelta(0)},
        {"leeway": timedelta(seconds=-1)},
        {"lease": timedelta(0)},
        {"lease": timedelta(microseconds=1)},
        {"lease": timedelta(seconds=0.5)},
        {"max_token_bytes": 100},
        {"max_token_bytes": True},
        {"issuer": ""},
        {"issuer": "x" * 513},
        {"signer": "has space"},
        {"store_url": " memory://"},
        {"store_options": {1: "x"}},
    ],
)
def test_invalid_values_from_code_are_refused(changes: dict[str, Any]) -> None:
    base: dict[str, Any] = {"store_url": "memory://", "keys": KeyRing.generate()}
    _refused("settings_invalid", lambda: Settings(**{**base, **changes}))


# -- durations ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90", timedelta(seconds=90)),
        ("1.5", timedelta(seconds=1.5)),
        ("15m", timedelta(minutes=15)),
        ("24h", timedelta(hours=24)),
        ("7d", timedelta(days=7)),
        ("1h30m", timedelta(minutes=90)),
        (" 30s ", timedelta(seconds=30)),
        (45, timedelta(seconds=45)),
        (timedelta(minutes=2), timedelta(minutes=2)),
    ],
)
def test_durations_read_seconds_and_units(text: Any, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "-5", "5x", "1.5.2", "h", "1 h", "5m-", True, -1, "inf"])
def test_bad_durations_are_refused(text: Any) -> None:
    _refused("settings_invalid", parse_duration, text)


@given(
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=10_000), st.sampled_from("smhd")),
        min_size=1,
        max_size=4,
    )
)
def test_compound_durations_add_up(parts: list[tuple[int, str]]) -> None:
    unit = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    text = "".join(f"{number}{u}" for number, u in parts)
    assert parse_duration(text) == timedelta(seconds=sum(n * unit[u] for n, u in parts))


# -- from the environment -----------------------------------------------------------------


def test_env_reads_every_variable(tmp_path: Path, jwks: str) -> None:
    keys_file = tmp_path / "keys.json"
    keys_file.write_text(jwks)
    settings = Settings.from_env(
        {
            "PAUSETOKEN_STORE_URL": "sqlite+aiosqlite:///t.db",
            "PAUSETOKEN_KEYS_FILE": str(keys_file),
            "PAUSETOKEN_SIGNER": "sealed",
            "PAUSETOKEN_SIGNER_OPTIONS": '{"max_token_bytes": 8192}',
            "PAUSETOKEN_STORE_OPTIONS": '{"pool_size": 3}',
            "PAUSETOKEN_CHECKPOINTS": "langgraph",
            "PAUSETOKEN_ISSUER": "iss-1",
            "PAUSETOKEN_AUDIENCE": "aud-1",
            "PAUSETOKEN_TTL": "2h",
            "PAUSETOKEN_LEEWAY": "10",
            "PAUSETOKEN_MAX_LIFETIME": "1d",
            "PAUSETOKEN_MAX_TOKEN_BYTES": "8192",
            "PAUSETOKEN_LEASE": "2m",
            "HOME": "/unrelated",
        }
    )
    assert settings.store_url == "sqlite+aiosqlite:///t.db"
    assert settings.keys.active == "k1"
    assert settings.signer == "sealed"
    assert dict(settings.signer_options) == {"max_token_bytes": 8192}
    assert dict(settings.store_options) == {"pool_size": 3}
    assert settings.checkpoints == "langgraph"
    assert (settings.issuer, settings.audience) == ("iss-1", "aud-1")
    assert settings.ttl == timedelta(hours=2)
    assert settings.leeway == timedelta(seconds=10)
    assert settings.max_lifetime == timedelta(days=1)
    assert settings.max_token_bytes == 8192
    assert settings.lease == timedelta(minutes=2)


def test_env_defaults_to_os_environ(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert Settings.from_env().store_url == "memory://"


def test_env_with_nothing_configured_says_what_to_set() -> None:
    error = _refused("settings_missing", Settings.from_env, {"PATH": "/bin"})
    assert "PAUSETOKEN_STORE_URL" in error.detail
    assert "PAUSETOKEN_KEYS_FILE" in error.detail
    assert "pausetoken keygen" in error.detail
    assert "memory://" in error.detail


def test_env_without_a_store_url_is_refused(jwks: str) -> None:
    error = _refused("settings_missing", Settings.from_env, {"PAUSETOKEN_KEYS": jwks})
    assert "PAUSETOKEN_STORE_URL" in error.detail
    assert "PAUSETOKEN_KEYS" not in error.detail


def test_env_without_keys_is_refused() -> None:
    error = _refused("settings_missing", Settings.from_env, {"PAUSETOKEN_STORE_URL": "memory://"})
    assert "pausetoken keygen" in error.detail


def test_env_with_keys_and_a_keys_file_is_a_conflict(env: dict[str, str], tmp_path: Path) -> None:
    env["PAUSETOKEN_KEYS_FILE"] = str(tmp_path / "keys.json")
    error = _refused("settings_conflict", Settings.from_env, env)
    assert "PAUSETOKEN_KEYS_FILE" in error.detail


def test_env_bad_duration_names_the_variable_not_the_value(env: dict[str, str]) -> None:
    env["PAUSETOKEN_TTL"] = "tomorrow-ish"
    error = _refused("settings_invalid", Settings.from_env, env)
    assert "PAUSETOKEN_TTL" in error.detail
    assert "tomorrow-ish" not in error.detail


def test_env_ttl_beyond_the_lifetime_names_both_variables(env: dict[str, str]) -> None:
    env["PAUSETOKEN_TTL"] = "8d"
    error = _refused("settings_invalid", Settings.from_env, env)
    assert "PAUSETOKEN_TTL" in error.detail
    assert "PAUSETOKEN_MAX_LIFETIME" in error.detail


def test_env_bad_integer_names_the_variable(env: dict[str, str]) -> None:
    env["PAUSETOKEN_MAX_TOKEN_BYTES"] = "4k"
    error = _refused("settings_invalid", Settings.from_env, env)
    assert "PAUSETOKEN_MAX_TOKEN_BYTES" in error.detail


def test_env_unknown_variable_is_refused_with_a_suggestion(env: dict[str, str]) -> None:
    env["PAUSETOKEN_TLL"] = "1h"
    error = _refused("settings_unknown", Settings.from_env, env)
    assert "PAUSETOKEN_TLL" in error.detail
    assert "did you mean PAUSETOKEN_TTL" in error.detail


def test_env_has_no_prefix_of_variables_it_ignores(env: dict[str, str]) -> None:
    # Test suites keep their own variables out of the environment (tests/servers.py).
    env["PAUSETOKEN_TEST_POSTGRESQL_URL"] = "postgresql://x"
    error = _refused("settings_unknown", Settings.from_env, env)
    assert "PAUSETOKEN_TEST_POSTGRESQL_URL" in error.detail


def test_env_empty_variable_is_refused(env: dict[str, str]) -> None:
    env["PAUSETOKEN_ISSUER"] = ""
    error = _refused("settings_invalid", Settings.from_env, env)
    assert "PAUSETOKEN_ISSUER" in error.detail


def test_env_options_must_be_json_objects(env: dict[str, str]) -> None:
    env["PAUSETOKEN_STORE_OPTIONS"] = "[1, 2]"
    error = _refused("settings_invalid", Settings.from_env, env)
    assert "PAUSETOKEN_STORE_OPTIONS" in error.detail


def test_env_weak_key_is_refused_by_the_keyring_without_echoing_it(env: dict[str, str]) -> None:
    short = b"0123456789abcdef"
    env["PAUSETOKEN_KEYS"] = _jwks(short)
    error = _refused("key_too_short", Settings.from_env, env)
    assert "PAUSETOKEN_KEYS" in error.detail
    assert _b64(short) not in error.detail
    assert _b64(short) not in repr(error)


def test_env_placeholder_key_is_refused(env: dict[str, str]) -> None:
    env["PAUSETOKEN_KEYS"] = _jwks(b"changeme-changeme-changeme-changeme!")
    _refused("key_placeholder", Settings.from_env, env)


def test_env_unreadable_keys_file_is_refused(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    env = {"PAUSETOKEN_STORE_URL": "memory://", "PAUSETOKEN_KEYS_FILE": str(missing)}
    error = _refused("settings_file_unreadable", Settings.from_env, env)
    assert str(missing) in error.detail


def test_env_keys_file_others_may_write_is_refused(tmp_path: Path, jwks: str) -> None:
    keys_file = tmp_path / "keys.json"
    keys_file.write_text(jwks)
    keys_file.chmod(0o666)
    env = {"PAUSETOKEN_STORE_URL": "memory://", "PAUSETOKEN_KEYS_FILE": str(keys_file)}
    error = _refused("key_file_insecure", Settings.from_env, env)
    assert jwks not in str(error)


def test_env_keys_file_others_may_read_loads_with_a_warning(
    tmp_path: Path, jwks: str, caplog: pytest.LogCaptureFixture
) -> None:
    keys_file = tmp_path / "keys.json"
    keys_file.write_text(jwks)
    keys_file.chmod(0o644)
    env = {"PAUSETOKEN_STORE_URL": "memory://", "PAUSETOKEN_KEYS_FILE": str(keys_file)}
    with caplog.at_level(logging.WARNING, logger="pausetoken"):
        Settings.from_env(env)
    assert any(str(keys_file) in record.getMessage() for record in caplog.records)
    assert all(jwks not in record.getMessage() for record in caplog.records)


_PEM = (
    "-----BEGIN PRIVATE KEY-----\n"
    "MC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF\n"
    "-----END PRIVATE KEY-----\n"
)
_SSH = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE me@host\n"
_ONE_JWK = json.dumps({"kty": "oct", "kid": "k1", "alg": "HS256", "k": _b64(b"s" * 32)})


def _key_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "keys.json"
    path.write_text(text)
    path.chmod(0o600)
    return path


@pytest.mark.parametrize(
    ("text", "code", "says"),
    [
        (_PEM, "key_is_pem", "the key set is PEM, OpenSSH or PuTTY key material, not a JWK Set"),
        (_SSH, "key_is_pem", "the key set is PEM, OpenSSH or PuTTY key material, not a JWK Set"),
        (_ONE_JWK, "jwks_invalid", "the key set is a single JWK, not a JWK Set"),
        ("[" + _ONE_JWK + "]", "jwks_invalid", "the key set is a JSON array, not a JWK Set"),
        ('{"keys": [}', "jwks_invalid", "the key set is not valid JSON (line 1, column 11)"),
        ("", "jwks_invalid", "the key set is empty"),
    ],
    ids=["pem", "ssh", "single-jwk", "array", "not-json", "empty"],
)
def test_env_bad_keys_file_names_the_variable_and_the_path(
    tmp_path: Path, text: str, code: str, says: str
) -> None:
    path = _key_file(tmp_path, text)
    env = {"PAUSETOKEN_STORE_URL": "memory://", "PAUSETOKEN_KEYS_FILE": str(path)}
    error = _refused(code, Settings.from_env, env)
    assert error.detail.startswith(
        f"the key file {path} (PAUSETOKEN_KEYS_FILE in the environment): {says}"
    )
    assert error.detail.endswith("create a key set with `pausetoken keygen -o FILE`")
    assert "PAUSETOKEN_KEYS in" not in error.detail
    for secret in ("MC4CAQAw", "AAAAC3Nz", _b64(b"s" * 32)):
        assert secret not in str(error)


def test_env_pem_in_the_keys_variable_names_that_variable(env: dict[str, str]) -> None:
    env["PAUSETOKEN_KEYS"] = _PEM
    error = _refused("key_is_pem", Settings.from_env, env)
    assert error.detail.startswith("PAUSETOKEN_KEYS in the environment: the key set is PEM")
    assert "MC4CAQAw" not in str(error)


def test_env_weak_key_in_a_keys_file_names_the_file(tmp_path: Path) -> None:
    path = _key_file(tmp_path, _jwks(b"0123456789abcdef"))
    env = {"PAUSETOKEN_STORE_URL": "memory://", "PAUSETOKEN_KEYS_FILE": str(path)}
    error = _refused("key_too_short", Settings.from_env, env)
    assert error.detail.startswith(f"the key file {path} (PAUSETOKEN_KEYS_FILE in the environment)")


def test_env_keys_file_others_may_write_names_the_variable(tmp_path: Path, jwks: str) -> None:
    path = _key_file(tmp_path, jwks)
    path.chmod(0o666)
    env = {"PAUSETOKEN_STORE_URL": "memory://", "PAUSETOKEN_KEYS_FILE": str(path)}
    error = _refused("key_file_insecure", Settings.from_env, env)
    assert error.detail == (
        f"the key file {path} (PAUSETOKEN_KEYS_FILE in the environment) can be written by other "
        "users (mode 666); chmod 600 it"
    )


def test_env_store_url_password_never_reaches_an_error(env: dict[str, str]) -> None:
    env["PAUSETOKEN_STORE_URL"] = "postgresql://app:pw-in-url@db/app"
    env["PAUSETOKEN_LEASE"] = "soon"
    error = _refused("settings_invalid", Settings.from_env, env)
    assert "pw-in-url" not in str(error)


# -- from TOML ----------------------------------------------------------------------------


def test_toml_table_with_a_relative_keys_file(
    tmp_path: Path, jwks: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "keys.json").write_text(jwks)
    path = tmp_path / "conf" / "pausetoken.toml"
    path.write_text(
        "[pausetoken]\n"
        'store_url = "memory://"\n'
        'keys_file = "keys.json"\n'
        'ttl = "2h"\n'
        "lease = 120\n"
        "[pausetoken.store_options]\n"
        "pool_size = 2\n"
    )
    monkeypatch.chdir(tmp_path)  # the key file is found next to the TOML file, not here
    settings = Settings.from_toml(path)
    assert settings.keys.active == "k1"
    assert settings.ttl == timedelta(hours=2)
    assert settings.lease == timedelta(minutes=2)
    assert dict(settings.store_options) == {"pool_size": 2}


def test_toml_tool_table_in_pyproject(tmp_path: Path, jwks: str) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(
        '[project]\nname = "app"\n\n[tool.pausetoken]\n'
        f'store_url = "memory://"\nkeys = {json.dumps(jwks)}\nissuer = "app"\n'
    )
    settings = Settings.from_toml(path)
    assert settings.issuer == "app"
    assert settings.keys.active == "k1"


def test_toml_keys_as_an_inline_table(tmp_path: Path) -> None:
    jwk = KeyRing.generate(kid="k9").to_jwks()["keys"][0]
    path = tmp_path / "p.toml"
    inline = ", ".join(f"{name} = {json.dumps(value)}" for name, value in jwk.items())
    path.write_text(
        f'[pausetoken]\nstore_url = "memory://"\nkeys = {{ keys = [{{ {inline} }}] }}\n'
    )
    assert Settings.from_toml(path).keys.active == "k9"


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("[other]\nx = 1\n", "settings_missing"),
        ('[pausetoken]\nstore_url = "memory://"\n', "settings_missing"),
        (
            '[pausetoken]\nstore_url = "memory://"\nkeys = "{}"\nkeys_file = "k.json"\n',
            "settings_conflict",
        ),
        (
            '[pausetoken]\nstore_url = "memory://"\n\n[tool.pausetoken]\nstore_url = "memory://"\n',
            "settings_conflict",
        ),
        ('[pausetoken]\nstore_url = "memory://"\nkeys_flie = "k.json"\n', "settings_unknown"),
        ("[pausetoken\n", "settings_invalid"),
        ("pausetoken = 3\n", "settings_invalid"),
    ],
)
def test_toml_refusals(tmp_path: Path, text: str, code: str) -> None:
    path = tmp_path / "p.toml"
    path.write_text(text)
    _refused(code, Settings.from_toml, path)


def test_toml_wrong_type_names_the_key(tmp_path: Path, jwks: str) -> None:
    path = tmp_path / "p.toml"
    path.write_text(
        f'[pausetoken]\nstore_url = "memory://"\nkeys = {json.dumps(jwks)}\nissuer = 5\n'
    )
    error = _refused("settings_invalid", Settings.from_toml, path)
    assert "issuer" in error.detail
    assert str(path) in error.detail


def test_toml_bad_duration_is_refused(tmp_path: Path, jwks: str) -> None:
    path = tmp_path / "p.toml"
    path.write_text(
        f'[pausetoken]\nstore_url = "memory://"\nkeys = {json.dumps(jwks)}\nttl = "1y"\n'
    )
    error = _refused("settings_invalid", Settings.from_toml, path)
    assert "ttl" in error.detail


def test_toml_bad_keys_file_names_the_key_the_toml_file_and_the_key_file(
    tmp_path: Path,
) -> None:
    (tmp_path / "keys.pem").write_text(_PEM)
    (tmp_path / "keys.pem").chmod(0o600)
    path = tmp_path / "p.toml"
    path.write_text('[pausetoken]\nstore_url = "memory://"\nkeys_file = "keys.pem"\n')
    error = _refused("key_is_pem", Settings.from_toml, path)
    assert error.detail.startswith(
        f"the key file {tmp_path / 'keys.pem'} (keys_file in {path} [pausetoken]): the key set "
        "is PEM"
    )


def test_toml_missing_file_is_unreadable(tmp_path: Path) -> None:
    _refused("settings_file_unreadable", Settings.from_toml, tmp_path / "absent.toml")


# -- from a mapping -----------------------------------------------------------------------


def test_mapping_accepts_objects_and_plain_values() -> None:
    keys = KeyRing.generate()
    settings = Settings.from_mapping(
        {"store_url": "memory://", "keys": keys, "ttl": timedelta(minutes=5), "leeway": 0}
    )
    assert settings.keys is keys
    assert settings.ttl == timedelta(minutes=5)
    assert settings.leeway == timedelta(0)


def test_mapping_unknown_key_is_refused() -> None:
    data = {"store_url": "memory://", "keys": KeyRing.generate(), "tll": 5}
    error = _refused("settings_unknown", Settings.from_mapping, data)
    assert "did you mean ttl" in error.detail
