"""Every default and every range a setting must stay within, written once.

[`Settings`][pausetoken.Settings], [`PauseTokens`][pausetoken.PauseTokens],
[`TokenPolicy`][pausetoken.TokenPolicy], the signers and the command line all take their
defaults and checks from here, so a bound is changed in one place. Each rule is a function
returning what is wrong with a value (or ``None``); callers raise it with their own code
(``settings_invalid`` for settings, ``policy_invalid`` for the service and the policy).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, Final

import attrs

from pausetoken.exceptions import ConfigurationError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "DEFAULT_AUDIENCE",
    "DEFAULT_ISSUER",
    "DEFAULT_LEASE",
    "DEFAULT_LEEWAY",
    "DEFAULT_MAX_LIFETIME",
    "DEFAULT_MAX_TOKEN_BYTES",
    "DEFAULT_TTL",
    "MAX_CLAIM_LENGTH",
    "MAX_LEEWAY",
    "MAX_LIFETIME_LIMIT",
    "MAX_TOKEN_BYTES",
    "MIN_LEASE",
    "MIN_TOKEN_BYTES",
    "TokenPolicy",
    "check_durations",
    "lease_problem",
    "leeway_problem",
    "max_lifetime_problem",
    "text_problem",
    "token_bytes_problem",
    "ttl_problem",
    "validator",
]

#: Default ``iss`` minted and required.
DEFAULT_ISSUER: Final = "pausetoken"
#: Default ``aud`` minted and required.
DEFAULT_AUDIENCE: Final = "pausetoken"
#: Default lifetime of a minted token.
DEFAULT_TTL: Final = timedelta(hours=24)
#: Default clock skew tolerated (on token times, and between workers on leases).
DEFAULT_LEEWAY: Final = timedelta(seconds=30)
#: Default longest lifetime a token may claim.
DEFAULT_MAX_LIFETIME: Final = timedelta(days=7)
#: Default length of a claim's lease (renewed every third of it while the body runs).
DEFAULT_LEASE: Final = timedelta(seconds=30)
#: Default size above which a token is refused before it is parsed.
DEFAULT_MAX_TOKEN_BYTES: Final = 4096

#: The largest ``leeway`` accepted: more would keep expired tokens alive for long.
MAX_LEEWAY: Final = timedelta(minutes=5)
#: The largest ``max_lifetime`` accepted: a pause left open longer should be re-asked.
MAX_LIFETIME_LIMIT: Final = timedelta(days=30)
#: The shortest lease: renewals run every third of it and need store round trips.
MIN_LEASE: Final = timedelta(seconds=1)
#: The range of ``max_token_bytes``: below it no real token fits, above it parsing costs.
MIN_TOKEN_BYTES: Final = 256
MAX_TOKEN_BYTES: Final = 65536
#: Longest string accepted in any claim (issuer, audience, ids, names).
MAX_CLAIM_LENGTH: Final = 512


def text_problem(name: str, value: object) -> str | None:
    """What is wrong with a claim string such as an issuer, or ``None``."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_CLAIM_LENGTH:
        return f"{name} must be a non-empty string of at most {MAX_CLAIM_LENGTH} characters"
    return None


def token_bytes_problem(name: str, value: object) -> str | None:
    """What is wrong with a token size limit, or ``None``."""
    if type(value) is not int or not MIN_TOKEN_BYTES <= value <= MAX_TOKEN_BYTES:
        return f"{name} must be an integer from {MIN_TOKEN_BYTES} to {MAX_TOKEN_BYTES}"
    return None


def leeway_problem(name: str, value: object) -> str | None:
    """What is wrong with a clock-skew allowance, or ``None``."""
    if not isinstance(value, timedelta) or not timedelta(0) <= value <= MAX_LEEWAY:
        return f"{name} must be a timedelta from 0 to {MAX_LEEWAY}"
    return None


def max_lifetime_problem(name: str, value: object) -> str | None:
    """What is wrong with a longest token lifetime, or ``None``."""
    if not isinstance(value, timedelta) or not timedelta(0) < value <= MAX_LIFETIME_LIMIT:
        return f"{name} must be a positive timedelta of at most {MAX_LIFETIME_LIMIT.days} days"
    return None


def lease_problem(name: str, value: object) -> str | None:
    """What is wrong with a lease length, or ``None``."""
    if not isinstance(value, timedelta) or value < MIN_LEASE:
        return f"{name} must be a timedelta of at least {MIN_LEASE.total_seconds():g} second"
    return None


def ttl_problem(ttl: object, *, leeway: timedelta, max_lifetime: timedelta) -> str | None:
    """Why ``ttl`` is not a lifetime a token may have, or ``None`` if it is.

    A lifetime must be longer than the leeway (a shorter token would be accepted after it
    expired for longer than it lived) and no longer than ``max_lifetime`` (or it would be
    refused when redeemed).
    """
    if not isinstance(ttl, timedelta):
        return "ttl must be a timedelta"
    if not leeway < ttl <= max_lifetime:
        return (
            f"ttl must be longer than leeway ({leeway}) and at most max_lifetime ({max_lifetime})"
        )
    return None


def validator(
    problem: Callable[[str, object], str | None], code: str
) -> Callable[[object, attrs.Attribute[Any], object], None]:
    """An attrs validator raising ``problem``'s finding as a `ConfigurationError` ``code``."""

    def check(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        found = problem(attribute.name, value)
        if found is not None:
            raise ConfigurationError(found, code=code)

    return check


def check_durations(
    *,
    ttl: timedelta,
    leeway: timedelta,
    max_lifetime: timedelta,
    lease: timedelta,
    code: str = "policy_invalid",
) -> None:
    """Refuse durations outside their ranges, naming the setting.

    Raises:
        ConfigurationError: with ``code``, naming the first setting out of range.
    """
    problem = (
        leeway_problem("leeway", leeway)
        or max_lifetime_problem("max_lifetime", max_lifetime)
        or lease_problem("lease", lease)
        or ttl_problem(ttl, leeway=leeway, max_lifetime=max_lifetime)
    )
    if problem is not None:
        raise ConfigurationError(problem, code=code)


_POLICY_INVALID: Final = "policy_invalid"


@attrs.frozen
class TokenPolicy:
    """What `verify_token()` accepts besides a valid signature.

    Examples:
        >>> from datetime import timedelta
        >>> TokenPolicy(issuer="billing", leeway=timedelta(seconds=5)).audience
        'pausetoken'

    Attributes:
        issuer: The required ``iss``.
        audience: The required ``aud``.
        leeway: Clock skew tolerated on ``exp``, ``nbf`` and ``iat`` (at most 5 minutes).
        max_lifetime: Longest ``exp - iat`` accepted (at most 30 days).
        max_token_bytes: Tokens longer than this are refused before parsing.

    Raises:
        ConfigurationError: ``policy_invalid`` for an empty or overlong issuer or audience,
            a lifetime or leeway out of range or a token size outside 256 to 65536.
    """

    issuer: str = attrs.field(
        default=DEFAULT_ISSUER, validator=validator(text_problem, _POLICY_INVALID)
    )
    audience: str = attrs.field(
        default=DEFAULT_AUDIENCE, validator=validator(text_problem, _POLICY_INVALID)
    )
    leeway: timedelta = attrs.field(
        default=DEFAULT_LEEWAY, validator=validator(leeway_problem, _POLICY_INVALID)
    )
    max_lifetime: timedelta = attrs.field(
        default=DEFAULT_MAX_LIFETIME, validator=validator(max_lifetime_problem, _POLICY_INVALID)
    )
    max_token_bytes: int = attrs.field(
        default=DEFAULT_MAX_TOKEN_BYTES, validator=validator(token_bytes_problem, _POLICY_INVALID)
    )
