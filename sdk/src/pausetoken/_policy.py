"""Every default and every range a setting must stay within, written once.

[`Settings`][pausetoken.Settings], [`PauseTokens`][pausetoken.PauseTokens],
[`TokenPolicy`][pausetoken.TokenPolicy], the signers and the command line all take their
defaults and checks from here, so a bound is changed in one place. Each rule is a function
returning what is wrong with a value (or ``None``). The policy's fields are declared once,
on `TokenPolicy` and `ServicePolicy`, which `Settings` extends; a refusal carries the code
of the class refusing (``policy_invalid``, or ``settings_invalid`` for settings).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypedDict

import attrs

from pausetoken.exceptions import Code, InvalidSettings

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
    "PolicyKeywords",
    "ServicePolicy",
    "TokenPolicy",
    "keyword_only",
    "lease_problem",
    "leeway_problem",
    "max_lifetime_problem",
    "policy_keywords",
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
    problem: Callable[[str, object], str | None],
) -> Callable[[TokenPolicy, attrs.Attribute[Any], object], None]:
    """An attrs validator raising ``problem``'s finding as a `ConfigurationError`.

    Its code is the refusing class's (``policy_invalid``; ``settings_invalid`` for settings).
    """

    def check(instance: TokenPolicy, attribute: attrs.Attribute[Any], value: object) -> None:
        found = problem(attribute.name, value)
        if found is not None:
            code = instance._invalid_code  # noqa: SLF001 - the refusing class says which
            raise InvalidSettings(found, code=code)

    return check


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

    #: The code of the `ConfigurationError` a value out of range is refused with.
    _invalid_code: ClassVar[Code] = InvalidSettings.POLICY_INVALID

    issuer: str = attrs.field(default=DEFAULT_ISSUER, validator=validator(text_problem))
    audience: str = attrs.field(default=DEFAULT_AUDIENCE, validator=validator(text_problem))
    leeway: timedelta = attrs.field(default=DEFAULT_LEEWAY, validator=validator(leeway_problem))
    max_lifetime: timedelta = attrs.field(
        default=DEFAULT_MAX_LIFETIME, validator=validator(max_lifetime_problem)
    )
    max_token_bytes: int = attrs.field(
        default=DEFAULT_MAX_TOKEN_BYTES, validator=validator(token_bytes_problem)
    )


def keyword_only(_cls: type, fields: list[attrs.Attribute[Any]]) -> list[attrs.Attribute[Any]]:
    """An attrs field transformer making every field keyword-only, inherited ones too.

    (Class-level ``kw_only`` leaves a base's fields positional since attrs 25.4.)
    """
    return [field.evolve(kw_only=True) for field in fields]


@attrs.frozen(field_transformer=keyword_only)
class ServicePolicy(TokenPolicy):
    """A service's whole policy: the token policy, plus how it mints and claims.

    [`PauseTokens`][pausetoken.PauseTokens] takes these fields as keywords, and
    [`Settings`][pausetoken.Settings] extends this class, so each is declared once, here.

    Attributes:
        ttl: Lifetime of a minted token: longer than ``leeway`` (a shorter token would be
            accepted after it expired for longer than it lived), at most ``max_lifetime``.
        lease: How long a claim holds unless renewed; at least one second.

    Raises:
        ConfigurationError: as `TokenPolicy`, and for a ``ttl`` or ``lease`` out of range.
    """

    ttl: timedelta = DEFAULT_TTL
    lease: timedelta = attrs.field(default=DEFAULT_LEASE, validator=validator(lease_problem))

    def __attrs_post_init__(self) -> None:
        # The lifetime's range depends on two other fields: checked once they all passed.
        problem = ttl_problem(self.ttl, leeway=self.leeway, max_lifetime=self.max_lifetime)
        if problem is not None:
            raise InvalidSettings(problem, code=self._invalid_code)

    @property
    def policy(self) -> TokenPolicy:
        """The claim checks within (issuer, audience, time, size), for `verify_token()`."""
        return TokenPolicy(**_values(self, TokenPolicy))


class PolicyKeywords(TypedDict, total=False):
    """`ServicePolicy`'s fields as keywords, for type checkers: ``PauseTokens(**policy)``.

    A test holds its keys and types to `ServicePolicy`'s fields.
    """

    issuer: str
    audience: str
    leeway: timedelta
    max_lifetime: timedelta
    max_token_bytes: int
    ttl: timedelta
    lease: timedelta


def policy_keywords(policy: ServicePolicy) -> dict[str, Any]:
    """The fields of a service policy (or of settings) as `PauseTokens` takes them."""
    return _values(policy, ServicePolicy)


def _values(instance: TokenPolicy, kind: type[TokenPolicy]) -> dict[str, Any]:
    """``instance``'s values of the fields ``kind`` declares (itself or its bases)."""
    return {field.name: getattr(instance, field.name) for field in attrs.fields(kind)}
