"""The kinds of pause a service knows: one registered interrupt per name."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cattrs.errors import StructureHandlerNotFoundError

from pausetoken.exceptions import InvalidInterrupt, UnknownInterrupt

if TYPE_CHECKING:
    from pausetoken._interrupt import Interrupt

__all__ = ["Registrations"]


class Registrations:
    """The interrupts registered on a service, by name; shared with its parts, never copied."""

    __slots__ = ("_by_name",)

    def __init__(self) -> None:
        """Start with none registered."""
        self._by_name: dict[str, Interrupt[Any, Any]] = {}

    def __repr__(self) -> str:
        return f"Registrations({', '.join(sorted(self._by_name))})"

    def __len__(self) -> int:
        return len(self._by_name)

    def add(self, interrupt: Interrupt[Any, Any]) -> None:
        """Register ``interrupt`` (again, if it is the one registered under its name).

        Raises:
            ConfigurationError: ``duplicate_interrupt`` or ``interrupt_type_unsupported``, as
                ``PauseTokens.register()`` documents.
        """
        existing = self._by_name.get(interrupt.name)
        if existing is not None and existing != interrupt:
            msg = f"an interrupt named {interrupt.name!r} is already registered"
            raise InvalidInterrupt(msg, code=InvalidInterrupt.DUPLICATE_INTERRUPT)
        for role, kind in (("payload", interrupt.payload), ("response", interrupt.response)):
            try:
                interrupt.converter.get_structure_hook(kind)
            except StructureHandlerNotFoundError as exc:
                msg = (
                    f"the {role} type of {interrupt.name!r} has a field type pausetoken cannot "
                    "read from JSON; register a structure hook on a converter from "
                    "make_converter() and pass it as Interrupt(..., converter=...)"
                )
                raise InvalidInterrupt(
                    msg, code=InvalidInterrupt.INTERRUPT_TYPE_UNSUPPORTED
                ) from exc
        self._by_name[interrupt.name] = interrupt

    def get(self, name: str) -> Interrupt[Any, Any] | None:
        """The interrupt registered under ``name``, if any."""
        return self._by_name.get(name)

    def find(self, interrupt: Interrupt[Any, Any] | str) -> Interrupt[Any, Any]:
        """The registration ``interrupt`` names; an ``Interrupt`` must be the one registered.

        Raises:
            UnknownInterrupt: nothing, or another interrupt, is registered under the name.
        """
        name = interrupt if isinstance(interrupt, str) else interrupt.name
        found = self._by_name.get(name)
        if found is None:
            raise UnknownInterrupt
        if not isinstance(interrupt, str) and found != interrupt:
            msg = f"another interrupt is registered under the name {interrupt.name!r}"
            raise UnknownInterrupt(msg)
        return found
