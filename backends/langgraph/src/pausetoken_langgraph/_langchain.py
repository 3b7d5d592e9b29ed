"""LangChain's ``HumanInTheLoopMiddleware``: its two interrupt shapes as pausetoken kinds.

The middleware pauses an agent made with ``langchain.agents.create_agent`` in one of two
modes. Batched (its default) raises one interrupt per model turn,
``{"action_requests": [...], "review_configs": [...]}``, answered with
``{"decisions": [...]}`` by position. Per-call raises one interrupt per gated tool call,
``{"type": "tool_approval", "tool_call_id", "name", "args", "description"}``, answered with
one decision; the decisions that tool allows travel in the interrupt's ``response_schema``.

Nothing here imports LangChain: the shapes are read from the values LangGraph stores. An
edit's arguments are checked against the tool's own argument schema when
[`resume()`][pausetoken_langgraph.resume] redeems: it hands the graph's tools to the kinds'
validators (`checking_edits_against`), so a bad edit is refused before anything is claimed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
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
    "checking_edits_against",
    "graph_tools",
    "langchain_kind",
    "langchain_value",
    "register_langchain",
]

_BATCHED_KEYS: Final = frozenset({"action_requests", "review_configs"})
_PER_CALL_TYPE: Final = "tool_approval"
_ALLOWED: Final = "allowed_decisions"

# The graph being resumed, while resume() redeems: the kinds' validators run inside redeem(),
# before its claim, and take no other argument than the answer and the payload. Its tools are
# looked up only when an edit is checked (most answers are not edits). None outside resume():
# a bare redeem() checks the decisions' shape only.
_EDIT_GRAPH: ContextVar[object | None] = ContextVar("pausetoken_langchain_edit_graph", default=None)


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


def graph_tools(graph: object) -> dict[str, Any]:
    """The tools a graph's tool nodes run, by name; empty for a graph without one.

    The tool nodes are LangGraph's ``ToolNode``, which ``create_agent`` builds.
    """
    try:
        from langgraph.prebuilt import ToolNode  # noqa: PLC0415 - only for agents' graphs
    except ImportError:  # pragma: no cover - langgraph ships its prebuilt package
        return {}
    nodes = getattr(graph, "nodes", None)
    found: dict[str, Any] = {}
    for node in nodes.values() if isinstance(nodes, Mapping) else ():
        bound = getattr(node, "bound", None)
        if isinstance(bound, ToolNode):
            found.update(bound.tools_by_name)
    return found


@contextlib.contextmanager
def checking_edits_against(graph: object) -> Iterator[None]:
    """Within the block, the LangChain kinds check edits against ``graph``'s tools' schemas."""
    reset = _EDIT_GRAPH.set(graph)
    try:
        yield
    finally:
        _EDIT_GRAPH.reset(reset)


def _location(loc: Sequence[object]) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)


def _check_edited_args(decision: Mapping[str, Any], field: str) -> None:
    """Refuse an edit whose arguments the tool's schema refuses, as LangChain would.

    The schema is the one the model sees (``tool_call_schema``), which the middleware's
    per-call ``response_schema`` uses for edits and the tool validates its arguments with
    when it runs. A tool whose schema is JSON Schema rather than a pydantic model, or a
    name the graph has no tool for, is left as the middleware leaves it: unchecked.
    """
    graph = _EDIT_GRAPH.get()
    if graph is None or decision.get("type") != "edit":
        return
    tools = graph_tools(graph)
    action = decision["edited_action"]
    schema = getattr(tools.get(action["name"]), "tool_call_schema", None)
    from pydantic import BaseModel, ValidationError  # noqa: PLC0415 - LangChain's dependency

    if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
        return
    try:
        schema.model_validate(action["args"])
    except ValidationError as exc:
        errors = exc.errors()
        first = errors[0]
        where = _location(first["loc"])
        # Codes and places only: pydantic's messages quote the values the approver sent.
        msg = (
            f"the edited arguments do not fit the tool {action['name']!r}: "
            f"{first['type']} at args{where} ({len(errors)} problem(s) in all)"
        )
        raise InvalidResponse(msg, field=f"{field}.edited_action.args{where}") from None


def _check_batched(response: dict[str, Any], payload: dict[str, Any]) -> None:
    approvals = _batched_approvals(payload)
    if approvals is None:  # minted only for a recognised value, whose hash the token binds
        msg = "the stored interrupt is not a batched LangChain review"
        raise ValueError(msg)
    if response.keys() != {"decisions"}:
        msg = 'the answer must be {"decisions": [...]}, one decision per action in order'
        raise InvalidResponse(msg, field="$")
    check_decisions(response["decisions"], approvals)
    for index, decision in enumerate(response["decisions"]):
        _check_edited_args(decision, f"$.decisions[{index}]")


def _check_per_call(response: dict[str, Any], payload: dict[str, Any]) -> None:
    approval = _per_call_approval(payload)
    if approval is None:
        msg = "the stored interrupt is not a LangChain tool approval"
        raise ValueError(msg)
    check_decision(response, approval)
    _check_edited_args(response, "$")


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
