"""Registered kinds of pause."""

from __future__ import annotations

import functools
import importlib
import re
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs

# The converter machinery (cattrs' preconf modules) loads when an interrupt first reads or
# writes a value, not when one is defined: the methods below load it through `_module()`.
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

    import cattrs

    from pausetoken._hashing import JSONValue

__all__ = ["Interrupt"]

P = TypeVar("P")
R = TypeVar("R")

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


@functools.cache
def _module(name: str) -> ModuleType:
    """The module ``name``, imported on first use.

    A function-level import statement costs more than this cached lookup on every call, and
    these run several times per redemption.
    """
    return importlib.import_module(name)


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

    The interrupt is the handle for its types: pass it (not its name) to
    [`mint()`][pausetoken.PauseTokens.mint], to ``redeem(..., expect=...)`` and to
    LangGraph's ``ask()``, and type checkers know the payload and the answer.

    It also owns the converter its payload and answer are read and written with, so the
    service and ``ask()`` inside a LangGraph node structure an answer the same way. To read
    a type the strict converter does not know, register a hook on a converter of your own
    and pass it (the second example).

    Args:
        name: The name a token carries and a runtime asks with (``"approval"``).
        payload: The type of what is shown to the person (attrs class, dataclass,
            TypedDict, pydantic model, or a plain type such as ``dict``).
        response: The type of the answer.
        validate: Optional ``validate(response, payload)``; raise
            [`InvalidResponse`][pausetoken.exceptions.InvalidResponse] (or ``ValueError``) to
            refuse an answer before anything is claimed.
        cross_scope: Allow answers from another scope than the one the token was minted in.
        converter: The cattrs converter for the payload and the answer, built with
            [`make_converter()`][pausetoken.make_converter] and given extra hooks. By default
            (``None``) the shared strict converter, which should not be given hooks: it
            serves every interrupt built without one.

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
        >>> from decimal import Decimal
        >>> from pausetoken import make_converter
        >>> prices = make_converter()
        >>> prices.register_structure_hook(Decimal, lambda value, _: Decimal(value))
        >>> PRICE = Interrupt("price", payload=dict, response=Decimal, converter=prices)
        >>> PRICE.structure_response("12.50")
        Decimal('12.50')
    """

    name: str = attrs.field(validator=_valid_name)
    payload: type[P] = attrs.field(kw_only=True)
    response: type[R] = attrs.field(kw_only=True)
    validate: Callable[[R, P], object] | None = attrs.field(default=None, kw_only=True)
    cross_scope: bool = attrs.field(default=False, kw_only=True)
    _converter: cattrs.Converter | None = attrs.field(
        default=None, kw_only=True, alias="converter", repr=False
    )

    @property
    def converter(self) -> cattrs.Converter:
        """The converter this interrupt's payload and answer are read and written with."""
        if self._converter is not None:
            return self._converter
        converter: cattrs.Converter = _module("pausetoken._structure").default_converter
        return converter

    def structure_payload(self, value: Any) -> P:
        """Read a payload into the payload type (instances are checked the same way).

        Raises:
            UnsupportedPayload: it does not fit (code ``invalid_payload``, naming the field).
        """
        typed: P = _module("pausetoken._structure").structure_payload(
            value, self.payload, converter=self.converter, name=self.name
        )
        return typed

    def structure_response(self, value: Any) -> R:
        """Read an answer into the response type (instances are checked the same way).

        Raises:
            InvalidResponse: it does not fit; ``field`` names the offending field.
        """
        typed: R = _module("pausetoken._structure").structure_response(
            value, self.response, converter=self.converter, name=self.name
        )
        return typed

    def to_json(self, value: Any) -> JSONValue:
        """A payload or answer as plain JSON values, written with this interrupt's converter.

        Raises:
            UnsupportedPayload: the value cannot be represented exactly as JSON.
        """
        plain: JSONValue = _module("pausetoken._hashing").to_json_value(
            value, converter=self.converter
        )
        return plain
