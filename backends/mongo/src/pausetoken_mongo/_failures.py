"""Which driver errors mean "unreachable now" and which mean "configured wrongly"."""

from __future__ import annotations

from typing import Final

from pymongo.errors import ConfigurationError as DriverConfigurationError
from pymongo.errors import OperationFailure, PyMongoError

from pausetoken.exceptions import StoreMisconfigured, StoreUnavailable

__all__ = ["translate"]

# Server error codes that will not go away by retrying: Unauthorized, AuthenticationFailed,
# IndexOptionsConflict, IndexKeySpecsConflict, InvalidNamespace.
_PERMANENT_CODES: Final = frozenset({13, 18, 85, 86, 73})


def translate(exc: PyMongoError, *, what: str, label: str) -> Exception:
    """The typed error for a driver error met while doing ``what`` at ``label``.

    Connection errors, ``NotPrimary`` and election errors, write-concern failures and
    timeouts are `StoreUnavailable`: nothing was decided and a retry may succeed. A driver
    configuration error (a malformed URL, an SRV name that does not resolve) and the server's
    refusals that no retry cures (credentials, rights, conflicting indexes) are
    `ConfigurationError` (``store_misconfigured``). The message names the error class and
    the server's code, never the URL's password (``label`` is already redacted).
    """
    code = exc.code if isinstance(exc, OperationFailure) else None
    cause = type(exc).__name__ + (f" (code {code})" if code is not None else "")
    if isinstance(exc, DriverConfigurationError) or code in _PERMANENT_CODES:
        msg = f"token store {what} at {label} is refused: {cause}"
        return StoreMisconfigured(msg, code=StoreMisconfigured.STORE_MISCONFIGURED)
    timed_out = " (timed out)" if exc.timeout else ""  # the store's timeout ran out
    msg = f"token store {what} at {label} failed{timed_out}: {cause}"
    return StoreUnavailable(msg)
