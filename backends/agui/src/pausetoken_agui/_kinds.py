"""``Resumable``: a pausetoken interrupt kind answered through AG-UI resume entries."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Generic, Literal, TypeVar

import attrs

from pausetoken import Interrupt
from pausetoken.exceptions import ConfigurationError, InvalidResponse
from pausetoken.kinds import APPROVAL, QUESTION
from pausetoken_agui._schemas import kind_schema, type_schema

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["PREFIX", "Resumable", "Status"]

P = TypeVar("P")
R = TypeVar("R")

#: What an AG-UI resume entry says about its interrupt.
Status = Literal["resolved", "cancelled"]
_STATUSES: Final = ("resolved", "cancelled")
#: The prefix of the names the adapter registers its kinds under.
PREFIX: Final = "agui:"
_MAX_NAME: Final = 128
_DRAFT: Final = "https://json-schema.org/draft/2020-12/schema"


@attrs.frozen
class Resumable(Generic[P, R]):
    """A kind of pause an AG-UI agent raises, and how its answer comes back.

    An AG-UI resume entry answers with a ``status`` (``"resolved"`` or ``"cancelled"``)
    and, when resolved, a ``payload``: the answer, read into the kind's response type and
    checked by its validator. The pair is what a token's redemption binds, so retrying the
    same status and payload is an idempotent retry and any other pair is a conflict. A
    cancellation carries no payload.

    The adapter registers `interrupt` (named ``"agui:" + kind.name``, the kind's payload
    type, its converter and ``cross_scope``) on the service; tokens are minted for it.

    Args:
        kind: The pausetoken interrupt: any registered kind of yours, or
            `pausetoken.kinds.APPROVAL` / `pausetoken.kinds.QUESTION`.
        response_schema: The JSON Schema AG-UI's ``Interrupt.responseSchema`` carries, or
            a function of the payload that returns it. By default it is written from the
            kind: from the payload for the ready-made kinds (the decisions an approval
            allows, each question's options), from the response type otherwise.

    Raises:
        ConfigurationError: the name would be longer than 128 characters, or no schema can
            be written for the response type (give ``response_schema``).

    Examples:
        >>> import attrs
        >>> from pausetoken import Interrupt
        >>> @attrs.frozen
        ... class Decision:
        ...     approved: bool
        >>> REFUND = Resumable(Interrupt("refund", payload=dict, response=Decision))
        >>> REFUND.interrupt.name, REFUND.schema_for({})["required"]
        ('agui:refund', ['approved'])
    """

    kind: Interrupt[P, R]
    response_schema: Mapping[str, Any] | Callable[[P], Mapping[str, Any]] | None = attrs.field(
        default=None, kw_only=True, repr=False
    )
    interrupt: Interrupt[P, dict[str, Any]] = attrs.field(init=False, repr=False, eq=False)
    _static_schema: Mapping[str, Any] | None = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        name = PREFIX + self.kind.name
        if len(name) > _MAX_NAME:
            msg = f"the kind's name is too long to be prefixed with {PREFIX!r} (128 at most)"
            raise ConfigurationError(msg)
        wrapped: Interrupt[P, dict[str, Any]] = Interrupt(
            name,
            payload=self.kind.payload,
            response=dict,
            validate=self._validate,
            cross_scope=self.kind.cross_scope,
            converter=self.kind.converter,
        )
        object.__setattr__(self, "interrupt", wrapped)
        static: Mapping[str, Any] | None = None
        if self.response_schema is None and self.kind not in (APPROVAL, QUESTION):
            static = {"$schema": _DRAFT, **type_schema(self.kind.response)}
        object.__setattr__(self, "_static_schema", static)

    @property
    def name(self) -> str:
        """The name tokens of this kind carry (``"agui:" + kind.name``)."""
        return self.interrupt.name

    def schema_for(self, payload: P) -> dict[str, Any]:
        """The JSON Schema of the answer to a pause showing ``payload``."""
        given = self.response_schema
        if callable(given):
            return dict(given(payload))
        if given is not None:
            return dict(given)
        if self._static_schema is not None:
            return dict(self._static_schema)
        written = kind_schema(self.kind, payload)
        if written is None:  # pragma: no cover - the ready-made kinds always have one
            return {"$schema": _DRAFT, **type_schema(self.kind.response)}
        return written

    def envelope(self, status: str, payload: Any) -> dict[str, Any]:
        """The answer a token's redemption binds: the status and the answer as JSON.

        A resolved payload is read into the response type and written back as JSON, so
        two spellings of one answer are one answer.

        Raises:
            InvalidResponse: an unknown status, a cancellation with a payload, or a payload
                that does not fit the response type (``field`` names where).
        """
        if status not in _STATUSES:
            msg = "the resume entry's status is neither resolved nor cancelled"
            raise InvalidResponse(msg, field="$.status")
        if status == "cancelled":
            if payload is not None:
                msg = "a cancelled resume entry carries no payload"
                raise InvalidResponse(msg, field="$.payload")
            return {"status": "cancelled", "payload": None}
        typed = self.kind.structure_response(payload)
        return {"status": "resolved", "payload": self.kind.to_json(typed)}

    def answer_of(self, envelope: Mapping[str, Any]) -> R | None:
        """The typed answer an envelope holds (``None`` for a cancellation)."""
        if envelope["status"] == "cancelled":
            return None
        return self.kind.structure_response(envelope["payload"])

    def _validate(self, response: dict[str, Any], payload: P) -> None:
        """The registered interrupt's validator: the envelope, then the kind's own rules."""
        if set(response) != {"status", "payload"}:
            msg = "the answer is not a resume entry's status and payload"
            raise InvalidResponse(msg, field="$")
        checked = self.envelope(response["status"], response["payload"])
        typed = self.answer_of(checked)
        if typed is not None and self.kind.validate is not None:
            self.kind.validate(typed, payload)
