"""``ToolApprovals``: a tool call runs once, after its approver answered on the page."""

from __future__ import annotations

import hmac
import inspect
import json
import logging
import secrets
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, Final, TypeVar
from urllib.parse import urlsplit

import attrs
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ElicitRequest, ElicitRequestURLParams, ElicitResult, InputRequiredResult

from pausetoken import hash_payload, hash_scope
from pausetoken.asgi import ResumeRequest, ResumeResult
from pausetoken.exceptions import (
    AlreadyRedeemed,
    CheckpointNotFound,
    ConfigurationError,
    InvalidToken,
    PauseTokenError,
    PayloadMismatch,
    ScopeMismatch,
    StaleToken,
)
from pausetoken.plugins import fingerprint
from pausetoken_mcp._calls import CallState
from pausetoken_mcp._kinds import TOOL_APPROVAL, TOOL_RUN, approval_payload, register
from pausetoken_mcp._reader import APPROVAL_ID, RUN_ID, ToolCallCheckpoints

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Iterator, Mapping
    from datetime import timedelta

    from mcp_types import InputResponses

    from pausetoken import Lease, PauseTokens, Scope
    from pausetoken_mcp._calls import ToolCalls

__all__ = [
    "ELICITATION_KEY",
    "Approved",
    "Pending",
    "Rejected",
    "ToolApprovals",
    "ToolRun",
    "as_tool_errors",
]

logger = logging.getLogger("pausetoken.mcp")

_T = TypeVar("_T")

#: The key of the URL elicitation in ``InputRequiredResult.input_requests``.
ELICITATION_KEY: Final = "pausetoken.approval"
# The version of the plaintext the handler keeps in requestState (sealed by MCP's boundary).
_STATE_VERSION: Final = 1
_LOOPBACK: Final = frozenset({"127.0.0.1", "localhost", "::1"})
_DECLINED: Final = {"type": "reject", "message": "the user did not open the approval link"}


@attrs.frozen
class Pending:
    """The approver has not answered: return `result` from the tool handler.

    On the first round it carries the URL elicitation (the approval link) and the
    ``requestState``; on later rounds the ``requestState`` only, so the client retries
    after a short wait until the approver answered.
    """

    result: InputRequiredResult = attrs.field(repr=False)


@attrs.frozen
class Rejected:
    """The approver rejected the call (or the user did not open the link): do not run it.

    Attributes:
        message: The approver's message, if any.
    """

    message: str = attrs.field(default="", repr=False)


@attrs.frozen
class _Round:
    call_id: str
    approval: str = attrs.field(repr=False)
    run: str = attrs.field(repr=False)


class ToolRun:
    """The claim on one tool call while its handler runs: `run()` starts the tool once."""

    __slots__ = ("_call_id", "_calls", "lease", "started")

    def __init__(self, lease: Lease, calls: ToolCalls, call_id: str) -> None:
        """Create the handle (`Approved.redeem()` does)."""
        #: The claim's lease (renewed while the block runs).
        self.lease = lease
        #: Whether `run()` started the tool.
        self.started = False
        self._calls = calls
        self._call_id = call_id

    async def run(self, side_effect: Awaitable[_T]) -> _T:
        """Record the call as started, then await ``side_effect`` under the lease.

        The record moves from ``APPROVED`` to ``STARTED`` before the side effect starts, so
        no other round or worker runs it again, even when this worker's commit never lands.

        Raises:
            LeaseLost: the claim was lost (the side effect did not start, or was cancelled).
            StaleToken: the call had started already (this block or another worker).
        """
        try:
            self.lease.ensure_held()
            moved = not self.started and await self._calls.advance(
                self._call_id, expected=CallState.APPROVED, state=CallState.STARTED
            )
        except BaseException:
            _discard(side_effect)
            raise
        if not moved:
            _discard(side_effect)
            msg = "the tool call already started"
            raise StaleToken(msg)
        self.started = True
        return await self.lease.run(side_effect)

    def __repr__(self) -> str:
        return f"ToolRun(call={fingerprint(self._call_id)}, started={self.started})"


@attrs.frozen
class Approved:
    """The approver approved: redeem the call with `redeem()` and run the tool inside it."""

    _approvals: ToolApprovals = attrs.field(repr=False)
    _round: _Round = attrs.field(repr=False)
    _decision: dict[str, Any] = attrs.field(repr=False)
    _scope: Scope = attrs.field(repr=False)

    @asynccontextmanager
    async def redeem(self) -> AsyncIterator[ToolRun]:
        """Claim the call once; commit when the block ends.

        The tool's side effect goes through ``run.run(...)`` inside the block. A block that
        raises before the tool started releases the claim (the call can be retried); once
        the tool started, the claim is committed whatever the block does, and its error is
        raised after the commit.

        Raises:
            RedemptionInProgress: another worker holds the claim (nothing ran here).
            AlreadyRedeemed: the call already ran and was committed (a replayed
                ``requestState``).
            StaleToken: the call already started under a claim whose commit is unknown.
            CommitUnconfirmed: the commit could not be confirmed; the call is recorded as
                started, so no takeover runs it again.
        """
        service, calls = self._approvals.service, self._approvals.calls
        failure: BaseException | None = None
        async with service.redeem(
            self._round.run, self._decision, scope=self._scope, expect=TOOL_RUN
        ) as redemption:
            if redemption.replayed or redemption.lease is None:
                msg = "the tool call already ran; it does not run again"
                raise AlreadyRedeemed(msg)
            run = ToolRun(redemption.lease, calls, self._round.call_id)
            try:
                yield run
            except Exception as exc:
                if not run.started:
                    raise
                failure = exc  # the tool started: commit, then raise
        if failure is not None:
            raise failure


class ToolApprovals:
    """The single-use guard an MCP tool handler awaits before its side effect.

    One tool call awaiting approval gets two tokens from the service, both bound to the
    call's payload (the tool's name and arguments, `approval_payload()`), its scope and a
    call id recorded in the server's `ToolCalls`:

    * the **approval** token, bound to the approver (``sub``), travels in the approval
      link of a URL-mode elicitation; the approver answers on pausetoken's approval page,
      which authenticates them, and `answer_from_page()` records the decision;
    * the **run** token stays in the ``requestState`` (sealed by MCP's boundary, with
      `PauseTokenStateCodec` on the same key ring in a multi-worker deployment); the
      handler redeems it with the recorded decision, once, before its side effect.

    Args:
        service: The service; its checkpoint reader must be a `ToolCallCheckpoints`.
        approval_url: Where the approval page is served (``https://...``, or ``http://``
            on a loopback host); the link adds ``#token=...``.
        ttl: How long the tokens stay valid (the service's default otherwise).

    Raises:
        ConfigurationError: the service reads other checkpoints, or the URL is not an
            absolute ``https`` URL without a query or fragment.
    """

    def __init__(
        self, service: PauseTokens, *, approval_url: str, ttl: timedelta | None = None
    ) -> None:
        """Create the guard; see the class docstring."""
        reader = service.checkpoints
        if not isinstance(reader, ToolCallCheckpoints):
            msg = (
                "the service must read the server's tool calls: build it with "
                "checkpoints=ToolCallCheckpoints(calls)"
            )
            raise ConfigurationError(msg)
        parts = urlsplit(approval_url)
        secure = parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in _LOOPBACK)
        if not secure or not parts.netloc or parts.query or parts.fragment:
            msg = (
                "approval_url must be an absolute https URL (http only on a loopback host) "
                "without a query or fragment"
            )
            raise ConfigurationError(msg)
        register(service)
        self.service = service
        self.calls: ToolCalls = reader.calls
        self.approval_url = approval_url
        self.ttl = ttl

    async def gate(
        self,
        request_state: str | None,
        input_responses: InputResponses | None,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        scope: Scope,
        approver: str,
        description: str = "",
    ) -> Pending | Rejected | Approved:
        """Where this round of the tool call stands.

        Pass ``ctx.request_state`` and ``ctx.input_responses`` of the MCP ``Context``, the
        tool's name and the arguments of **this** round. Without a request state, the call
        is recorded, its two tokens minted, and a `Pending` carries the URL elicitation.
        With one, the state's run token is verified against the scope and this round's
        arguments before anything is read, and the recorded call says the rest.

        Args:
            request_state: The state MCP's boundary unsealed (``ctx.request_state``).
            input_responses: The client's answers (``ctx.input_responses``); a declined or
                cancelled elicitation rejects the call.
            tool: The tool's name.
            arguments: The arguments of this round, as the tool received them.
            scope: The tenant the MCP request acts for.
            approver: The principal who must answer on the page (their authenticated id):
                the link is useless to anyone else.
            description: Shown on the page; the same on every round (it is bound).

        Returns:
            `Pending`, `Rejected` or `Approved`.

        Raises:
            InvalidToken, TokenExpired: the state's token is malformed, forged or expired.
            ScopeMismatch: the state was minted for another scope.
            PayloadMismatch: this round's tool name or arguments are not the approved ones.
            CheckpointNotFound: the server has no record of the call.
            ConfigurationError: no approver was given.
        """
        payload = approval_payload(tool, arguments, description=description)
        if request_state is None:
            return await self._ask(payload, tool, scope=scope, approver=approver)
        round_ = _parse_state(request_state)
        claims = self.service.verify(round_.run)
        if claims.name != TOOL_RUN.name or claims.thread_id != round_.call_id:
            msg = "the request state does not carry this tool call's run token"
            raise InvalidToken(msg)
        if not hmac.compare_digest(claims.scope_hash, hash_scope(scope)):
            raise ScopeMismatch
        if not hmac.compare_digest(claims.request_hash, hash_payload(payload)):
            msg = "the tool's name or arguments are not the ones the approver was asked about"
            raise PayloadMismatch(msg)
        record = await self.calls.load(round_.call_id)
        if record is None:
            msg = "the server has no record of this tool call"
            raise CheckpointNotFound(msg)
        if record.state is CallState.WAITING:
            if not _declined(input_responses):
                return Pending(InputRequiredResult(request_state=request_state))
            await self.calls.advance(
                round_.call_id,
                expected=CallState.WAITING,
                state=CallState.REJECTED,
                decision=_DECLINED,
            )
            record = await self.calls.load(round_.call_id)
            assert record is not None  # noqa: S101 - records are never deleted
        if record.state is CallState.REJECTED:
            message = (record.decision or {}).get("message", "")
            return Rejected(message if isinstance(message, str) else "")
        decision = record.decision or {"type": "approve"}
        return Approved(self, round_, decision, scope)

    async def _ask(
        self, payload: dict[str, Any], tool: str, *, scope: Scope, approver: str
    ) -> Pending:
        if not approver:
            msg = "an approval link is bound to its approver: pass approver="
            raise ConfigurationError(msg)
        call_id = secrets.token_urlsafe(24)
        await self.calls.open(call_id, payload)
        common: dict[str, Any] = {
            "scope": scope,
            "thread_id": call_id,
            "run_id": call_id,
            "checkpoint_id": call_id,
            "ttl": self.ttl,
        }
        approval = await self.service.mint(
            TOOL_APPROVAL, payload, interrupt_id=APPROVAL_ID, principal=approver, **common
        )
        run = await self.service.mint(TOOL_RUN, payload, interrupt_id=RUN_ID, **common)
        state = json.dumps(
            {"v": _STATE_VERSION, "call": call_id, "approval": approval.token, "run": run.token},
            separators=(",", ":"),
        )
        link = ElicitRequestURLParams(
            message=f"The tool {tool!r} needs an approval: open the link and sign in to answer.",
            url=f"{self.approval_url}#token={approval.token}",
        )
        logger.info("tool call %s awaits approval", fingerprint(call_id))
        return Pending(
            InputRequiredResult(
                input_requests={ELICITATION_KEY: ElicitRequest(params=link)},
                request_state=state,
            )
        )

    async def answer_from_page(self, request: ResumeRequest) -> ResumeResult:
        """The approval page's ``resume`` function: record the approver's decision once.

        Give it to ``resume_router(service, authenticate=..., resume=approvals.answer_from_page)``.
        The service checks the token, the authenticated caller's scope and principal (the
        token's approver), the decision (approve or reject), and that the call still waits;
        the decision is recorded under the claim, so two answers never both count.

        Raises:
            StaleToken: the call no longer waits (the user declined in the meantime).
            PauseTokenError: any other refusal of `PauseTokens.redeem` (``PrincipalMismatch``
                for another person).
        """
        async with self.service.redeem(
            request.token,
            request.answer,
            scope=request.scope,
            principal=request.principal,
            expect=TOOL_APPROVAL,
        ) as redemption:
            decision = redemption.response
            kind = decision.get("type")
            if redemption.replayed:
                return ResumeResult({"decision": kind}, replayed=True)
            state = CallState.APPROVED if kind == "approve" else CallState.REJECTED
            if not await self.calls.advance(
                redemption.claims.thread_id,
                expected=CallState.WAITING,
                state=state,
                decision=decision,
            ):
                msg = "the tool call no longer waits for an approval"
                raise StaleToken(msg)
        logger.info("tool call %s %s", fingerprint(redemption.claims.thread_id), state.value)
        return ResumeResult({"decision": kind})

    def __repr__(self) -> str:
        return f"ToolApprovals(approval_url={self.approval_url!r})"


def _discard(side_effect: Awaitable[Any]) -> None:
    """Close a coroutine that will not run (no "never awaited" warning)."""
    if inspect.iscoroutine(side_effect):
        side_effect.close()


@contextmanager
def as_tool_errors() -> Iterator[None]:
    """Turn a pausetoken refusal in a tool handler into MCP's ``ToolError``.

    MCPServer reports any other exception as a crash (``Error executing tool <name>``, a
    traceback in the log); a ``ToolError`` reaches the client as an ``is_error`` result whose
    text is ``[code] detail``: the stable code, and a detail that never holds a token, a
    payload or an answer.

    Examples:
        >>> from pausetoken.exceptions import AlreadyRedeemed
        >>> try:
        ...     with as_tool_errors():
        ...         raise AlreadyRedeemed
        ... except ToolError as exc:
        ...     str(exc).startswith("[already_redeemed]")
        True
    """
    try:
        yield
    except PauseTokenError as exc:
        raise ToolError(str(exc)) from exc


def _parse_state(request_state: str) -> _Round:
    try:
        state = json.loads(request_state)
    except ValueError:
        state = None
    if not isinstance(state, dict) or state.get("v") != _STATE_VERSION:
        msg = "the request state is not a pausetoken tool approval"
        raise InvalidToken(msg)
    call_id, approval, run = state.get("call"), state.get("approval"), state.get("run")
    if not (isinstance(call_id, str) and isinstance(approval, str) and isinstance(run, str)):
        msg = "the request state is not a pausetoken tool approval"
        raise InvalidToken(msg)
    return _Round(call_id, approval, run)


def _declined(input_responses: InputResponses | None) -> bool:
    answer = (input_responses or {}).get(ELICITATION_KEY)
    return isinstance(answer, ElicitResult) and answer.action != "accept"
