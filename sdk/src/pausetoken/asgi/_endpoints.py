"""The resume router's endpoints: who calls, what they send, what the router answers."""

from __future__ import annotations

import hmac
import logging
import math
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import attrs
from starlette.responses import JSONResponse, Response

from pausetoken._claims import Scope, hash_scope
from pausetoken._hashing import fingerprint, hash_payload, to_json_value
from pausetoken._store_api import PauseState
from pausetoken.asgi._body import read_json_object, refuse_token_in_url
from pausetoken.exceptions import (
    AlreadyRedeemed,
    ConfigurationError,
    InvalidRequest,
    InvalidToken,
    PauseTokenError,
    PayloadMismatch,
    PrincipalMismatch,
    RedemptionInProgress,
    ResumeFailed,
    ScopeMismatch,
    TokenRevoked,
    UnknownInterrupt,
    UnsupportedPayload,
)

if TYPE_CHECKING:
    from starlette.requests import Request

    from pausetoken._claims import Claims
    from pausetoken._interrupt import Interrupt
    from pausetoken._service import PauseTokens

__all__ = [
    "TOKEN_HEADER",
    "Authenticate",
    "Caller",
    "Endpoints",
    "Resume",
    "ResumeRequest",
    "ResumeResult",
    "describe_pause",
    "log_refusal",
    "problem_response",
]

logger = logging.getLogger("pausetoken.asgi")

#: The request header that may carry the token (instead of the body's ``token`` member).
TOKEN_HEADER: Final = "Pause-Token"  # noqa: S105 - a header's name
_NO_STORE: Final = {"Cache-Control": "no-store"}


@attrs.frozen
class Caller:
    """Who sent a request, as the application's authentication tells.

    Attributes:
        scope: The tenant the caller acts for; a token is redeemed only in its own scope.
        principal: The caller's user id, checked against a token bound to one (``sub``).
    """

    scope: Scope = attrs.field(validator=attrs.validators.instance_of(Scope))
    principal: str | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(str))
    )


@attrs.frozen(repr=False)
class ResumeRequest:
    """What the router hands the application's resume function.

    Attributes:
        token: The pause token, as sent (not yet verified: redeeming verifies it).
        answer: The answer, as parsed from the JSON body.
        caller: Who sent it, from the application's ``authenticate`` function.
    """

    token: str
    answer: Any
    caller: Caller

    @property
    def scope(self) -> Scope:
        """The caller's scope (``caller.scope``)."""
        return self.caller.scope

    @property
    def principal(self) -> str | None:
        """The caller's principal (``caller.principal``)."""
        return self.caller.principal

    def __repr__(self) -> str:
        return f"ResumeRequest(token=<{fingerprint(self.token)}>, caller={self.caller!r})"


@attrs.frozen(repr=False)
class ResumeResult:
    """What the application's resume function returns; the router answers 200 with it.

    Attributes:
        result: The run's result, sent as the response's ``result`` member: JSON values,
            attrs classes, dataclasses or pydantic models (converted as payloads are).
        replayed: ``True`` when the answer had been committed before (an idempotent retry:
            the run was not resumed again).
    """

    result: Any = None
    replayed: bool = False

    def __repr__(self) -> str:
        return f"ResumeResult(replayed={self.replayed})"


#: The application's authentication: a request in, the caller out (or ``NotAuthenticated``).
Authenticate: TypeAlias = Callable[["Request"], Awaitable[Caller]]
#: The application's resume: redeem the token with the answer and resume the run.
Resume: TypeAlias = Callable[[ResumeRequest], Awaitable[ResumeResult]]


def problem_response(error: PauseTokenError) -> Response:
    """The RFC 9457 response for a pausetoken error.

    The status is the error's ``http_status`` and the body its ``to_problem()``, with
    ``Content-Type: application/problem+json``. A 401 names a challenge
    (``WWW-Authenticate``), ``RedemptionInProgress`` adds ``Retry-After`` (whole seconds,
    rounded up), and a configuration error's detail is replaced: it is the operator's,
    and stays in the log.

    Args:
        error: Any pausetoken error.

    Returns:
        A Starlette response.
    """
    problem = error.to_problem()
    if isinstance(error, ConfigurationError):
        problem["detail"] = "The service is not configured correctly."
    headers = dict(_NO_STORE)
    if error.http_status == 401:  # noqa: PLR2004 - the status RFC 9110 gives a challenge
        headers["WWW-Authenticate"] = (
            "PauseToken" if error.code != "not_authenticated" else "Bearer"
        )
    if isinstance(error, RedemptionInProgress):
        seconds = error.retry_after if error.retry_after is not None else 1.0
        headers["Retry-After"] = str(max(1, math.ceil(seconds)))
    return JSONResponse(
        problem,
        status_code=error.http_status,
        headers=headers,
        media_type="application/problem+json",
    )


def log_refusal(route: str, error: PauseTokenError) -> None:
    # The code and detail never hold a token, a payload or an answer.
    level = logging.ERROR if error.http_status >= 500 else logging.INFO  # noqa: PLR2004
    logger.log(level, "%s refused: %s", route, error, extra={"code": error.code, "route": route})


@attrs.define
class Endpoints:
    """The router's handlers, sharing the service and the application's two functions."""

    tokens: PauseTokens
    authenticate: Callable[[Request], Awaitable[Caller]]
    resume: Callable[[ResumeRequest], Awaitable[ResumeResult]]
    max_body_bytes: int

    async def caller(self, request: Request) -> Caller:
        caller: object = await self.authenticate(request)  # the application's code: checked
        if not isinstance(caller, Caller):
            msg = "the authenticate function must return a pausetoken.asgi.Caller"
            raise ConfigurationError(msg, code=ConfigurationError.CONFIGURATION_ERROR)
        return caller

    async def read_token_and_answer(self, request: Request) -> tuple[str, Any]:
        body = await read_json_object(request, max_body_bytes=self.max_body_bytes)
        unknown = sorted(set(body) - {"token", "answer"})
        if unknown:
            msg = f"the request body has members other than token and answer: {len(unknown)}"
            raise InvalidRequest(msg)
        if "answer" not in body:
            raise InvalidRequest("the request body has no answer member")
        header = request.headers.get(TOKEN_HEADER)
        token = body.get("token")
        if header is not None and token is not None:
            msg = f"send the token once: in the {TOKEN_HEADER} header or in the body"
            raise InvalidRequest(msg)
        token = header if header is not None else token
        if not isinstance(token, str) or not token:
            msg = f"no token: send it in the {TOKEN_HEADER} header or as the body's token"
            raise InvalidRequest(msg)
        return token, body["answer"]

    async def run_resume(self, token: str, answer: Any, caller: Caller) -> Response:
        try:
            done: object = await self.resume(ResumeRequest(token, answer, caller))
        except PauseTokenError:
            raise
        except Exception as exc:
            # Only the type: the application's message may quote the answer.
            logger.error(  # noqa: TRY400 - a traceback would carry the message
                "resume function failed: %s", type(exc).__name__, extra={"code": "resume_failed"}
            )
            msg = "resuming the run failed; the answer may be sent again"
            raise ResumeFailed(msg, code=ResumeFailed.RESUME_FAILED) from exc
        if not isinstance(done, ResumeResult):
            msg = "the resume function must return a pausetoken.asgi.ResumeResult"
            raise ConfigurationError(msg, code=ConfigurationError.CONFIGURATION_ERROR)
        try:
            result = to_json_value(done.result)
        except UnsupportedPayload as exc:
            msg = "the run's result cannot be sent as JSON"
            raise ResumeFailed(msg, code=ResumeFailed.RESUME_RESULT_INVALID) from exc
        logger.info("answer accepted", extra={"replayed": done.replayed})
        return JSONResponse({"replayed": done.replayed, "result": result}, headers=_NO_STORE)

    async def post_resume(self, request: Request) -> Response:
        try:
            refuse_token_in_url(request)
            caller = await self.caller(request)
            token, answer = await self.read_token_and_answer(request)
            return await self.run_resume(token, answer, caller)
        except PauseTokenError as error:
            log_refusal("resume", error)
            return problem_response(error)


def _check_caller(tokens: PauseTokens, claims: Claims, caller: Caller) -> None:
    """redeem()'s checks before its claim, in its order: namespace, scope, principal, kind."""
    namespace = getattr(tokens.checkpoints, "namespace", None)
    if (namespace if isinstance(namespace, str) else None) != claims.ns:
        msg = "the token was minted for another runtime namespace (another graph)"
        raise InvalidToken(msg, code=InvalidToken.TOKEN_NAMESPACE_MISMATCH)
    try:
        interrupt: Interrupt[Any, Any] | None = tokens.interrupt(claims.name)
    except UnknownInterrupt:
        interrupt = None
    cross_scope = interrupt is not None and interrupt.cross_scope
    if not cross_scope and not hmac.compare_digest(claims.scope_hash, hash_scope(caller.scope)):
        raise ScopeMismatch
    if claims.sub is not None and not (
        caller.principal is not None
        # As UTF-8 bytes: compare_digest refuses non-ASCII str.
        and hmac.compare_digest(
            claims.sub.encode("utf-8", "surrogatepass"),
            caller.principal.encode("utf-8", "surrogatepass"),
        )
    ):
        raise PrincipalMismatch
    if interrupt is None:
        raise UnknownInterrupt


async def _refuse_settled(tokens: PauseTokens, claims: Claims) -> None:
    """Refuse a pause that is answered, revoked, or held by a live claim."""
    record = await tokens.store.status(claims.pause_key)
    if record is None:
        return
    if record.state is PauseState.REDEEMED:
        msg = "the pause was answered already"
        raise AlreadyRedeemed(msg)
    if record.state is PauseState.REVOKED:
        raise TokenRevoked
    now = datetime.fromtimestamp(tokens.clock(), tz=UTC)
    if record.lease_until is not None and record.lease_until > now:
        raise RedemptionInProgress(retry_after=(record.lease_until - now).total_seconds())


async def describe_pause(tokens: PauseTokens, token: str, caller: Caller) -> dict[str, Any]:
    """What a token asks, for the approval page: verified, read, and nothing changed.

    Verifies the token, checks the caller's scope and principal, refuses a pause that is
    answered, revoked or being answered, and reads the pending payload from the checkpoint
    reader (checking that it is the one the token was minted for). The approval page's
    ``POST /approve/describe`` answers with it.

    Args:
        tokens: The service that minted the token.
        token: The token, as sent.
        caller: Who asks, from the application's authentication.

    Returns:
        ``{"name": ..., "payload": ..., "expires_at": ...}``: the interrupt's name, the
        pending payload as JSON values and the token's expiry (ISO 8601, UTC).

    Raises:
        PauseTokenError: the refusals redeeming gives before its claim (``InvalidToken``,
            ``TokenExpired``, ``ScopeMismatch``, ``PrincipalMismatch``, ``UnknownInterrupt``,
            ``StaleToken``, ``CheckpointNotFound``, ``PayloadMismatch``), and
            ``AlreadyRedeemed``, ``TokenRevoked`` or ``RedemptionInProgress`` for a pause
            that is settled or being answered.
    """
    claims = tokens.verify(token)
    _check_caller(tokens, claims, caller)
    await _refuse_settled(tokens, claims)
    pending = await tokens.checkpoints.pending(
        thread_id=claims.thread_id,
        checkpoint_id=claims.checkpoint_id,
        interrupt_id=claims.interrupt_id,
    )
    if not hmac.compare_digest(hash_payload(pending.value), claims.request_hash):
        raise PayloadMismatch
    return {
        "name": claims.name,
        "payload": to_json_value(pending.value),
        "expires_at": claims.expires_at.isoformat(),
    }
