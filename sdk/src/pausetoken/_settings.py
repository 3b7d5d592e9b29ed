"""Settings: everything a [`PauseTokens`][pausetoken.PauseTokens] service needs to start.

Settings come from code, from ``PAUSETOKEN_*`` environment variables or from a TOML file.
There are no silent fallbacks: a store URL and a key set must always be given (``memory://``
is a valid store URL, but it has to be chosen), and anything that looks like a pausetoken
setting but is not one is refused, so a typo never goes unnoticed.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
import types
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final

import attrs
import cattrs

from pausetoken._keys import _MAKE_A_KEY_SET, KeyRing, read_keys_file
from pausetoken._policy import ServicePolicy, keyword_only, policy_keywords
from pausetoken._structure import make_converter
from pausetoken._urls import redact_url
from pausetoken.exceptions import Code, ConfigurationError, InvalidSettings, PauseTokenError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = ["ENV_PREFIX", "Settings", "parse_duration", "verifier_settings"]

#: Prefix of every environment variable pausetoken reads.
ENV_PREFIX: Final = "PAUSETOKEN_"

#: Codes of the configuration errors raised here (``InvalidSettings.code``).
MISSING: Final = InvalidSettings.SETTINGS_MISSING
UNKNOWN: Final = InvalidSettings.SETTINGS_UNKNOWN
CONFLICT: Final = InvalidSettings.SETTINGS_CONFLICT
INVALID: Final = InvalidSettings.SETTINGS_INVALID
UNREADABLE: Final = InvalidSettings.SETTINGS_FILE_UNREADABLE

_KEYGEN_HINT: Final = f"{_MAKE_A_KEY_SET} and keep that file secret"
_STORE_HINT: Final = (
    "for example 'sqlite+aiosqlite:///pausetoken.db', or 'memory://' for one process only"
)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,127}\Z")
_SECONDS = re.compile(r"^\d+(?:\.\d+)?\Z")
_DURATION = re.compile(r"^(?:\d+(?:\.\d+)?[smhd])+\Z")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_UNITS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_INTEGER = re.compile(r"^\d+\Z")


def _error(code: Code | str, msg: str) -> ConfigurationError:
    # Also re-raises a key set's error with its own code: the class declaring it is made.
    return ConfigurationError(msg, code=code)


def parse_duration(value: str | float | timedelta) -> timedelta:
    """Read a duration given as seconds or in the short form used in settings.

    Accepted: a `timedelta`, a non-negative number of seconds (``90``,
    ``"1.5"``), or numbers with the units ``s``, ``m``, ``h``, ``d`` (``"15m"``, ``"24h"``,
    ``"7d"``, ``"1h30m"``).

    Args:
        value: The duration.

    Returns:
        The duration as a `timedelta`.

    Raises:
        ConfigurationError: ``settings_invalid`` for anything else (negative numbers,
            unknown units, booleans, empty strings).

    Examples:
        >>> parse_duration("1h30m")
        datetime.timedelta(seconds=5400)
    """
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool):
        raise _error(INVALID, "a duration cannot be a boolean")
    elif isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and _SECONDS.match(value.strip()):
        seconds = float(value.strip())
    elif isinstance(value, str) and _DURATION.match(value.strip()):
        seconds = sum(
            float(number) * _UNITS[unit] for number, unit in _DURATION_PART.findall(value.strip())
        )
    else:
        msg = (
            "not a duration: give seconds ('90') or numbers with a unit s, m, h or d "
            "('15m', '24h', '7d', '1h30m')"
        )
        raise _error(INVALID, msg)
    if not 0 <= seconds < timedelta.max.total_seconds():
        raise _error(INVALID, "a duration must be zero or positive and finite")
    return timedelta(seconds=seconds)


# -- validators (run for every constructor, including plain code) ------------------------


def _name(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not _NAME.match(value):
        msg = f"{attribute.name} must be a name of letters, digits and '_.:+-'"
        raise _error(INVALID, msg)


def _store_url(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        msg = f"{attribute.name} must be a non-empty URL ({_STORE_HINT})"
        raise _error(MISSING, msg)
    if value != value.strip() or any(not ch.isprintable() for ch in value):
        msg = f"{attribute.name} must not contain whitespace at its ends or control characters"
        raise _error(INVALID, msg)


def _keyring(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, KeyRing):
        msg = f"{attribute.name} must be a KeyRing; {_KEYGEN_HINT}"
        raise _error(MISSING if value is None else INVALID, msg)


def _options(value: Mapping[str, Any]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        msg = "signer_options and store_options must be mappings with string keys"
        raise _error(INVALID, msg)
    return types.MappingProxyType(dict(value))


@attrs.frozen(kw_only=True, repr=False, field_transformer=keyword_only)
class Settings(ServicePolicy):
    """How a [`PauseTokens`][pausetoken.PauseTokens] service is put together.

    Build it in code, or read it with `from_env()` or `from_toml()`. Every value is
    validated on construction; a bad one raises
    [`ConfigurationError`][pausetoken.exceptions.ConfigurationError] with a ``settings_*`` code
    naming the
    setting, never its value. The ``repr`` hides keys, option values and URL passwords.

    Attributes:
        store_url: Where redemptions are recorded (``memory://``,
            ``sqlite+aiosqlite:///tokens.db``, ``postgresql+asyncpg://...``). Required.
        keys: The key set tokens are signed and verified with. Required: there is no
            default key (make one with ``pausetoken keygen``).
        signer: Name of the signer plugin: ``"jose"`` (signed JWTs) or ``"sealed"``
            (encrypted JWE tokens).
        signer_options: Extra keyword options for the signer.
        store_options: Extra keyword options for the store.
        checkpoints: Name of the checkpoint reader plugin.
        issuer: The ``iss`` claim minted and required.
        audience: The ``aud`` claim minted and required.
        ttl: Default lifetime of a minted token.
        leeway: Clock skew tolerated when checking ``exp``, ``nbf`` and ``iat``.
        max_lifetime: Longest lifetime (``exp - iat``) a token may have to be accepted.
        max_token_bytes: Tokens longer than this are refused before parsing.
        lease: How long a claim holds unless renewed (the service renews it while the
            redemption's body runs); at least one second.
        policy: The [`TokenPolicy`][pausetoken.TokenPolicy] these settings verify tokens
            with (issuer, audience, time, size).

    Examples:
        >>> from pausetoken import KeyRing, Settings
        >>> settings = Settings(store_url="memory://", keys=KeyRing.generate())
        >>> settings.ttl
        datetime.timedelta(days=1)
    """

    # The token policy's fields (issuer to lease) are ServicePolicy's, refused under our code.
    _invalid_code: ClassVar[Code] = INVALID

    store_url: str = attrs.field(validator=_store_url)
    keys: KeyRing = attrs.field(validator=_keyring)
    signer: str = attrs.field(default="jose", validator=_name)
    signer_options: Mapping[str, Any] = attrs.field(factory=dict, converter=_options)
    store_options: Mapping[str, Any] = attrs.field(factory=dict, converter=_options)
    checkpoints: str = attrs.field(default="memory", validator=_name)

    def __repr__(self) -> str:
        options = {
            "signer_options": self.signer_options,
            "store_options": self.store_options,
        }
        shown = ", ".join(f"{name}=<{', '.join(sorted(value))}>" for name, value in options.items())
        policy = ", ".join(
            f"{name}={value!r}" if isinstance(value, str) else f"{name}={value}"
            for name, value in policy_keywords(self).items()
        )
        return (
            f"Settings(store_url={redact_url(self.store_url)!r}, keys={self.keys!r}, "
            f"signer={self.signer!r}, {shown}, checkpoints={self.checkpoints!r}, {policy})"
        )

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, base_dir: str | None = None) -> Settings:
        """Build settings from plain data, as read from JSON, TOML or YAML.

        Keys are the attribute names, plus ``keys_file`` (a path to a JWKS file, instead of
        ``keys``). Durations may be seconds or strings such as ``"15m"``; ``keys`` may be a
        JWKS mapping or its JSON text.

        Args:
            data: The settings.
            base_dir: Directory relative ``keys_file`` paths are resolved against
                (default: the working directory).

        Returns:
            The validated settings.

        Raises:
            ConfigurationError: A key is unknown (``settings_unknown``), required settings
                are missing (``settings_missing``), ``keys`` and ``keys_file`` are both given
                (``settings_conflict``), a value is invalid (``settings_invalid``) or the
                key file cannot be read (``settings_file_unreadable``). Weak or malformed
                keys raise the key set's own configuration error.
        """
        _refuse_unknown(
            sorted(str(key) for key in data), dict(zip(_FIELDS, _FIELDS, strict=True)), "setting"
        )
        return _load(dict(data), _Source("settings", lambda name: name, base_dir))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read settings from ``PAUSETOKEN_*`` environment variables.

        ``PAUSETOKEN_STORE_URL`` and one of ``PAUSETOKEN_KEYS`` (JWKS JSON) or
        ``PAUSETOKEN_KEYS_FILE`` (path to a JWKS file) are required. Optional:
        ``PAUSETOKEN_SIGNER``, ``PAUSETOKEN_SIGNER_OPTIONS`` and ``PAUSETOKEN_STORE_OPTIONS``
        (JSON objects), ``PAUSETOKEN_CHECKPOINTS``, ``PAUSETOKEN_ISSUER``,
        ``PAUSETOKEN_AUDIENCE``, ``PAUSETOKEN_TTL``, ``PAUSETOKEN_LEEWAY``,
        ``PAUSETOKEN_MAX_LIFETIME``, ``PAUSETOKEN_LEASE`` (durations: ``90``, ``15m``,
        ``24h``, ``7d``) and ``PAUSETOKEN_MAX_TOKEN_BYTES``. Any other ``PAUSETOKEN_*``
        variable is refused, so a misspelt one is noticed.

        Args:
            environ: The variables to read (default: `os.environ`).

        Returns:
            The validated settings.

        Raises:
            ConfigurationError: As `from_mapping()`; messages name the variable.
        """
        return _load(_environment(environ), _ENVIRONMENT)

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> Settings:
        """Read settings from the ``[pausetoken]`` table of a TOML file.

        In a ``pyproject.toml`` the table is ``[tool.pausetoken]``. Keys are as in
        `from_mapping()`; a relative ``keys_file`` is resolved against the TOML file's
        directory. Durations may be seconds (``ttl = 3600``) or strings (``ttl = "1h"``).

        Args:
            path: The TOML file.

        Returns:
            The validated settings.

        Raises:
            ConfigurationError: The file cannot be read or parsed, has no pausetoken table
                or has both, or as `from_mapping()`.
        """
        file = Path(path)
        try:
            document = tomllib.loads(file.read_text(encoding="utf-8"))
        except OSError as exc:
            msg = f"cannot read the settings file {file}: {exc.strerror or type(exc).__name__}"
            raise _error(UNREADABLE, msg) from exc
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            msg = f"the settings file {file} is not valid TOML: {_position(exc)}"
            raise _error(INVALID, msg) from exc
        top = document.get("pausetoken")
        tool = document.get("tool")
        nested = tool.get("pausetoken") if isinstance(tool, dict) else None
        if top is not None and nested is not None:
            msg = f"{file} has both [pausetoken] and [tool.pausetoken]; keep one"
            raise _error(CONFLICT, msg)
        table = top if top is not None else nested
        if table is None:
            msg = f"{file} has no [pausetoken] table (or [tool.pausetoken] in pyproject.toml)"
            raise _error(MISSING, msg)
        if not isinstance(table, dict):
            msg = f"[pausetoken] in {file} must be a table"
            raise _error(INVALID, msg)
        label = f"{file} [{'pausetoken' if top is not None else 'tool.pausetoken'}]"
        _refuse_unknown(sorted(table), {name: name for name in _FIELDS}, f"key in {label}")
        return _load(dict(table), _Source(label, lambda name: name, str(file.parent)))


# -- loading ------------------------------------------------------------------------------

_FIELDS: Final = (*(a.name for a in attrs.fields(Settings)), "keys_file")
_OPTIONS: Final = frozenset({"signer_options", "store_options"})
_FIELD_WORD: Final = re.compile(
    rf"(?<![-./])\b(?:{'|'.join(sorted(_FIELDS, key=len, reverse=True))})\b"
)
_REQUIRED_ENV: Final = frozenset(
    {"PAUSETOKEN_STORE_URL", "PAUSETOKEN_KEYS", "PAUSETOKEN_KEYS_FILE"}
)


@attrs.frozen
class _Source:
    """Where settings come from, to name a setting the way the user wrote it."""

    label: str
    spell: Callable[[str], str]
    base_dir: str | None


def _env_name(name: str) -> str:
    return ENV_PREFIX + name.upper()


_ENVIRONMENT: Final = _Source("the environment", _env_name, None)


def _environment(environ: Mapping[str, str] | None) -> dict[str, Any]:
    """The settings the ``PAUSETOKEN_*`` variables give, by name; unknown variables refused."""
    environ = os.environ if environ is None else environ
    known = {_env_name(name): name for name in _FIELDS}
    ours = sorted(name for name in environ if name.startswith(ENV_PREFIX))
    _refuse_unknown(ours, known, "environment variable")
    data: dict[str, Any] = {}
    for variable in ours:
        value = environ[variable]
        if not value.strip():
            msg = f"{variable} is set but empty: give it a value or unset it"
            raise _error(MISSING if variable in _REQUIRED_ENV else INVALID, msg)
        name = known[variable]
        data[name] = _parse_json_object(variable, value) if name in _OPTIONS else value
    return data


def verifier_settings(
    environ: Mapping[str, str] | None = None, *, keys_file: str | None = None
) -> Settings:
    """The settings ``pausetoken inspect --verify`` checks a token with.

    Verifying records nothing, so no store is needed: the ``PAUSETOKEN_*`` variables are
    read as `Settings.from_env()` reads them (keys, issuer, audience, leeway, lifetime and
    size limits; unknown variables refused), except that ``PAUSETOKEN_STORE_URL`` may be
    absent. ``memory://`` then stands in for it; it is never opened.

    Args:
        environ: The variables to read (default: `os.environ`).
        keys_file: The key file given on the command line (``--keys``): it replaces
            ``PAUSETOKEN_KEYS`` and ``PAUSETOKEN_KEYS_FILE``, and its errors name ``--keys``.

    Returns:
        The validated settings.

    Raises:
        ConfigurationError: ``settings_missing`` when no key set is given, or as
            `Settings.from_env()`.
    """
    data = _environment(environ)
    data.setdefault("store_url", "memory://")
    if keys_file is not None:
        data.pop("keys_file", None)
        data["keys"] = _load_keys_file(keys_file, None, "--keys")
    elif "keys" not in data and "keys_file" not in data:
        msg = (
            f"verifying needs the key set: pass --keys FILE or set {_env_name('keys_file')} "
            f"(or {_env_name('keys')}); {_KEYGEN_HINT}"
        )
        raise _error(MISSING, msg)
    return _load(data, _ENVIRONMENT)


def _position(exc: Exception) -> str:
    line, column = getattr(exc, "lineno", None), getattr(exc, "colno", None)
    return f"line {line}, column {column}" if line is not None else type(exc).__name__


def _refuse_unknown(names: Iterable[str], known: Mapping[str, str], what: str) -> None:
    unknown = [name for name in names if name not in known]
    if not unknown:
        return
    parts = []
    for name in unknown:
        close = difflib.get_close_matches(name, list(known), n=1)
        parts.append(f"{name} (did you mean {close[0]}?)" if close else name)
    msg = f"unknown {what}: {', '.join(parts)}; known: {', '.join(sorted(known))}"
    raise _error(UNKNOWN, msg)


def _parse_json_object(variable: str, value: str) -> dict[str, Any]:
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        msg = f"{variable} must be a JSON object ({_position(exc)})"
        raise _error(INVALID, msg) from exc
    if not isinstance(parsed, dict):
        msg = f"{variable} must be a JSON object"
        raise _error(INVALID, msg)
    return parsed


def _load_keys_file(path: str, base_dir: str | None, name: str) -> KeyRing:
    """Read and load the key set in ``path``; every refusal names ``name`` and the path.

    Args:
        path: The key file, as given.
        base_dir: What a relative ``path`` is relative to (default: the working directory).
        name: How the user gave the path (``PAUSETOKEN_KEYS_FILE``, ``keys_file``,
            ``--keys``).

    Returns:
        The key ring.

    Raises:
        ConfigurationError: ``settings_file_unreadable``, ``key_file_insecure`` or the key
            set's own codes (``jwks_invalid``, ``key_is_pem``, ...), the message starting
            with the path and ``name``.
    """
    file = Path(path)
    if base_dir is not None and not file.is_absolute():
        file = Path(base_dir) / file
    where = f"the key file {file} ({name})"
    try:
        text = read_keys_file(file)
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        msg = f"cannot read {where}: {reason or type(exc).__name__}"
        raise _error(UNREADABLE, msg) from exc
    except ConfigurationError as exc:
        # The mode check names the path already; add where it came from.
        detail = exc.detail.replace(f"the key file {file}", where, 1)
        raise _error(exc.code, detail if detail != exc.detail else f"{where}: {detail}") from exc
    try:
        return KeyRing.from_jwks(text)
    except ConfigurationError as exc:
        raise _error(exc.code, f"{where}: {exc.detail}") from exc


def _load(data: dict[str, Any], source: _Source) -> Settings:
    spell = source.spell
    if "keys" in data and "keys_file" in data:
        msg = f"{spell('keys')} and {spell('keys_file')} are both set in {source.label}; keep one"
        raise _error(CONFLICT, msg)
    missing, hints = [], []
    if "store_url" not in data:
        missing.append(spell("store_url"))
        hints.append(f"a store URL is {_STORE_HINT}")
    if "keys" not in data and "keys_file" not in data:
        missing.append(f"{spell('keys_file')} or {spell('keys')}")
        hints.append(_KEYGEN_HINT)
    if missing:
        msg = (
            f"pausetoken is not configured: set {' and '.join(missing)} in {source.label}; "
            f"{'; '.join(hints)}"
        )
        raise _error(MISSING, msg)
    if "keys_file" in data:
        path = data.pop("keys_file")
        if not isinstance(path, str | os.PathLike):
            msg = f"{spell('keys_file')} must be a path"
            raise _error(INVALID, msg)
        given = f"{spell('keys_file')} in {source.label}"
        data["keys"] = _load_keys_file(os.fspath(path), source.base_dir, given)
    try:
        return _converter.structure(data, Settings)
    except cattrs.BaseValidationError as exc:
        raise _explain(exc, source) from exc


def _explain(group: cattrs.BaseValidationError, source: _Source) -> ConfigurationError:
    """Turn cattrs' error group into one configuration error naming the setting."""
    for inner, name in _leaves(group):
        if name is None and isinstance(inner, ConfigurationError):
            # Raised by a validator of Settings itself: its message names the attributes.
            detail = _FIELD_WORD.sub(lambda m: source.spell(m[0]), inner.detail)
            return _error(inner.code, f"in {source.label}: {detail}")
        shown = source.spell(name) if name is not None else "a setting"
        if isinstance(inner, ConfigurationError):
            return _error(inner.code, f"{shown} in {source.label}: {inner.detail}")
        if isinstance(inner, PauseTokenError):
            break
        return _error(INVALID, f"{shown} in {source.label} has the wrong type")
    return _error(INVALID, f"invalid settings in {source.label}")


def _leaves(
    group: BaseException, note: str | None = None
) -> Iterable[tuple[BaseException, str | None]]:
    if isinstance(group, BaseExceptionGroup):
        for inner in group.exceptions:
            name = note
            for item in getattr(inner, "__notes__", ()):
                if isinstance(item, cattrs.errors.AttributeValidationNote):
                    name = item.name
            yield from _leaves(inner, name)
    else:
        yield group, note


# -- structuring: strict leaves, so a TOML number never becomes an issuer string ----------


def _structure_text(value: object, _type: object) -> str:
    if not isinstance(value, str):
        raise _error(INVALID, "must be a string")
    return value


def _structure_int(value: object, _type: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _INTEGER.match(value.strip()):
        return int(value.strip())
    raise _error(INVALID, "must be a whole number")


def _structure_duration(value: object, _type: object) -> timedelta:
    if not isinstance(value, str | int | float | timedelta):
        raise _error(INVALID, "must be a duration")
    return parse_duration(value)


def _structure_keys(value: object, _type: object) -> KeyRing:
    if isinstance(value, KeyRing):
        return value
    if not isinstance(value, str | Mapping):
        raise _error(INVALID, "must be a JWKS (a JSON object with a 'keys' list)")
    return KeyRing.from_jwks(value)


def _structure_options(value: object, _type: object) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _error(INVALID, "must be a mapping")
    return dict(value)


def _make_settings_converter() -> cattrs.Converter:
    converter = make_converter()
    converter.register_structure_hook(str, _structure_text)
    converter.register_structure_hook(int, _structure_int)
    converter.register_structure_hook(timedelta, _structure_duration)
    converter.register_structure_hook(KeyRing, _structure_keys)
    converter.register_structure_hook_func(
        lambda kind: kind == Mapping[str, Any], _structure_options
    )
    return converter


_converter: Final = _make_settings_converter()
