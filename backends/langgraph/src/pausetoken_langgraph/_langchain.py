"""LangChain's ``HumanInTheLoopMiddleware``: its two interrupt shapes as pausetoken kinds.

The middleware pauses an agent made with ``langchain.agents.create_agent`` in one of two
modes. Batched (its default) raises one interrupt per model turn,
``{"action_requests": [...], "review_configs": [...]}``, answered with
``{"decisions": [...]}`` by position. Per-call raises one interrupt per gated tool call,
``{"type": "tool_approval", "tool_call_id", "name", "args", "description"}``, answered with
one decision; the decisions that tool allows travel in the interrupt's ``response_schema``.

Nothing here imports LangChain: the shapes are read from the values LangGraph stores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from pausetoken import Interrupt
from pausetoken.exceptions import InvalidResponse
from pausetoken.kinds import DECISION_TYPES, Action, Approval, check_decision, check_decisions

if TYPE_CHECKING:
    from langgraph.types import Interrupt as GraphInterrupt

    from pausetoken import PauseTokens

__all__ = [
    "LANGCHAIN_BATCHED",
    "LANGCHAIN_PER_CALL",
    "langchain_kind",
    "langchain_value",
    "register_langchain",
]

_BATCHED_KEYS: Final = frozenset({"action_requests", "review_configs"})
_PER_CALL_TYPE: Final = "tool_approval"
_ALLOWED: Final = "allowed_decisions"


def _is_object(value: object) -> bool:
    return isinstance(value, Mapping) and all(isinstance(key, str) for key in value)


def _allowed(value: object) -> tuple[str, ...] | None:
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        return None
    if not all(isinstance(kind, str) and kind in DECISION_TYPES for kind in value):
        return None
    if len(set(value)) != len(value):
        return None
    return tuple(value)


def _batched_approvals(value: Mapping[str, Any]) -> list[Approval] | None:
    """The approvals a batched interrupt asks for, or ``None`` if it is not one."""
    requests, reviews = value.get("action_requests"), value.get("review_configs")
    if not (isinstance(requests, list) and isinstance(reviews, list)) or not requests:
        return None
    if len(requests) != len(reviews):
        return None
    approvals = []
    for request, review in zip(requests, reviews, strict=True):
        if not (_is_object(request) and _is_object(review)):
            return None
        name, args = request.get("name"), request.get("args", {})
        allowed = _allowed(review.get(_ALLOWED))
        if not isinstance(name, str) or not name.strip() or not _is_object(args):
            return None
        # The middleware builds both lists together, one entry per gated call.
        if review.get("action_name") != name or allowed is None:
            return None
        approvals.append(Approval(Action(name, dict(args)), allowed))  # type: ignore[arg-type]
    return approvals


def _per_call_approval(value: Mapping[str, Any]) -> Approval | None:
    """The approval a per-call interrupt value (with its allowed decisions) asks for."""
    name, args = value.get("name"), value.get("args")
    allowed = _allowed(value.get(_ALLOWED))
    if value.get("type") != _PER_CALL_TYPE or not isinstance(value.get("tool_call_id"), str):
        return None
    if not isinstance(name, str) or not name.strip() or not _is_object(args) or allowed is None:
        return None
    return Approval(Action(name, dict(args)), allowed)  # type: ignore[arg-type]


def _schema_decisions(schema: object) -> tuple[str, ...] | None:
    """The decision types a per-call ``response_schema`` (JSON Schema) accepts.

    The middleware publishes one branch per allowed decision (``oneOf`` of ``$ref``s into
    ``$defs``), or the plain object schema of a tool that allows one decision; each branch
    pins ``type`` with ``const``.
    """
    if not isinstance(schema, Mapping):
        return None
    definitions = schema.get("$defs", {})
    branches = schema.get("oneOf", schema.get("anyOf", [schema]))
    if not isinstance(branches, list) or not isinstance(definitions, Mapping):
        return None
    found = []
    for branch in branches:
        if isinstance(branch, Mapping) and isinstance(branch.get("$ref"), str):
            branch = definitions.get(branch["$ref"].removeprefix("#/$defs/"))  # noqa: PLW2901
        properties = branch.get("properties") if isinstance(branch, Mapping) else None
        kind = properties.get("type") if isinstance(properties, Mapping) else None
        found.append(kind.get("const") if isinstance(kind, Mapping) else None)
    return _allowed(found)


def langchain_value(found: GraphInterrupt) -> Any:
    """The value a token binds for an interrupt that is not an ``ask()`` envelope.

    The interrupt's own value, except for the middleware's per-call interrupt: the decisions
    its tool allows are only in the interrupt's ``response_schema``, so they are added to
    the value as ``allowed_decisions`` (unless the value has them already). The token then
    binds them too, and the answer is checked against them before anything is claimed.
    """
    value = found.value
    if not (isinstance(value, Mapping) and value.get("type") == _PER_CALL_TYPE):
        return value
    if _ALLOWED in value:
        return value
    allowed = _schema_decisions(getattr(found, "response_schema", None))
    if allowed is None:
        return value
    return {**value, _ALLOWED: list(allowed)}


def _check_batched(response: dict[str, Any], payload: dict[str, Any]) -> None:
    approvals = _batched_approvals(payload)
    if approvals is None:  # minted only for a recognised value, whose hash the token binds
        msg = "the stored interrupt is not a batched LangChain review"
        raise ValueError(msg)
    if response.keys() != {"decisions"}:
        msg = 'the answer must be {"decisions": [...]}, one decision per action in order'
        raise InvalidResponse(msg, field="$")
    check_decisions(response["decisions"], approvals)


def _check_per_call(response: dict[str, Any], payload: dict[str, Any]) -> None:
    approval = _per_call_approval(payload)
    if approval is None:
        msg = "the stored interrupt is not a LangChain tool approval"
        raise ValueError(msg)
    check_decision(response, approval)


LANGCHAIN_BATCHED: Final[Interrupt[dict[str, Any], dict[str, Any]]] = Interrupt(
    "langchain.review", payload=dict, response=dict, validate=_check_batched
)
"""LangChain's batched review: the payload is the interrupt value as LangGraph stored it
(``action_requests`` and ``review_configs``), the answer ``{"decisions": [...]}``, one
decision per action in order, checked with
[`check_decisions()`][pausetoken.kinds.check_decisions]."""

LANGCHAIN_PER_CALL: Final[Interrupt[dict[str, Any], dict[str, Any]]] = Interrupt(
    "langchain.tool_approval", payload=dict, response=dict, validate=_check_per_call
)
"""LangChain's per-call tool approval: the payload is the interrupt value with the
``allowed_decisions`` its ``response_schema`` accepts, the answer one decision, checked
with [`check_decision()`][pausetoken.kinds.check_decision]."""


def langchain_kind(found: GraphInterrupt) -> Interrupt[dict[str, Any], dict[str, Any]] | None:
    """The LangChain kind an interrupt is, or ``None`` when it is neither shape."""
    value = langchain_value(found)
    if not _is_object(value):
        return None
    if value.keys() >= _BATCHED_KEYS and _batched_approvals(value) is not None:
        return LANGCHAIN_BATCHED
    if _per_call_approval(value) is not None:
        return LANGCHAIN_PER_CALL
    return None


def register_langchain(tokens: PauseTokens) -> None:
    """Register the kinds of LangChain's ``HumanInTheLoopMiddleware`` with a service.

    After this, [`mint_pending()`][pausetoken_langgraph.mint_pending] recognises the
    middleware's interrupts (batched and per-call) and mints a token for each, and
    [`resume()`][pausetoken_langgraph.resume] checks the decisions before anything is
    claimed or saved.

    Args:
        tokens: The [`PauseTokens`][pausetoken.PauseTokens] service of the agent's graph.

    Raises:
        ConfigurationError: another interrupt is registered under one of their names.
    """
    tokens.register(LANGCHAIN_BATCHED)
    tokens.register(LANGCHAIN_PER_CALL)
