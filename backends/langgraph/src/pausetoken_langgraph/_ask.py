"""``ask()``: a pause inside a LangGraph node, wrapped in pausetoken's small envelope."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, TypeVar, overload

from langgraph.types import interrupt as langgraph_interrupt

from pausetoken import Interrupt
from pausetoken.plugins import to_json_value

__all__ = ["ENVELOPE_VERSION", "ask", "envelope", "unwrap"]

#: The version a pausetoken envelope carries under its ``"pausetoken"`` key.
ENVELOPE_VERSION: Final = 1
_KEYS: Final = frozenset({"pausetoken", "name", "payload"})

R = TypeVar("R")


def envelope(name: str, payload: Any) -> dict[str, Any]:
    """The value `ask()` hands to LangGraph's ``interrupt()``.

    Args:
        name: The registered interrupt name.
        payload: What is shown to the person; converted to plain JSON values.

    Returns:
        ``{"pausetoken": 1, "name": name, "payload": <JSON payload>}``.

    Raises:
        UnsupportedPayload: the payload cannot be represented exactly as JSON.
    """
    return _wrapped(name, to_json_value(payload))


def _wrapped(name: str, payload: Any) -> dict[str, Any]:
    return {"pausetoken": ENVELOPE_VERSION, "name": name, "payload": payload}


def unwrap(value: Any) -> tuple[str | None, Any]:
    """Split an interrupt value into the envelope's name and payload.

    Args:
        value: An interrupt's value as LangGraph stored it.

    Returns:
        ``(name, payload)`` for a value written by `ask()`; ``(None, value)`` for any
        other interrupt (a *foreign* one).
    """
    if (
        isinstance(value, Mapping)
        and value.keys() == _KEYS
        and value["pausetoken"] == ENVELOPE_VERSION
        and not isinstance(value["pausetoken"], bool)
        and isinstance(value["name"], str)
    ):
        return value["name"], value["payload"]
    return None, value


@overload
def ask(interrupt: Interrupt[Any, R], payload: Any) -> R: ...


@overload
def ask(interrupt: str, payload: Any) -> Any: ...


@overload
def ask(interrupt: str, payload: Any, *, response: type[R]) -> R: ...


def ask(
    interrupt: Interrupt[Any, Any] | str, payload: Any, *, response: type[Any] | None = None
) -> Any:
    """Pause the node to ask a person; return their answer when the run resumes.

    Call it inside a LangGraph node instead of ``interrupt()``. The node re-runs from its
    first line when the run resumes, so do not mint tokens or cause side effects before
    this call: mint after the run returned paused, with
    [`mint_pending()`][pausetoken_langgraph.mint_pending].

    The payload is stored by LangGraph inside an envelope (see `envelope()`); the
    token minted for the pause binds the hash of the payload as LangGraph stored it.

    Given the registered [`Interrupt`][pausetoken.Interrupt], the payload is written and the
    answer read with the interrupt's converter: the one the service reads the answer with
    when it is redeemed, so a hook registered on it is seen on both sides.

    Args:
        interrupt: The registered [`Interrupt`][pausetoken.Interrupt] (its name, response
            type and converter are used, so they are written once), or its name.
        payload: What is shown to the person: plain JSON data, or an attrs class, dataclass
            or pydantic model (stored as plain JSON).
        response: With a name: the type to structure the answer into (with the shared
            strict converter); without it the answer is returned as the plain JSON that
            [`resume()`][pausetoken_langgraph.resume] sent. With an ``Interrupt``: leave it
            out (its ``response`` type is used).

    Returns:
        The answer, typed as the interrupt's response type.

    Raises:
        UnsupportedPayload: the payload cannot be represented exactly as JSON.
        InvalidResponse: the answer does not fit the response type.
        TypeError: both an ``Interrupt`` and ``response`` were given.
        ValueError: a name with ``response`` that no interrupt could be registered under.

    Examples:
        A node of a graph (not run here: outside a running graph there is nothing to pause;
        docs/langgraph.md runs a whole graph):

        >>> REFUND = Interrupt("refund", payload=Refund, response=Decision)  # doctest: +SKIP
        >>> def approve(state):  # doctest: +SKIP
        ...     decision = ask(REFUND, Refund(state["order_id"], 1999))
        ...     return {"approved": decision.approved}
    """
    if isinstance(interrupt, Interrupt):
        if response is not None:
            msg = "ask() takes the response type from the Interrupt; do not pass response="
            raise TypeError(msg)
        asked: Interrupt[Any, Any] = interrupt
    elif response is None:
        return langgraph_interrupt(envelope(interrupt, payload))
    else:
        # A name and a response type stand for an interrupt of that name (payload untyped).
        asked = Interrupt(interrupt, payload=object, response=response)
    answer = langgraph_interrupt(_wrapped(asked.name, asked.to_json(payload)))
    return asked.structure_response(answer)
