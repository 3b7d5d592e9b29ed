"""Watch a whole test run for secrets in log records and audit events.

While installed, the watch

* keeps every log record of every logger (a handler on the root logger; the ``pausetoken``
  logger is opened to DEBUG so that nothing is filtered out before it is seen);
* adds a recording observer and a `LoggingObserver` (logger ``tests.audit``) to every
  `PauseTokens` built, so the whole suite exercises the events;
* remembers the secrets the tests use: every token signed (its payload and signature
  segments), the jti and hashes in its claims, the key material of every key ring a signer
  holds, and the strings inside every payload minted and every answer redeemed (but for
  interrupt names, which events carry by design).

`assert_clean()` then fails if any record or event contains one of them, or if an event has
a field outside the format the docs promise (12-hex fingerprints, an 8-hex scope prefix,
snake_case outcomes and codes).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import re
from typing import TYPE_CHECKING, Any

import attrs

from pausetoken import AuditEvent, KeyRing, LoggingObserver, PauseTokens
from pausetoken._signers import JoseSigner, SealedSigner

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

__all__ = ["SecretsWatch"]

# Words that could be a secret: base64url or hex runs long enough to be one.
_WORD = re.compile(r"[A-Za-z0-9_-]{16,}")
_FINGERPRINT = re.compile(r"[0-9a-f]{12}")
_SCOPE_PREFIX = re.compile(r"[0-9a-f]{8}")
_SNAKE = re.compile(r"[a-z][a-z_]*")
# A payload or answer string shorter than this is a word, not a secret ("approved").
_MIN_TEXT = 12
# The attributes every LogRecord has; the rest are a record's ``extra`` fields.
_RECORD_ATTRIBUTES = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class _Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.NOTSET)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


class SecretsWatch:
    """Collects records, events and the secrets they must not contain."""

    def __init__(self) -> None:
        self.observe = True
        self.events: list[AuditEvent] = []
        self.words: set[str] = set()  # tokens' segments, jtis, hashes, key material
        self.texts: set[str] = set()  # strings inside payloads and answers
        self.names: set[str] = set()  # interrupt names: events carry them by design
        self.tokens: set[str] = set()  # every token signed or redeemed: the fuzzer's seeds
        self._handler = _Keep()
        # Its own logger, so tests counting pausetoken.audit records see only their own.
        self.logging_observer = LoggingObserver(logging.getLogger("tests.audit"))

    @property
    def records(self) -> list[logging.LogRecord]:
        return self._handler.records

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        root = logging.getLogger()
        core = logging.getLogger("pausetoken")
        level = core.level
        patches = contextlib.ExitStack()
        with patches:
            root.addHandler(self._handler)
            patches.callback(root.removeHandler, self._handler)
            core.setLevel(logging.DEBUG)
            patches.callback(core.setLevel, level)
            self.logging_observer.logger.setLevel(logging.DEBUG)
            self._patch(patches, PauseTokens, "__init__", self._wrap_init)
            self._patch(patches, PauseTokens, "register", self._wrap_register)
            self._patch(patches, PauseTokens, "mint", self._wrap_mint)
            self._patch(patches, PauseTokens, "redeem", self._wrap_redeem)
            self._patch(patches, PauseTokens, "consume", self._wrap_consume)
            for signer in (JoseSigner, SealedSigner):
                self._patch(patches, signer, "sign", self._wrap_sign)
            yield

    @staticmethod
    def _patch(
        patches: contextlib.ExitStack,
        owner: type,
        name: str,
        wrap: Callable[[Any], Any],
    ) -> None:
        original = owner.__dict__[name]
        setattr(owner, name, functools.wraps(original)(wrap(original)))
        patches.callback(setattr, owner, name, original)

    # -- what the tests use --------------------------------------------------------------

    def _wrap_init(self, original: Any) -> Any:
        watch = self

        def init(service: PauseTokens, *args: Any, **options: Any) -> None:
            if watch.observe:
                given = tuple(options.pop("observers", ()))
                options["observers"] = (*given, watch.events.append, watch.logging_observer)
            original(service, *args, **options)
            ring = getattr(service.signer, "_keys", None)
            if isinstance(ring, KeyRing):
                watch.remember_keys(ring)

        return init

    def _wrap_register(self, original: Any) -> Any:
        watch = self

        def register(service: PauseTokens, interrupt: Any) -> Any:
            watch.names.add(interrupt.name)
            return original(service, interrupt)

        return register

    def _wrap_mint(self, original: Any) -> Any:
        watch = self

        async def mint(service: PauseTokens, interrupt: Any, payload: Any, **options: Any) -> Any:
            watch.remember_text(payload)
            return await original(service, interrupt, payload, **options)

        return mint

    def _wrap_redeem(self, original: Any) -> Any:
        watch = self

        def redeem(service: PauseTokens, token: Any, response: Any, **options: Any) -> Any:
            watch.remember_text(response)
            if isinstance(token, str):
                watch.remember_token(token)
            return original(service, token, response, **options)

        return redeem

    def _wrap_consume(self, original: Any) -> Any:
        # consume() redeems without going through redeem(): it is watched on its own.
        watch = self

        async def consume(service: PauseTokens, token: Any, response: Any, **options: Any) -> Any:
            watch.remember_text(response)
            if isinstance(token, str):
                watch.remember_token(token)
            return await original(service, token, response, **options)

        return consume

    def _wrap_sign(self, original: Any) -> Any:
        watch = self

        def sign(signer: Any, claims: dict[str, Any]) -> str:
            token: str = original(signer, claims)
            watch.remember_token(token)
            for name in ("jti", "scope_hash", "request_hash"):
                value = claims.get(name)
                if isinstance(value, str) and len(value) >= 16:
                    watch.words.add(value)
            ring = getattr(signer, "_keys", None)
            if isinstance(ring, KeyRing):
                watch.remember_keys(ring)
            return token

        return sign

    def remember_token(self, token: str) -> None:
        self.tokens.add(token)
        # The header segment is the same for every token of a key: not a secret.
        self.words.update(part for part in token.split(".")[1:] if len(part) >= 16)

    def remember_keys(self, ring: KeyRing) -> None:
        with contextlib.suppress(Exception):
            for key in ring.to_jwks()["keys"]:
                self.words.update(str(key[name]) for name in ("k", "d") if name in key)

    def remember_text(self, value: Any) -> None:
        if isinstance(value, str):
            if len(value) >= _MIN_TEXT:
                self.texts.add(value)
        elif isinstance(value, dict):
            # Values only: keys are mostly the shape's own member names (``edited_action``),
            # which errors name as field paths; keys a submitter chose never reach a message
            # (describe_error shows them as ``[*]``, tested on its own).
            for item in value.values():
                self.remember_text(item)
        elif isinstance(value, list | tuple):
            for item in value:
                self.remember_text(item)
        elif attrs.has(type(value)):
            self.remember_text(attrs.asdict(value, recurse=False))

    def write_corpus(self, directory: Path) -> int:
        """Write every token seen, one file each (named by its hash), for the fuzzer."""
        directory.mkdir(parents=True, exist_ok=True)
        for token in self.tokens:
            data = token.encode("utf-8", "surrogateescape")
            (directory / hashlib.sha1(data).hexdigest()).write_bytes(data)  # noqa: S324 - a name
        return len(self.tokens)

    # -- the check -----------------------------------------------------------------------

    def assert_clean(self) -> None:
        self.texts = {t for t in self.texts if not any(t in name for name in self.names)}
        problems = [
            *(self._event_problems(event) for event in self.events),
            *(self._record_problems(record) for record in self.records),
        ]
        found = [problem for problem in problems if problem]
        assert not found, "secrets in logs or events:\n" + "\n".join(found[:20])

    def _leaks(self, text: str) -> str | None:
        """The secret ``text`` contains, if any (test data: safe to show in a failure)."""
        for word in _WORD.findall(text):
            if word in self.words:
                return word
        return next((secret for secret in self.texts if secret in text), None)

    def _event_problems(self, event: AuditEvent) -> str:
        formats = {
            "jti": _FINGERPRINT,
            "pause": _FINGERPRINT,
            "scope": _SCOPE_PREFIX,
            "outcome": _SNAKE,
            "code": _SNAKE,
        }
        for name, value in event.fields().items():
            pattern = formats.get(name)
            if pattern is not None and not pattern.fullmatch(str(value)):
                return f"event {event.kind.value}: {name} has an unexpected format"
        leak = self._leaks(repr(event))
        if leak is not None:
            return f"event {event.kind.value} contains {leak[:40]!r}"
        return ""

    def _record_problems(self, record: logging.LogRecord) -> str:
        try:
            message = record.getMessage()
        except Exception:  # a broken record is the logging call's own problem
            message = str(record.msg)
        extras = [
            repr(value) for name, value in vars(record).items() if name not in _RECORD_ATTRIBUTES
        ]
        shown = [message, *extras]
        if record.exc_info is not None:
            shown.append(logging.Formatter().formatException(record.exc_info))
        leak = next((found for text in shown if (found := self._leaks(text))), None)
        if leak is not None:
            return (
                f"log record of {record.name} ({record.levelname}) contains {leak[:40]!r}: "
                f"{message[:200]!r}"
            )
        return ""
