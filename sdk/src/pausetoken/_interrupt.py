"""Registered kinds of pause."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Interrupt"]

P = TypeVar("P")
R = TypeVar("R")

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


def _valid_name(_instance: object, _attribute: attrs.Attribute[Any], value: str) -> None:
    if not isinstance(value, str) or not _NAME.match(value):
        msg = (
            "an interrupt name is 1-128 characters of letters, digits and '_.:-', "
            "starting with a letter or digit"
        )
        raise ValueError(msg)


@attrs.frozen
class Interrupt(Generic[P, R]):
    """A registered kind of pause: its name, payload type and response type.

    Args:
        name: The name a token carries and a runtime asks with (``"approval"``).
        payload: The type of what is shown to the person (attrs class, dataclass,
            TypedDict, pydantic model, or a plain type such as ``dict``).
        response: The type of the answer.
        validate: Optional ``validate(response, payload)``; raise
            [`InvalidResponse`][pausetoken.exceptions.InvalidResponse] (or ``ValueError``) to
            refuse an
            answer before anything is claimed.
        cross_scope: Allow answers from another scope than the one the token was minted in.

    Examples:
        >>> import attrs
        >>> @attrs.frozen
        ... class Refund:
        ...     amount_cents: int
        >>> @attrs.frozen
        ... class Decision:
        ...     approved: bool
        >>> Interrupt("refund", payload=Refund, response=Decision).name
        'refund'
    """

    name: str = attrs.field(validator=_valid_name)
    payload: type[P] = attrs.field(kw_only=True)
    response: type[R] = attrs.field(kw_only=True)
    validate: Callable[[R, P], object] | None = attrs.field(default=None, kw_only=True)
    cross_scope: bool = attrs.field(default=False, kw_only=True)
