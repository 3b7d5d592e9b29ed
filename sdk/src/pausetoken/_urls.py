"""Backend URLs: the family a URL chooses, and how to show a URL without its secrets."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final
from urllib.parse import parse_qsl, urlencode

from pausetoken.exceptions import ConfigurationError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["redact_url", "store_family"]

#: URL schemes whose family is not the part before ``+``.
_SCHEME_ALIASES: Final[Mapping[str, str]] = {"rediss": "redis", "unix": "redis"}
_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*):")
# A query parameter whose name contains one of these holds a secret (sslpassword, api_key).
_SECRET_NAME_PARTS: Final = ("pass", "pwd", "secret", "token", "key")
_HIDDEN: Final = "***"
_UNPARSABLE: Final = "<unparsable URL>"


def redact_url(url: str) -> str:
    """Render ``url`` with its password and secret-looking query values hidden.

    The password of ``user:password@`` is hidden wherever the URL puts it, also in mistyped
    or scheme-less URLs (``postgresql+asyncpg//app:pw@db/x``, ``//app:pw@db/x``); it runs to
    the last ``@``, so a password containing ``@`` or ``/`` is hidden whole. The value of
    every query parameter whose name contains ``pass``, ``pwd``, ``secret``, ``token`` or
    ``key`` is hidden. A URL that cannot be parsed is never shown whole.

    Examples:
        >>> redact_url("postgresql+asyncpg://app:s3cret@db:5432/tokens")
        'postgresql+asyncpg://app:***@db:5432/tokens'
        >>> redact_url("postgresql://app@db:5432/tokens?sslpassword=s3cret&connect_timeout=5")
        'postgresql://app@db:5432/tokens?sslpassword=***&connect_timeout=5'
        >>> redact_url("//app:s3cret@db/tokens")
        '//app:***@db/tokens'

    Args:
        url: A backend URL (a ``module:attr`` target comes back unchanged).

    Returns:
        The URL, safe to print or log.
    """
    redacted = _hide_password(url)
    if any(ord(char) < 0x20 or char.isspace() for char in redacted):  # noqa: PLR2004 - C0
        return _UNPARSABLE
    if "?" not in redacted:
        return redacted
    head, _, rest = redacted.partition("?")
    query, hash_mark, fragment = rest.partition("#")
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        return f"{head}?{_HIDDEN}"
    if not pairs:
        return redacted
    shown = [(key, _HIDDEN if _secret_name(key) else value) for key, value in pairs]
    # Only the query is rebuilt: the rest stays as written (``sqlite:///x.db`` keeps its
    # empty authority).
    return f"{head}?{urlencode(shown, safe='*')}{hash_mark}{fragment}"


def _hide_password(url: str) -> str:
    at = url.rfind("@")
    if at < 0:
        return url
    head = url[:at]
    # The userinfo starts after the first "//"; without one, a "scheme:" cannot be told from
    # "user:", so everything from the first ":" is hidden (too much is the safe mistake).
    slashes = head.find("//")
    colon = head.find(":", slashes + 2 if slashes >= 0 else 0)
    if colon < 0:
        return url
    return f"{url[: colon + 1]}{_HIDDEN}{url[at:]}"


def _secret_name(name: str) -> bool:
    lowered = name.lower()
    return any(part in lowered for part in _SECRET_NAME_PARTS)


def store_family(url: str) -> str:
    """The store entry-point name a URL chooses: its scheme's family before ``+``.

    Examples:
        >>> store_family("postgresql+asyncpg://app@db/tokens"), store_family("rediss://cache")
        ('postgresql', 'redis')

    Raises:
        ConfigurationError: if ``url`` has no scheme.
    """
    match = _SCHEME.match(url)
    if match is None:
        shown = redact_url(url)
        msg = f"a store URL starts with a scheme such as 'sqlite+aiosqlite://' (got {shown!r})"
        raise ConfigurationError(msg)
    family = match["scheme"].lower().split("+", 1)[0]
    return _SCHEME_ALIASES.get(family, family)
