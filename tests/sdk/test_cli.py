"""The pausetoken command line, run in-process through ``main(argv)``."""

from __future__ import annotations

import base64
import io
import json
import os
import stat
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

import pytest

from pausetoken import JoseSigner, KeyRing, SealedSigner
from pausetoken._claims import new_jti
from pausetoken._cli import COMMANDS, main

if TYPE_CHECKING:
    from pathlib import Path


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
    for name in ("KEYS", "KEYS_FILE", "ISSUER", "AUDIENCE"):
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


def test_backends_lists_the_built_ins(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backends"]) == 0
    out = capsys.readouterr().out
    for name in ("memory", "jose", "sealed", "stores", "signers", "checkpoints"):
        assert name in out
    assert "yes" in out


# -- errors and usage ---------------------------------------------------------------------


def test_missing_rich_names_the_extra(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "rich.console", None)
    assert main(["backends"]) == 2
    assert 'pip install "pausetoken[cli]"' in capsys.readouterr().err


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
