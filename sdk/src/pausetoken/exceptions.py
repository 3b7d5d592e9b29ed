"""Every error pausetoken raises.

Each error carries a stable machine ``code`` (safe to branch on and to show to clients), a
human ``detail`` and the HTTP status a server should answer with. Messages never contain a
token, claim values or payloads: they name what was wrong, not what was sent.

Example:
    >>> from pausetoken.exceptions import TokenExpired
    >>> err = TokenExpired()
    >>> err.code, err.http_status
    ('token_expired', 410)
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "AlreadyRedeemed",
    "AmbiguousBackend",
    "BackendNotInstalled",
    "CheckpointLost",
    "CheckpointNotFound",
    "CommitUnconfirmed",
    "ConfigurationError",
    "InvalidMintRequest",
    "InvalidResponse",
    "InvalidToken",
    "LeaseLost",
    "PauseTokenError",
    "PayloadMismatch",
    "PrincipalMismatch",
    "RedemptionInProgress",
    "ScopeMismatch",
    "StaleToken",
    "StoreUnavailable",
    "TokenExpired",
    "TokenRevoked",
    "UnknownBackend",
    "UnknownInterrupt",
    "UnsupportedPayload",
]

_PROBLEM_TYPE_BASE = "urn:pausetoken:error:"


class PauseTokenError(Exception):
    """Base class of every pausetoken error.

    Attributes:
        code: A stable, machine-readable code such as ``"token_expired"``.
        detail: A human-readable explanation without secrets or user data.
        http_status: The HTTP status a server should answer with.
    """

    default_code: ClassVar[str] = "pausetoken_error"
    default_detail: ClassVar[str] = "The request could not be processed."
    http_status: ClassVar[int] = 500
    title: ClassVar[str] = "pausetoken error"

    def __init__(self, detail: str | None = None, *, code: str | None = None) -> None:
        """Create the error.

        Args:
            detail: What went wrong, for humans. Must not contain tokens or user data.
            code: A more specific stable code than the class default.
        """
        self.code: str = code or self.default_code
        self.detail: str = detail or self.default_detail
        super().__init__(self.detail)

    def __str__(self) -> str:
        return f"[{self.code}] {self.detail}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, detail={self.detail!r})"

    def to_problem(self) -> dict[str, Any]:
        """Render the error as RFC 9457 problem details.

        Returns:
            A JSON-ready mapping with ``type``, ``title``, ``status``, ``detail`` and ``code``.
        """
        return {
            "type": _PROBLEM_TYPE_BASE + self.code,
            "title": self.title,
            "status": self.http_status,
            "detail": self.detail,
            "code": self.code,
        }


# -- configuration (raised at start-up, never while serving a token) ---------------------


class ConfigurationError(PauseTokenError):
    """pausetoken is configured wrongly: missing or weak keys, bad settings, bad URLs."""

    default_code = "configuration_error"
    default_detail = "pausetoken is not configured correctly."
    http_status = 500
    title = "Configuration error"


class BackendNotInstalled(ConfigurationError):
    """A known backend was chosen but the distribution that provides it is not installed."""

    default_code = "backend_not_installed"
    default_detail = "The chosen backend is not installed."
    title = "Backend not installed"


class UnknownBackend(ConfigurationError):
    """No installed distribution provides the chosen backend."""

    default_code = "unknown_backend"
    default_detail = "No installed backend has that name."
    title = "Unknown backend"


class AmbiguousBackend(ConfigurationError):
    """Two installed distributions register the same backend name."""

    default_code = "ambiguous_backend"
    default_detail = "Two installed distributions register the same backend name."
    title = "Ambiguous backend"


class UnsupportedPayload(PauseTokenError, ValueError):
    """A payload cannot be represented exactly as JSON, so it cannot be hashed stably.

    Raised at mint time for NaN, infinities, bytes, sets, integers beyond 2**53 and objects
    pausetoken does not know how to unstructure.
    """

    default_code = "unsupported_payload"
    default_detail = "The payload cannot be represented exactly as JSON."
    http_status = 400
    title = "Unsupported payload"


# -- token problems -----------------------------------------------------------------------


class InvalidToken(PauseTokenError):
    """The token is malformed, forged, or its header or claims are not acceptable.

    The ``code`` says which check failed (for example ``token_malformed``,
    ``token_signature_invalid``, ``token_algorithm_not_allowed``, ``token_type_invalid``,
    ``token_key_unknown``, ``token_claims_invalid``).
    """

    default_code = "token_invalid"
    default_detail = "The token is not valid."
    http_status = 401
    title = "Invalid token"


class TokenExpired(PauseTokenError):
    """The token's ``exp`` is in the past (beyond the configured leeway)."""

    default_code = "token_expired"
    default_detail = (
        "The token has expired. Its lifetime is set when it is minted: the ttl given to "
        "mint(), by default the ttl setting (PAUSETOKEN_TTL)."
    )
    http_status = 410
    title = "Token expired"


class TokenRevoked(PauseTokenError):
    """The token was revoked before it was redeemed."""

    default_code = "token_revoked"
    default_detail = "The token has been revoked."
    http_status = 410
    title = "Token revoked"


class ScopeMismatch(PauseTokenError):
    """The token belongs to another tenant scope than the caller's."""

    default_code = "scope_mismatch"
    default_detail = "The token does not belong to this scope."
    http_status = 403
    title = "Scope mismatch"


class PrincipalMismatch(PauseTokenError):
    """The token is bound to another principal than the one answering."""

    default_code = "principal_mismatch"
    default_detail = "This principal may not answer this pause."
    http_status = 403
    title = "Principal mismatch"


class UnknownInterrupt(PauseTokenError):
    """No interrupt kind is registered under the token's (or the caller's) name."""

    default_code = "unknown_interrupt"
    default_detail = "No interrupt is registered under that name."
    http_status = 400
    title = "Unknown interrupt"


class InvalidResponse(PauseTokenError):
    """The answer does not fit the interrupt's response type or its validator refused it.

    Attributes:
        field: Dotted path of the offending field, when known.
    """

    default_code = "invalid_response"
    default_detail = "The response is not valid for this interrupt."
    http_status = 422
    title = "Invalid response"

    def __init__(
        self, detail: str | None = None, *, code: str | None = None, field: str | None = None
    ) -> None:
        """Create the error; ``field`` names the offending field when known."""
        super().__init__(detail, code=code)
        self.field = field

    def to_problem(self) -> dict[str, Any]:
        """Render as RFC 9457 problem details, with ``field`` when known."""
        problem = super().to_problem()
        if self.field is not None:
            problem["field"] = self.field
        return problem


class PayloadMismatch(PauseTokenError):
    """The payload stored at the checkpoint is not the one the token was minted for."""

    default_code = "payload_mismatch"
    default_detail = "The pending payload does not match the token."
    http_status = 400
    title = "Payload mismatch"


class CheckpointNotFound(PauseTokenError):
    """The token's thread or checkpoint no longer exists."""

    default_code = "checkpoint_not_found"
    default_detail = "The checkpoint this token refers to does not exist."
    http_status = 404
    title = "Checkpoint not found"


class CheckpointLost(PauseTokenError):
    """The checkpoint is gone because the checkpointer does not persist state."""

    default_code = "checkpoint_lost"
    default_detail = "The checkpoint was lost; the checkpointer does not persist state."
    http_status = 424
    title = "Checkpoint lost"


class StaleToken(PauseTokenError):
    """The run moved on: the checkpoint is not current or the interrupt was answered."""

    default_code = "stale_token"
    default_detail = "The run has moved on since this token was issued."
    http_status = 409
    title = "Stale token"


class AlreadyRedeemed(PauseTokenError):
    """The token was already redeemed with another answer."""

    default_code = "already_redeemed"
    default_detail = "The token has already been redeemed with another answer."
    http_status = 409
    title = "Already redeemed"


class RedemptionInProgress(PauseTokenError):
    """Another worker holds a live claim on the token.

    Attributes:
        retry_after: Seconds after which a retry may succeed (the lease's remaining time).
    """

    default_code = "redemption_in_progress"
    default_detail = "The token is being redeemed by another request; retry later."
    http_status = 409
    title = "Redemption in progress"

    def __init__(
        self,
        detail: str | None = None,
        *,
        code: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        """Create the error; ``retry_after`` is the lease's remaining time in seconds."""
        super().__init__(detail, code=code)
        self.retry_after = retry_after

    def to_problem(self) -> dict[str, Any]:
        """Render as RFC 9457 problem details, with ``retry_after`` when known."""
        problem = super().to_problem()
        if self.retry_after is not None:
            problem["retry_after"] = self.retry_after
        return problem


class LeaseLost(PauseTokenError):
    """The claim was lost while the body ran: it lapsed and was taken over, or revoked.

    The service renews the lease while the body runs, so this happens only when renewals
    failed for longer than the lease (the store was unreachable) or the worker stalled. The
    code says which: ``lease_lost`` (another redeemer took the claim over) or
    ``lease_revoked`` (the pause was revoked after the claim lapsed).
    """

    default_code = "lease_lost"
    default_detail = "The claim lapsed before commit and another redeemer took it over."
    http_status = 409
    title = "Lease lost"


class CommitUnconfirmed(PauseTokenError):
    """The body ran but the store could not confirm the commit: the run may have resumed.

    Raised only after the body of :meth:`~pausetoken.PauseTokens.redeem` completed and every
    commit attempt within the lease failed to reach the store. It is never raised for a
    refusal before the body ran. Do not answer the pause again blindly: ask
    :meth:`~pausetoken.PauseTokens.status` once the store is back (``REDEEMED`` means the
    commit landed), and treat the action as possibly done.
    """

    default_code = "commit_unconfirmed"
    default_detail = "The answer was acted on but its redemption could not be confirmed."
    http_status = 500
    title = "Commit unconfirmed"


class StoreUnavailable(PauseTokenError):
    """The consumption store cannot be reached; pausetoken fails closed."""

    default_code = "store_unavailable"
    default_detail = "The token store is unavailable."
    http_status = 503
    title = "Store unavailable"


class InvalidMintRequest(PauseTokenError, ValueError):
    """``mint()`` was asked for a token that could never be redeemed.

    No scope, an empty or overlong id or principal, or a ttl outside
    ``(leeway, max_lifetime]``. Raised before anything is recorded.
    """

    default_code = "mint_request_invalid"
    default_detail = "The mint request cannot produce a token that verifies."
    http_status = 400
    title = "Invalid mint request"
