"""The pausetoken command line, run in-process through ``main(argv)``."""

from __future__ import annotations

import base64
import contextlib
import importlib.metadata
import io
import json
import os
import platform
import stat
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from fake_distributions import Site, hide_distributions

from pausetoken import (
    JoseSigner,
    KeyRing,
    MemoryStoreWarning,
    Scope,
    SealedSigner,
    exceptions,
    hash_scope,
)
from pausetoken._claims import new_jti
from pausetoken._cli import COMMANDS, bench, main
from pausetoken._cli.hints import TERMINAL_HINTS
from pausetoken._cli.token_input import parse_scope
from pausetoken._install import install_hint
from pausetoken._registry import register_store
from pausetoken.cli import GROUP, Command
from pausetoken.exceptions import (
    BackendNotInstalled,
    CommandLineError,
    ConfigurationError,
    InvalidKeys,
    InvalidSettings,
    PluginError,
    UnknownBackend,
)

_ERRORS = [
    error
    for name in exceptions.__all__
    if isinstance(error := getattr(exceptions, name), type)
    and issubclass(error, exceptions.PauseTokenError)
]


def _claims(**changes: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {
        "iss": "pausetoken",
        "aud": "pausetoken",
        "iat": now,
        "exp": now + 3600,
        "jti": new_jti(),
        "name": "refund",
        "interrupt_id": "interrupt-1",
        "run_id": "run-1",
        "session_id": "",
        "thread_id": "thread-1",
        "checkpoint_id": "checkpoint-1",
        "scope_hash": "0" * 64,
        "request_hash": "1" * 64,
        "ver": 1,
    }
    claims.update(changes)
    return claims


def _segment(value: dict[str, Any]) -> str:
    raw = json.dumps(value).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@pytest.fixture
def keys() -> KeyRing:
    return KeyRing.generate(kid="k1")


@pytest.fixture
def keys_file(tmp_path: Path, keys: KeyRing) -> Path:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps(keys.to_jwks()))
    return path


@pytest.fixture
def token(keys: KeyRing) -> str:
    return JoseSigner(keys).sign(_claims())


@pytest.fixture(autouse=True)
def _no_pausetoken_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KEYS", "KEYS_FILE", "ISSUER", "AUDIENCE", "STORE_URL", "STORE_OPTIONS"):
        monkeypatch.delenv(f"PAUSETOKEN_{name}", raising=False)


# -- keygen -------------------------------------------------------------------------------


@pytest.mark.parametrize("alg", ["HS256", "EdDSA", "ES256", "dir"])
def test_keygen_prints_a_jwks_the_keyring_loads(
    alg: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keygen", "--alg", alg, "--kid", "main-1"]) == 0
    out, err = capsys.readouterr()
    ring = KeyRing.from_jwks(out)
    assert ring.active == "main-1"
    assert ring.algorithms == {alg}
    assert ring.can_sign
    assert "secret" in err


def test_keygen_defaults_to_hs256_with_a_random_kid(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["keygen"]) == 0
    first = KeyRing.from_jwks(capsys.readouterr().out)
    assert main(["keygen"]) == 0
    second = KeyRing.from_jwks(capsys.readouterr().out)
    assert first.algorithms == {"HS256"}
    assert first.active != second.active


def test_keygen_refuses_a_bad_kid(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["keygen", "--kid", "no spaces"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "[kid_invalid]" in err


posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")


@posix_only
@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_keygen_output_file_is_private_whatever_the_umask(
    umask: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "keys.json"
    previous = os.umask(umask)
    try:
        assert main(["keygen", "--kid", "main-1", "-o", str(path)]) == 0
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert KeyRing.from_jwks(path.read_text()).active == "main-1"
    out, err = capsys.readouterr()
    assert out == ""
    assert str(path) in err
    assert path.read_text()[-60:-10] not in err


def test_keygen_refuses_to_overwrite_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "keys.json"
    path.write_text("keep me")
    assert main(["keygen", "--output", str(path)]) == 2
    assert path.read_text() == "keep me"
    out, err = capsys.readouterr()
    assert out == ""
    assert "[cli_output_exists]" in err


@posix_only
def test_keygen_refuses_to_write_through_a_symlink(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "elsewhere.json"
    link = tmp_path / "keys.json"
    link.symlink_to(target)
    assert main(["keygen", "-o", str(link)]) == 2
    assert not target.exists()
    assert "[cli_output_exists]" in capsys.readouterr().err


def test_keygen_reports_an_unwritable_destination(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keygen", "-o", str(tmp_path / "missing" / "keys.json")]) == 2
    assert "[cli_output_unwritable]" in capsys.readouterr().err


@pytest.mark.slow  # starts interpreters
def test_python_dash_m_keygen_works_as_a_subprocess() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pausetoken", "keygen", "--alg", "EdDSA"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert KeyRing.from_jwks(done.stdout).algorithms == {"EdDSA"}


# -- inspect ------------------------------------------------------------------------------


def test_inspect_without_verify_is_marked_unverified(
    token: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", token]) == 0
    out, _ = capsys.readouterr()
    assert "UNVERIFIED" in out
    assert "thread-1" in out
    assert "pause+jwt" in out
    assert token not in out
    assert token.rsplit(".", 1)[1] not in out  # not even the signature


def test_inspect_reads_the_token_from_stdin(
    token: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(token + "\n"))
    assert main(["inspect", "-"]) == 0
    assert "checkpoint-1" in capsys.readouterr().out


def test_inspect_verify_with_the_right_keys_is_marked_verified(
    token: str, keys_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", token, "--verify", "--keys", str(keys_file)]) == 0
    out, _ = capsys.readouterr()
    assert "VERIFIED" in out
    assert "UNVERIFIED" not in out
    assert "thread-1" in out


def test_inspect_verify_reads_keys_from_the_environment(
    token: str, keys_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAUSETOKEN_KEYS_FILE", str(keys_file))
    assert main(["inspect", token, "--verify"]) == 0
    assert "UNVERIFIED" not in capsys.readouterr().out


def test_inspect_verify_of_a_forged_token_exits_1_with_the_code(
    keys_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    forged = JoseSigner(KeyRing.generate(kid="k1")).sign(_claims())  # same kid, other secret
    assert main(["inspect", forged, "--verify", "--keys", str(keys_file)]) == 1
    out, err = capsys.readouterr()
    assert "[token_signature_invalid]" in err
    assert "hint:" in err
    assert "VERIFIED" not in out
    assert "Traceback" not in err


def test_inspect_verify_of_an_expired_token_exits_1(
    keys: KeyRing, keys_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = JoseSigner(keys).sign(_claims(iat=1_000_000, exp=1_003_600))
    assert main(["inspect", old, "--verify", "--keys", str(keys_file)]) == 1
    assert "[token_expired]" in capsys.readouterr().err


def test_inspect_verify_checks_the_issuer(
    token: str, keys_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", token, "--verify", "--keys", str(keys_file), "--issuer", "other"]) == 1
    assert "[token_issuer_invalid]" in capsys.readouterr().err


def test_inspect_verify_reads_the_issuer_and_audience_of_the_settings(
    keys: KeyRing,
    keys_file: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    billing = JoseSigner(keys).sign(_claims(iss="billing", aud="approvals"))
    monkeypatch.setenv("PAUSETOKEN_ISSUER", "billing")
    monkeypatch.setenv("PAUSETOKEN_AUDIENCE", "approvals")
    assert main(["inspect", billing, "--verify", "--keys", str(keys_file), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verified"] is True
    assert main(["inspect", billing, "--verify", "--keys", str(keys_file), "--issuer", "x"]) == 1
    assert "[token_issuer_invalid]" in capsys.readouterr().err


def test_inspect_verify_accepts_what_the_service_is_set_to_accept(
    keys: KeyRing,
    keys_file: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = int(time.time())
    long_lived = JoseSigner(keys).sign(_claims(iat=now, exp=now + 20 * 86400))
    argv = ["inspect", long_lived, "--verify", "--keys", str(keys_file), "--json"]
    assert main(argv) == 1
    assert "[token_lifetime_too_long]" in capsys.readouterr().err
    monkeypatch.setenv("PAUSETOKEN_MAX_LIFETIME", "30d")
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["verified"] is True


def test_inspect_verify_refuses_a_misspelt_setting(
    token: str, keys_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAUSETOKEN_ISUER", "billing")
    assert main(["inspect", token, "--verify", "--keys", str(keys_file)]) == 2
    err = capsys.readouterr().err
    assert "[settings_unknown] unknown environment variable: PAUSETOKEN_ISUER (did you mean" in err


def test_inspect_verify_refuses_an_overlong_issuer_as_a_usage_error(
    token: str, keys_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["inspect", token, "--verify", "--keys", str(keys_file), "--issuer", "i" * 513]
    assert main(argv) == 2
    assert "error [cli_usage] --issuer or --audience: issuer must be" in capsys.readouterr().err


def test_inspect_without_verify_needs_no_settings(
    token: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAUSETOKEN_ISUER", "a misspelt setting, read only to verify")
    assert main(["inspect", token, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verified"] is False


def test_inspect_verify_without_keys_is_a_usage_error(
    token: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", token, "--verify"]) == 2
    err = capsys.readouterr().err
    assert "[settings_missing]" in err
    assert "pausetoken keygen" in err


def test_inspect_of_a_sealed_token_shows_claims_only_when_verified(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ring = KeyRing.generate("dir", kid="seal-1")
    path = tmp_path / "sealed.json"
    path.write_text(json.dumps(ring.to_jwks()))
    sealed = SealedSigner(ring).sign(_claims())
    assert main(["inspect", sealed]) == 0
    out = capsys.readouterr().out
    assert "UNVERIFIED" in out
    assert "A256GCM" in out
    assert "thread-1" not in out
    assert main(["inspect", sealed, "--verify", "--keys", str(path)]) == 0
    out = capsys.readouterr().out
    assert "UNVERIFIED" not in out
    assert "thread-1" in out


def test_inspect_renders_hostile_values_inert(capsys: pytest.CaptureFixture[str]) -> None:
    header = {"alg": "HS256", "typ": "pause+jwt", "kid": "k1"}
    hostile = _claims(thread_id="\x1b[2J[bold red]boom[/bold red]", name="[link=x]y[/link]")
    crafted = f"{_segment(header)}.{_segment(hostile)}.c2lnbmF0dXJl"
    assert main(["inspect", crafted]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert "[bold red]boom[/bold red]" in out
    assert "[link=x]y[/link]" in out


def test_inspect_of_garbage_exits_1_without_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["inspect", "not-a-token"]) == 1
    err = capsys.readouterr().err
    assert "[token_malformed]" in err
    assert "Traceback" not in err


def test_debug_shows_the_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--debug", "inspect", "not-a-token"]) == 1
    assert "Traceback" in capsys.readouterr().err


def test_debug_is_accepted_after_the_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "not-a-token", "--debug"]) == 1
    assert "Traceback" in capsys.readouterr().err


# -- backends -----------------------------------------------------------------------------


@pytest.mark.slow  # imports every installed backend
def test_backends_lists_the_built_ins(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backends"]) == 0
    out = capsys.readouterr().out
    for name in ("memory", "jose", "sealed", "stores", "signers", "checkpoints"):
        assert name in out
    assert "yes" in out


# -- errors and usage ---------------------------------------------------------------------


def test_keygen_works_without_rich(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "rich", None)
    monkeypatch.setitem(sys.modules, "rich.console", None)
    assert main(["keygen"]) == 0
    KeyRing.from_jwks(capsys.readouterr().out)


def test_unexpected_errors_show_no_traceback_and_no_message(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object, **_kwargs: object) -> KeyRing:
        raise RuntimeError("details-that-may-quote-input")

    monkeypatch.setattr(KeyRing, "generate", broken)
    assert main(["keygen"]) == 1
    err = capsys.readouterr().err
    assert "unexpected RuntimeError" in err
    assert "--debug" in err
    assert "Traceback" not in err
    assert "details-that-may-quote-input" not in err
    with pytest.raises(RuntimeError):
        main(["keygen", "--debug"])


@pytest.mark.parametrize(
    "argv", [[], ["inspect"], ["nope"], ["keygen", "--alg", "none"], ["keygen", "--alg", "RS256"]]
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "usage:" in capsys.readouterr().err


def test_help_lists_every_registered_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in COMMANDS:
        assert command.name in out


# -- rich, and output without it --------------------------------------------------------------

_RICH = ("rich", "rich.console", "rich.table", "rich.text", "rich.progress", "rich.markup")


@pytest.fixture
def no_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _RICH:
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.parametrize(
    "argv",
    [
        ["backends"],
        ["inspect", "TOKEN"],
        ["store", "check", "memory://"],
        ["bench", "--dir", "."],
    ],
    ids=["backends", "inspect", "store-check", "bench"],
)
@pytest.mark.usefixtures("no_rich")
def test_every_command_that_draws_names_the_cli_extra_when_rich_is_missing(
    argv: list[str], token: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [token if arg == "TOKEN" else arg for arg in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    command = " ".join(argv[:2] if argv[0] == "store" else argv[:1])
    assert (
        f"pausetoken {command}: error [cli_rich_missing] `pausetoken {command}` draws its "
        "output with rich, which is not installed"
    ) in err
    assert f"hint: {install_hint('pausetoken[cli]')}" in err
    assert "ModuleNotFoundError" not in err


@pytest.mark.slow  # imports every installed backend
@pytest.mark.usefixtures("no_rich")
def test_json_output_needs_no_rich(token: str, capsys: pytest.CaptureFixture[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        assert main(["store", "check", "memory://", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["passed"] is True
    assert main(["backends", "--json"]) == 0
    assert "stores" in json.loads(capsys.readouterr().out)
    assert main(["inspect", token, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verified"] is False


# -- --version --------------------------------------------------------------------------------


def test_version_names_pausetoken_and_its_backends(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"pausetoken {importlib.metadata.version('pausetoken')}")
    assert f"Python {platform.python_version()}" in out


# -- pasted tokens ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "message", "hint"),
    [
        (
            "Bearer {t}",
            (
                "the token starts with 'Bearer ', the HTTP authorization scheme, which is not "
                "part of the token"
            ),
            "pass only what follows 'Bearer '",
        ),
        (
            '"{t}"',
            "the token is wrapped in quotes, which are not part of it",
            "pass the token without its quotes",
        ),
        ("'{t}'", "the token is wrapped in quotes", "pass the token without its quotes"),
        (
            "{t}\n",
            "the token ends with a line break",
            "remove it, or pass the token on standard input with -",
        ),
        (
            "{head}\n{tail}",
            "the token has a line break after character 40 of",
            "join its lines into one",
        ),
        (" {t}", "the token starts or ends with spaces", "remove the spaces around it"),
        ("{head} {tail}", "the token contains spaces", "copy the token again, whole"),
    ],
    ids=["bearer", "double-quotes", "single-quotes", "trailing-break", "wrapped", "space", "inner"],
)
def test_a_pasted_token_is_refused_saying_what_was_pasted_with_it(
    shape: str, message: str, hint: str, token: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pasted = shape.format(t=token, head=token[:40], tail=token[40:])
    assert main(["inspect", pasted]) == 1
    err = capsys.readouterr().err
    assert f"pausetoken inspect: error [token_malformed] {message}" in err
    assert f"hint: {hint}" in err
    assert token[:40] not in err
    assert token[40:] not in err


def test_standard_input_may_end_with_one_line_break_but_not_two(
    token: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(token + "\r\n"))
    assert main(["inspect", "-"]) == 0
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdin", io.StringIO(token + "\n\n"))
    assert main(["inspect", "-"]) == 1
    assert "the token ends with a line break" in capsys.readouterr().err


# -- hints ------------------------------------------------------------------------------------


def test_a_token_error_gets_a_token_hint_not_a_settings_one(
    keys_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    forged = JoseSigner(KeyRing.generate(kid="k1")).sign(_claims())
    assert main(["inspect", forged, "--verify", "--keys", str(keys_file)]) == 1
    err = capsys.readouterr().err
    assert "hint: the token was not issued with these keys, or it was altered" in err
    assert "PAUSETOKEN_*" not in err


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["keygen", "--kid", "no spaces"], InvalidKeys.actions["kid_invalid"]),
        (["inspect", "TOKEN", "--verify"], InvalidSettings.actions["settings_missing"]),
        (
            ["inspect", "TOKEN", "--verify", "--keys", "KEYS", "--issuer", "other"],
            "set PAUSETOKEN_ISSUER (inspect: --issuer) to the minting service's issuer",
        ),
        (
            ["store", "check", "memory://", "--concurrency", "1"],
            "Run pausetoken store check --help for the arguments.",
        ),
        (["store", "check", "nosuch://db"], UnknownBackend.action),
    ],
    ids=["kid", "no-keys", "issuer", "usage", "unknown-store"],
)
def test_each_error_gets_the_hint_of_its_code(
    argv: list[str],
    hint: str,
    token: str,
    keys_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    swap = {"TOKEN": token, "KEYS": str(keys_file)}
    assert main([swap.get(arg, arg) for arg in argv]) in {1, 2}
    err = capsys.readouterr().err
    assert f"hint: {hint}" in err
    assert err.count("hint:") == 1


def test_every_hint_of_the_command_line_is_for_a_declared_code() -> None:
    declared = {code for error in _ERRORS for code in error.codes}
    assert set(TERMINAL_HINTS) <= declared


def test_configuration_errors_get_what_their_class_says_to_do() -> None:
    # Raised at start-up, their declared actions speak to whoever runs the command.
    configuration = [error for error in _ERRORS if issubclass(error, ConfigurationError)]
    own = {code for code in TERMINAL_HINTS if any(code in e.codes for e in configuration)}
    assert own == {"cli_rich_missing"}  # the one hint that is an install line


@posix_only
def test_an_insecure_key_file_is_named_with_its_variable_and_the_fix(
    token: str, keys_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    keys_file.chmod(0o666)
    monkeypatch.setenv("PAUSETOKEN_KEYS_FILE", str(keys_file))
    assert main(["inspect", token, "--verify"]) == 2
    err = capsys.readouterr().err
    assert (
        f"error [key_file_insecure] the key file {keys_file} (PAUSETOKEN_KEYS_FILE in the "
        "environment) can be written by other users (mode 666)"
    ) in err
    assert "hint: chmod 600 the key file" in err


def test_an_existing_output_file_hint_is_about_the_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "keys.json"
    path.write_text("keep me")
    assert main(["keygen", "-o", str(path)]) == 2
    assert "hint: Choose another path" in capsys.readouterr().err


# -- key files --------------------------------------------------------------------------------

_PEM = (
    "-----BEGIN PRIVATE KEY-----\n"
    "MC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF\n"
    "-----END PRIVATE KEY-----\n"
)


def _private_file(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o600)
    return path


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            _PEM,
            (
                "[key_is_pem] the key file {path} (PAUSETOKEN_KEYS_FILE in the environment): "
                "the key set is PEM, OpenSSH or PuTTY key material, not a JWK Set (JSON): "
                "create a key set with `pausetoken keygen -o FILE`"
            ),
        ),
        (
            '{"kty": "oct", "kid": "k1", "alg": "HS256", "k": "c2VjcmV0"}',
            (
                "[jwks_invalid] the key file {path} (PAUSETOKEN_KEYS_FILE in the environment): "
                'the key set is a single JWK, not a JWK Set: wrap it as {{"keys": [<the JWK, '
                'with "kid" and "alg">]}}, or create a key set with `pausetoken keygen -o FILE`'
            ),
        ),
        (
            '{"keys": [',
            (
                "[jwks_invalid] the key file {path} (PAUSETOKEN_KEYS_FILE in the environment): "
                "the key set is not valid JSON (line 1, column 11): fix it, or create a key set "
                "with `pausetoken keygen -o FILE`"
            ),
        ),
    ],
    ids=["pem", "single-jwk", "truncated"],
)
def test_a_bad_key_file_is_named_with_its_variable_and_path(
    content: str, message: str, token: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _private_file(tmp_path / "bad.json", content)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("PAUSETOKEN_KEYS_FILE", str(path))
        assert main(["inspect", token, "--verify"]) == 2
    err = capsys.readouterr().err
    assert f"pausetoken inspect: error {message.format(path=path)}" in err
    assert "MC4CAQAw" not in err
    assert "c2VjcmV0" not in err


def test_a_bad_keys_option_names_the_option(
    token: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _private_file(tmp_path / "bad.pem", _PEM)
    assert main(["inspect", token, "--verify", "--keys", str(path)]) == 2
    assert f"error [key_is_pem] the key file {path} (--keys): " in capsys.readouterr().err


def test_a_bad_inline_key_set_names_its_variable(
    token: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAUSETOKEN_KEYS", _PEM)
    assert main(["inspect", token, "--verify"]) == 2
    err = capsys.readouterr().err
    assert "error [key_is_pem] PAUSETOKEN_KEYS in the environment: the key set is PEM" in err


# -- inspect --json ---------------------------------------------------------------------------


def test_inspect_json_shows_header_and_claims_and_never_the_token(
    token: str, keys_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", token, "--verify", "--keys", str(keys_file), "--json"]) == 0
    out = capsys.readouterr().out
    shown = json.loads(out)
    assert shown["verified"] is True
    assert shown["header"]["typ"] == "pause+jwt"
    assert shown["claims"]["thread_id"] == "thread-1"
    assert token.rsplit(".", 1)[1] not in out


def test_inspect_json_escapes_hostile_values(capsys: pytest.CaptureFixture[str]) -> None:
    header = {"alg": "HS256", "typ": "pause+jwt", "kid": "k1"}
    hostile = _claims(thread_id="\x1b[2J\u202e")
    crafted = f"{_segment(header)}.{_segment(hostile)}.c2lnbmF0dXJl"
    assert main(["inspect", crafted, "--json"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert "\u202e" not in out
    assert json.loads(out)["claims"]["thread_id"] == "\x1b[2J\u202e"


# -- status and revoke ------------------------------------------------------------------------

ACME = Scope("acme", namespace="billing")


@pytest.fixture
def service_env(keys_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keys_file.chmod(0o600)
    monkeypatch.setenv("PAUSETOKEN_STORE_URL", "sqlite_file_store:SQLiteFileStore")
    monkeypatch.setenv("PAUSETOKEN_STORE_OPTIONS", json.dumps({"path": str(tmp_path / "t.db")}))
    monkeypatch.setenv("PAUSETOKEN_KEYS_FILE", str(keys_file))


@pytest.fixture
def acme_token(keys: KeyRing) -> str:
    return JoseSigner(keys).sign(_claims(scope_hash=hash_scope(ACME)))


@pytest.mark.usefixtures("service_env")
def test_status_revoke_status(acme_token: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", acme_token, "--scope", "acme//billing"]) == 0
    out, err = capsys.readouterr()
    assert out == "active\n"
    assert "pausetoken status: the token is not answered yet: it can still be redeemed" in err
    assert main(["revoke", acme_token, "--scope", "acme//billing"]) == 0
    out, err = capsys.readouterr()
    assert out == "revoked\n"
    assert "pausetoken revoke: the pause is revoked" in err
    assert main(["status", acme_token, "--scope", "acme//billing", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"status": "revoked"}
    assert main(["revoke", acme_token, "--scope", "acme//billing", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"status": "revoked", "revoked": True}


@pytest.mark.usefixtures("service_env")
def test_status_reads_the_token_from_standard_input(
    acme_token: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(acme_token + "\n"))
    scope = json.dumps({"tenant_id": "acme", "namespace": "billing"})
    assert main(["status", "-", "--scope", scope]) == 0
    assert capsys.readouterr().out == "active\n"


@pytest.mark.usefixtures("service_env")
def test_status_in_another_scope_is_refused_with_the_scope_hint(
    acme_token: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["status", acme_token, "--scope", "acme"]) == 1
    err = capsys.readouterr().err
    assert "pausetoken status: error [scope_mismatch]" in err
    assert "hint: pass the --scope the token was minted for" in err


@pytest.mark.usefixtures("service_env")
def test_status_of_an_expired_token_is_expired(
    keys: KeyRing, capsys: pytest.CaptureFixture[str]
) -> None:
    old = JoseSigner(keys).sign(_claims(iat=1_000_000, exp=1_003_600, scope_hash=hash_scope(ACME)))
    assert main(["status", old, "--scope", "acme//billing"]) == 0
    assert capsys.readouterr().out == "expired\n"


@pytest.mark.parametrize(
    ("text", "scope"),
    [
        ("acme", Scope("acme")),
        ("acme/eu", Scope("acme", sub_tenant_id="eu")),
        ("acme/eu/billing", Scope("acme", sub_tenant_id="eu", namespace="billing")),
        ("acme//billing", Scope("acme", namespace="billing")),
        ('{"tenant_id": "a/b", "namespace": "c"}', Scope("a/b", namespace="c")),
    ],
)
def test_scope_forms(text: str, scope: Scope) -> None:
    assert parse_scope(text) == scope


@pytest.mark.parametrize(
    "text", ["", "/eu", "a/b/c/d", "{not json", '{"namespace": "x"}', '{"tenant_id": 1}']
)
def test_bad_scopes_are_usage_errors_that_never_repeat_the_value(
    text: str, acme_token: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["status", acme_token, "--scope", text]) == 2
    err = capsys.readouterr().err
    assert "[cli_usage] --scope" in err
    if text:
        assert text not in err


def test_status_needs_a_scope(acme_token: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", acme_token]) == 2
    assert "--scope" in capsys.readouterr().err


def test_status_without_settings_says_what_to_set(
    acme_token: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["status", acme_token, "--scope", "acme"]) == 2
    err = capsys.readouterr().err
    assert "error [settings_missing] pausetoken is not configured: set PAUSETOKEN_STORE_URL" in err
    assert f"hint: {InvalidSettings.actions['settings_missing']}" in err


def test_not_configured_tells_to_make_the_key_file_with_keygen_dash_o(
    acme_token: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # keygen says to use -o (a file created readable only by you), so the hint does too.
    assert main(["status", acme_token, "--scope", "acme"]) == 2
    err = capsys.readouterr().err
    assert "create a key set with `pausetoken keygen -o FILE`" in err
    assert "keygen >" not in err


def test_no_hint_or_page_redirects_keygen_into_a_file() -> None:
    root = Path(__file__).parents[2]
    sources = [*root.glob("docs/*.md"), root / "README.md", *root.glob("sdk/src/**/*.py")]
    said = [str(path.relative_to(root)) for path in sources if "keygen >" in path.read_text()]
    assert said == []


@pytest.mark.usefixtures("service_env")
def test_status_refuses_a_memory_store(
    acme_token: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAUSETOKEN_STORE_URL", "memory://")
    monkeypatch.delenv("PAUSETOKEN_STORE_OPTIONS")
    assert main(["revoke", acme_token, "--scope", "acme//billing"]) == 2
    assert "[cli_usage] PAUSETOKEN_STORE_URL is memory://" in capsys.readouterr().err


@pytest.mark.usefixtures("service_env")
def test_status_with_a_postgres_url_suggests_postgresql(
    acme_token: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAUSETOKEN_STORE_URL", "postgres://app:hunter2@db/tokens")
    monkeypatch.delenv("PAUSETOKEN_STORE_OPTIONS")
    assert main(["status", acme_token, "--scope", "acme//billing"]) == 2
    err = capsys.readouterr().err
    assert (
        "error [unknown_backend] PAUSETOKEN_STORE_URL: postgres:// names no store; did you "
        "mean postgresql+asyncpg://app:***@db/tokens"
    ) in err
    assert "hunter2" not in err


@pytest.mark.usefixtures("service_env")
def test_status_names_a_single_jwk_key_file_by_its_variable(
    acme_token: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = _private_file(tmp_path / "one.json", '{"kty": "oct", "k": "c2VjcmV0"}')
    monkeypatch.setenv("PAUSETOKEN_KEYS_FILE", str(path))
    assert main(["status", acme_token, "--scope", "acme//billing"]) == 2
    err = capsys.readouterr().err
    assert (
        f"error [jwks_invalid] the key file {path} (PAUSETOKEN_KEYS_FILE in the environment): "
        "the key set is a single JWK, not a JWK Set"
    ) in err
    assert "PAUSETOKEN_KEYS in" not in err


# -- backends ---------------------------------------------------------------------------------


@pytest.mark.slow  # imports every installed backend
def test_backends_json_lists_targets_and_import_state(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backends", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert set(listing) == {"stores", "signers", "checkpoints"}
    memory = next(b for b in listing["stores"] if b["name"] == "memory")
    assert memory == {
        "name": "memory",
        "target": "pausetoken._memory_store:MemoryStore",
        "distribution": "pausetoken",
        "version": importlib.metadata.version("pausetoken"),
        "imports": True,
        "error": None,
    }


@pytest.mark.slow  # imports every installed backend
def test_backends_is_readable_in_80_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["backends"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    version = importlib.metadata.version("pausetoken")
    assert f"pausetoken {version}" in out  # not folded across lines
    assert "provided by" in out


@pytest.mark.slow  # imports every installed backend
def test_backends_shows_a_backend_that_fails_to_import(
    capsys: pytest.CaptureFixture[str],
) -> None:
    register_store("broken", "pausetoken_no_such_module:Store")
    assert main(["backends"]) == 0
    assert "no: backend_not_installed" in capsys.readouterr().out


# -- bench ------------------------------------------------------------------------------------

# A benchmarks directory as the command sees one: report.py lists the benchmarks and renders
# the page; compare.py is a helper that must never run as a benchmark.
_REPORT = """\
import json
from pathlib import Path

RESULTS_VARIABLE = "PAUSETOKEN_BENCH_RESULTS"
PAGE = Path(__file__).parent.parent / "docs" / "benchmarks.md"


def commands():
    return [["benchmarks/fast.py"], ["benchmarks/needy.py"], ["benchmarks/engines.py"],
            ["benchmarks/broken.py", "--url", "redis://:hunter2@cache/0"]]


def shown(argv):
    return "python " + " ".join("URL" if "://" in arg else arg for arg in argv)


def recorded(path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def page_data(runs, *, quick):
    return {"quick": quick, "runs": runs}


def render(data):
    return json.dumps(data, sort_keys=True)
"""

_RECORD = """\
import json, os, sys

def record(measure, ratio, target=None, better="higher"):
    line = {"measure": measure, "ratio": ratio, "detail": "", "target": target, "better": better}
    with open(os.environ["PAUSETOKEN_BENCH_RESULTS"], "a") as out:
        out.write(json.dumps(line) + "\\n")

"""

_SCRIPTS = {
    "fast": _RECORD
    + """\
print("mint      5,993 ops/s   joserfc jwt.encode      25,876 ops/s   ratio 0.23")
record("mint: ours / joserfc jwt.encode", 0.23)
record("claims/s at concurrency 16, sqlite: store / raw", 1.5, 0.8)
record("claim latency p99, 200,000 / 10,000 rows", 3.0, 1.5, "lower")
if "--quick" in sys.argv:
    record("quick only", 1.05)
""",
    "needy": "import pausetoken_no_such_module\n",
    "engines": _RECORD
    + """\
print("\\n== sqlite: skipped (sqlalchemy, aiosqlite not installed)")
print("\\n== mongodb: skipped (no PAUSETOKEN_TEST_MONGODB_URL, nx-27017 not installed)")
record("redis claims/s: store / raw", 0.9, 0.8)
""",
    "broken": "raise SystemExit(3)\n",
    # Helpers next to the benchmarks: running them as benchmarks is the bug this guards.
    "compare": "open('compare-ran', 'w').write('ran')\nraise SystemExit(2)\n",
    "_results": "raise SystemExit(3)\n",
}


@pytest.fixture
def bench_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "checkout" / "benchmarks"
    directory.mkdir(parents=True)
    (directory / "report.py").write_text(_REPORT)
    for name, source in _SCRIPTS.items():
        (directory / f"{name}.py").write_text(source)
    return directory


def _canned_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Run each tiny benchmark in this process instead of an interpreter (the fast tests)."""
    ran: list[str] = []

    def run_benchmark(benchmark: Any, root: Path, report: Any, *, on_line: Any) -> Any:
        ran.append(" ".join(benchmark.argv))
        source = (root / benchmark.argv[0]).read_text()
        results = Path(tempfile.mkdtemp()) / "results.jsonl"
        out = io.StringIO()
        status = 0
        old_argv = sys.argv
        sys.argv = list(benchmark.argv)
        monkeypatch.setenv(report.RESULTS_VARIABLE, str(results))
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(source, benchmark.argv[0], "exec"), {})  # noqa: S102
        except SystemExit as exit_:
            status = int(exit_.code or 0)
        except ModuleNotFoundError as exc:
            out.write(f"ModuleNotFoundError: No module named '{exc.name}'\n")
            status = 1
        finally:
            sys.argv = old_argv
        lines = tuple(out.getvalue().splitlines())
        return bench._BenchRun(benchmark, status, 0.01, lines, tuple(report.recorded(results)))

    monkeypatch.setattr(bench, "_run_benchmark", run_benchmark)
    return ran


def _table(out: str) -> dict[str, str]:
    return {line.split("│")[2].strip(): line for line in out.splitlines() if line.count("│") == 5}


def test_bench_runs_what_report_lists_and_prints_the_recorded_ratios(
    bench_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = _canned_runs(monkeypatch)
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["bench", "fast", "engines", "--quick", "--dir", str(bench_dir)]) == 0
    assert ran == ["benchmarks/fast.py --quick", "benchmarks/engines.py --quick"]
    out, err = capsys.readouterr()
    assert "pausetoken benchmarks: ratios" in out
    rows = _table(out)
    # Each label is the measure the benchmark recorded, whole.
    assert "0.23" in rows["mint: ours / joserfc jwt.encode"]
    assert ">= 0.8" in rows["claims/s at concurrency 16, sqlite: store / raw"]
    assert "<= 1.5 (missed)" in rows["claim latency p99, 200,000 / 10,000 rows"]
    assert "1.05" in rows["quick only"]
    assert "0.90" in rows["redis claims/s: store / raw"]
    assert "pausetoken bench: engines: skipped sqlite (sqlalchemy, aiosqlite not installed)" in err
    assert "pausetoken bench: engines: skipped mongodb (no PAUSETOKEN_TEST_MONGODB_URL" in err


def test_bench_never_runs_a_helper_and_writes_no_file_unless_asked(
    bench_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = _canned_runs(monkeypatch)
    before = sorted(p.name for p in bench_dir.parent.rglob("*"))
    assert main(["bench", "--dir", str(bench_dir)]) == 1  # broken.py fails
    assert [command.split()[0] for command in ran] == [
        "benchmarks/fast.py",
        "benchmarks/needy.py",
        "benchmarks/engines.py",
        "benchmarks/broken.py",
    ]
    assert sorted(p.name for p in bench_dir.parent.rglob("*")) == before
    assert "compare" not in capsys.readouterr().err


def test_bench_skips_a_benchmark_whose_module_is_not_installed_with_one_line(
    bench_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _canned_runs(monkeypatch)
    assert main(["bench", "needy", "fast", "--dir", str(bench_dir)]) == 0
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if "needy" in line]
    assert said == [
        (
            "pausetoken bench: skipped needy: it needs the module 'pausetoken_no_such_module', "
            "which is not installed"
        )
    ]


def test_bench_reports_a_failing_benchmark_without_its_url_password(
    bench_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _canned_runs(monkeypatch)
    assert main(["bench", "broken", "--dir", str(bench_dir)]) == 1
    err = capsys.readouterr().err
    assert "pausetoken bench: broken failed (exit status 3)" in err
    assert f"hint: `python benchmarks/broken.py --url URL` in {bench_dir.parent}" in err
    assert "hunter2" not in err


@pytest.mark.parametrize("option", ["--output", "--write-page"])
def test_bench_writes_the_page_only_where_asked(
    bench_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    option: str,
) -> None:
    _canned_runs(monkeypatch)
    (bench_dir.parent / "docs").mkdir()
    page = tmp_path / "page.md" if option == "--output" else bench_dir.parent / "docs/benchmarks.md"
    where = [option, str(page)] if option == "--output" else [option]
    assert main(["bench", "fast", "needy", "--quick", "--dir", str(bench_dir), *where]) == 0
    data = json.loads(page.read_text())
    assert data["quick"] is True
    assert [run["command"] for run in data["runs"]] == ["python benchmarks/fast.py --quick"]
    assert data["runs"][0]["results"][0]["measure"] == "mint: ours / joserfc jwt.encode"
    err = capsys.readouterr().err
    assert f"pausetoken bench: wrote {page}" in err
    assert "the page leaves out the skipped needy" in err


def test_bench_refuses_an_unknown_benchmark_and_names_the_listed_ones(
    bench_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "compare", "--dir", str(bench_dir)]) == 2
    err = capsys.readouterr().err
    assert "[cli_usage] no benchmark named compare; there are fast, needy, engines, broken" in err


def test_bench_needs_the_report_that_lists_the_benchmarks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "--dir", str(tmp_path)]) == 2
    assert "[cli_benchmarks_missing]" in capsys.readouterr().err


def test_bench_outside_a_checkout_says_the_benchmarks_are_not_installed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "_checkouts", lambda: iter(()))
    assert main(["bench"]) == 2
    err = capsys.readouterr().err
    assert (
        "pausetoken bench: error [cli_benchmarks_missing] the benchmarks are scripts in a "
        "checkout of the pausetoken repository (benchmarks/), not part of the installed package"
    ) in err
    assert f"hint: {CommandLineError.actions['cli_benchmarks_missing']}" in err


def test_bench_with_a_missing_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--dir", str(tmp_path / "nope")]) == 2
    assert "[cli_benchmarks_missing] --dir" in capsys.readouterr().err


@pytest.mark.slow  # starts interpreters
def test_bench_runs_each_benchmark_in_its_own_interpreter(
    bench_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["bench", "fast", "needy", "--quick", "--dir", str(bench_dir)]) == 0
    out, err = capsys.readouterr()
    assert "1.05" in _table(out)["quick only"]
    assert "pausetoken bench: skipped needy: it needs the module" in err
    assert "1/2" in err or "2/2" in err  # the progress bar


#: What the ``cli`` extra lacks: every backend, database driver, LangGraph and PyJWT.
_NOT_IN_THE_CLI_EXTRA = (
    "sqlalchemy aiosqlite asyncpg asyncmy redis pymongo langgraph jwt pausetoken_sqlalchemy "
    "pausetoken_redis pausetoken_mongo pausetoken_langgraph"
)
_SITECUSTOMIZE = """\
import importlib.abc, importlib.util, os, sys

_HIDDEN = set(os.environ["PAUSETOKEN_TEST_HIDE_MODULES"].split())


class _Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in _HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Hide())
_find_spec = importlib.util.find_spec


def find_spec(name, package=None):
    if name.partition(".")[0] in _HIDDEN:
        return None
    return _find_spec(name, package)


importlib.util.find_spec = find_spec
"""


@pytest.mark.slow  # runs the real quick benchmarks (about 10 s)
def test_bench_quick_of_this_checkout_works_from_the_cli_extra_alone(tmp_path: Path) -> None:
    root = Path(__file__).parents[2]
    (tmp_path / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
        "PAUSETOKEN_TEST_HIDE_MODULES": _NOT_IN_THE_CLI_EXTRA,
        "COLUMNS": "200",
    }
    page = root / "docs" / "benchmarks.md"
    before = page.read_bytes()
    done = subprocess.run(
        # --dir: an installed (not editable) pausetoken finds no checkout of its own.
        [sys.executable, "-m", "pausetoken", "bench", "--quick", "--dir", str(root / "benchmarks")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert page.read_bytes() == before
    assert "import cost, pausetoken / attrs" in done.stdout
    err = done.stderr
    assert "skipped verify: it needs the module 'jwt', which is not installed" in err
    assert "skipped langgraph_resume: it needs the module" in err
    assert "pausetoken bench: stores: skipped sqlite (" in err
    assert "compare" not in err


# -- commands contributed by distributions (the pausetoken.commands group) --------------------

HELLO = """
from pausetoken.cli import EXIT_OK, FunctionCommand

def _arguments(parser):
    parser.add_argument("--name", default="world")

def _run(args):
    print(f"hello {args.name}")
    return EXIT_OK

hello = FunctionCommand(help="say hello to someone", arguments=_arguments, run=_run)
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Site:
    return Site(tmp_path / "site", monkeypatch)


@pytest.fixture
def hello(site: Site) -> str:
    """A third party's distribution ``acme-hello`` adding ``pausetoken hello``; its module."""
    module = site.module(HELLO)
    site.distribution("acme-hello", "1.0", {GROUP: {"hello": f"{module}:hello"}})
    return module


def test_an_installed_command_runs_with_its_own_arguments(
    hello: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["hello", "--name", "ada"]) == 0
    assert capsys.readouterr().out == "hello ada\n"


def test_an_installed_command_has_its_own_help(
    hello: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["hello", "--help"]) == 0
    out = capsys.readouterr().out
    assert "say hello to someone" in out
    assert "--name" in out


def test_help_lists_installed_commands_without_importing_them(
    hello: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    [line] = [line for line in out.splitlines() if line.split()[:1] == ["hello"]]
    assert "acme-hello 1.0" in line
    assert hello not in sys.modules


def test_a_command_module_is_imported_only_when_its_command_runs(
    hello: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keygen"]) == 0
    assert hello not in sys.modules
    assert main(["hello"]) == 0
    assert hello in sys.modules
    assert capsys.readouterr().out.endswith("hello world\n")


def test_a_known_command_that_is_not_installed_names_the_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    hide_distributions(monkeypatch, "pausetoken-langgraph")
    assert main(["demo", "--dir", "x"]) == 2
    err = capsys.readouterr().err
    install = install_hint("pausetoken[langgraph,sqlite,cli]", "pausetoken-langgraph[sqlite]")
    assert (
        "pausetoken demo: error [command_not_installed] the command 'demo' is not installed: "
        f"it is provided by pausetoken-langgraph: {install}"
    ) in err
    assert f"hint: {BackendNotInstalled.action}" in err
    assert main(["--help"]) == 0
    lines = capsys.readouterr().out.splitlines()
    listed = [line.split()[0] for line in lines if line.startswith("    ") and line.strip()]
    assert "demo" not in listed
    assert "keygen" in listed


def test_an_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nope"]) == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err


def test_two_distributions_registering_one_command_is_an_error(
    site: Site, hello: str, capsys: pytest.CaptureFixture[str]
) -> None:
    site.distribution("other-hello", "2.0", {GROUP: {"hello": f"{hello}:hello"}})
    assert main(["hello"]) == 2
    err = capsys.readouterr().err
    assert (
        "pausetoken hello: error [ambiguous_command] two distributions register the command "
        "'hello': acme-hello 1.0 and other-hello 2.0; uninstall one of them"
    ) in err
    assert hello not in sys.modules
    assert main(["keygen"]) == 0  # the others are not disturbed


def test_a_command_named_like_a_built_in_one_is_an_error(
    site: Site, hello: str, capsys: pytest.CaptureFixture[str]
) -> None:
    site.distribution("acme-keys", "1.0", {GROUP: {"keygen": f"{hello}:hello"}})
    assert main(["keygen"]) == 2
    assert (
        "error [ambiguous_command] two distributions register the command 'keygen': "
        "pausetoken (built in) and acme-keys 1.0; uninstall one of them"
    ) in capsys.readouterr().err


def test_one_distribution_seen_twice_is_not_ambiguous(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hello: str, capsys: pytest.CaptureFixture[str]
) -> None:
    again = Site(tmp_path / "again", monkeypatch)
    again.distribution("acme-hello", "1.0", {GROUP: {"hello": f"{hello}:hello"}})
    assert main(["hello"]) == 0
    assert capsys.readouterr().out == "hello world\n"


def test_a_command_that_fails_to_import_names_its_distribution(
    site: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    module = site.module("raise RuntimeError('details-of-the-failure')\n")
    site.distribution("acme-broken", "1.0", {GROUP: {"broken": f"{module}:command"}})
    assert main(["broken"]) == 2
    err = capsys.readouterr().err
    assert (
        f"pausetoken broken: error [command_import_failed] the command 'broken' "
        f"({module}:command from acme-broken 1.0) failed to import: RuntimeError"
    ) in err
    assert f"hint: {PluginError.actions['command_import_failed']}" in err
    assert "details-of-the-failure" not in err
    assert "Traceback" not in err
    assert main(["broken", "--debug"]) == 2
    assert "details-of-the-failure" in capsys.readouterr().err


def test_a_command_missing_a_module_names_the_module(
    site: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    module = site.module("import pausetoken_no_such_module\n")
    site.distribution("acme-broken", "1.0", {GROUP: {"broken": f"{module}:command"}})
    assert main(["broken"]) == 2
    assert (
        f"error [command_import_failed] the command 'broken' ({module}:command from "
        "acme-broken 1.0) cannot be imported: ModuleNotFoundError for 'pausetoken_no_such_module'"
    ) in capsys.readouterr().err


def test_an_entry_point_that_is_not_a_command_is_refused(
    site: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    module = site.module("command = object()\n")
    site.distribution("acme-odd", "1.0", {GROUP: {"odd": f"{module}:command"}})
    assert main(["odd"]) == 2
    assert (
        f"error [command_invalid] the command 'odd' ({module}:command from acme-odd 1.0) is "
        "not a command: it needs help, arguments and run"
    ) in capsys.readouterr().err


def test_a_broken_command_disturbs_neither_help_nor_the_others(
    site: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    module = site.module("raise RuntimeError('boom')\n")
    site.distribution("acme-broken", "1.0", {GROUP: {"broken": f"{module}:command"}})
    assert main(["--help"]) == 0
    assert "acme-broken" in capsys.readouterr().out
    assert main(["keygen"]) == 0


@pytest.mark.slow
def test_help_in_a_fresh_interpreter_imports_no_command_module_backend_or_crypto() -> None:
    code = (
        "import json, sys\n"
        "from pausetoken.__main__ import main\n"
        "status = main(['--help'])\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in "
        "{'pausetoken_langgraph', 'pausetoken_sqlalchemy', 'langgraph', 'sqlalchemy', 'rich',"
        " 'joserfc', 'cattrs'}]\n"
        "sys.stderr.write(json.dumps([status, sorted(loaded)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(done.stderr) == [0, []]


def test_version_names_the_distributions_that_plug_in(
    hello: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--version"]) == 0
    assert "acme-hello 1.0" in capsys.readouterr().out


def test_the_door_for_command_authors_is_documented() -> None:
    import pausetoken.cli

    for name in pausetoken.cli.__all__:
        obj = getattr(pausetoken.cli, name)
        if callable(obj):
            assert obj.__doc__, f"pausetoken.cli.{name} has no docstring"


def test_every_built_in_command_follows_the_protocol() -> None:
    for builtin in COMMANDS:
        assert isinstance(builtin.command, Command)
