"""An atheris target for the verifier: any input is refused with a typed error, quietly.

    python tests/fuzz/verify_target.py CORPUS_DIR -max_total_time=60    # what `nox -s fuzz` runs

Each input is verified twice: as it is, and with its first two segments re-signed with this
target's key, so that inputs from any key (the corpus is seeded with the tokens the test
suite signed) reach the header, claims and time checks behind the signature. Anything but a
`PauseTokenError`, or an error whose message, detail, repr or problem details quote the
input, is a crash that libFuzzer reports with the input that caused it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import sys

import atheris

with atheris.instrument_imports():
    from pausetoken import JoseSigner, KeyRing, PauseTokens
    from pausetoken.exceptions import PauseTokenError

SECRET = secrets.token_bytes(32)
SIGNER = JoseSigner(KeyRing.from_secret(SECRET, kid="fuzz"))
# Claims carry fixed times: a clock at their issue keeps re-signed tokens in their lifetime.
NOW = 1_800_000_000.0


class _NoStore:
    """The verifier needs neither store nor checkpoints; calling them is a bug here."""

    def __getattr__(self, name: str) -> object:
        msg = f"verify used the {name!r} of a store or reader"
        raise AssertionError(msg)


SERVICE = PauseTokens(signer=SIGNER, store=_NoStore(), checkpoints=_NoStore(), clock=lambda: NOW)  # type: ignore[arg-type]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _resigned(token: str) -> str | None:
    parts = token.split(".")
    if len(parts) < 2:  # a header and a payload
        return None
    signing_input = f"{parts[0]}.{parts[1]}"
    try:
        mac = hmac.new(SECRET, signing_input.encode("utf-8", "surrogatepass"), hashlib.sha256)
    except UnicodeError:
        return None
    return f"{signing_input}.{_b64(mac.digest())}"


def _check(token: str) -> None:
    try:
        SERVICE.verify(token)
    except PauseTokenError as exc:
        if len(token) >= 12:  # shorter input may match a word by chance
            shown = (str(exc), exc.detail, repr(exc), json.dumps(exc.to_problem()))
            if any(token in text for text in shown):
                msg = f"{exc.code} echoes the token"
                raise AssertionError(msg) from None


def test_one_input(data: bytes) -> None:
    """The entry point libFuzzer calls with each input."""
    token = data.decode("utf-8", "surrogateescape")
    _check(token)
    resigned = _resigned(token)
    if resigned is not None:
        _check(resigned)


def main() -> None:
    """Fuzz with libFuzzer's arguments (a corpus directory, ``-max_total_time``, ...)."""
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
