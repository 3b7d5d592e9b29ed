"""The time settings' defaults and the ranges they must stay within, written once.

[`Settings`][pausetoken.Settings], [`PauseTokens`][pausetoken.PauseTokens] and ``mint(ttl=...)`` all
check durations here, so a bound is changed in one place.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final

from pausetoken.exceptions import ConfigurationError

__all__ = [
    "DEFAULT_LEASE",
    "DEFAULT_LEEWAY",
    "DEFAULT_MAX_LIFETIME",
    "DEFAULT_TTL",
    "MAX_LEEWAY",
    "MAX_LIFETIME_LIMIT",
    "MIN_LEASE",
    "check_durations",
    "ttl_problem",
]

#: Default lifetime of a minted token.
DEFAULT_TTL: Final = timedelta(hours=24)
#: Default clock skew tolerated (on token times, and between workers on leases).
DEFAULT_LEEWAY: Final = timedelta(seconds=30)
#: Default longest lifetime a token may claim.
DEFAULT_MAX_LIFETIME: Final = timedelta(days=7)
#: Default length of a claim's lease (renewed every third of it while the body runs).
DEFAULT_LEASE: Final = timedelta(seconds=30)

#: The largest ``leeway`` accepted: more would keep expired tokens alive for long.
MAX_LEEWAY: Final = timedelta(minutes=5)
#: The largest ``max_lifetime`` accepted: a pause left open longer should be re-asked.
MAX_LIFETIME_LIMIT: Final = timedelta(days=30)
#: The shortest lease: renewals run every third of it and need store round trips.
MIN_LEASE: Final = timedelta(seconds=1)


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
    problem = None
    if not isinstance(leeway, timedelta) or not timedelta(0) <= leeway <= MAX_LEEWAY:
        problem = f"leeway must be between 0 and {MAX_LEEWAY}"
    elif not isinstance(max_lifetime, timedelta) or not (
        timedelta(0) < max_lifetime <= MAX_LIFETIME_LIMIT
    ):
        problem = f"max_lifetime must be positive and at most {MAX_LIFETIME_LIMIT.days} days"
    elif not isinstance(lease, timedelta) or lease < MIN_LEASE:
        problem = f"lease must be at least {MIN_LEASE.total_seconds():g} second"
    else:
        problem = ttl_problem(ttl, leeway=leeway, max_lifetime=max_lifetime)
    if problem is not None:
        raise ConfigurationError(problem, code=code)
