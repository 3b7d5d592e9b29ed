"""The JSON Schema of an interrupt's answer: what AG-UI's ``Interrupt.responseSchema`` carries."""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Union, get_args, get_origin

import attrs

from pausetoken.exceptions import ConfigurationError
from pausetoken.kinds import APPROVAL, QUESTION, Approval, Questions

__all__ = ["approval_schema", "questions_schema", "type_schema"]

_DRAFT: dict[str, str] = {"$schema": "https://json-schema.org/draft/2020-12/schema"}


def approval_schema(approval: Approval) -> dict[str, Any]:
    """The answer to one [`APPROVAL`][pausetoken.kinds.APPROVAL]: one decision it allows.

    Written from the payload, so the schema names exactly the decisions the person may make
    and an edit's tool name; `pausetoken.kinds.check_decision` enforces the same rules.

    Examples:
        >>> from pausetoken.kinds import Action
        >>> schema = approval_schema(Approval(Action("refund", {}), ("approve", "reject")))
        >>> [choice["properties"]["type"]["const"] for choice in schema["oneOf"]]
        ['approve', 'reject']
    """
    shapes: dict[str, dict[str, Any]] = {
        "approve": {"properties": {}, "required": []},
        "edit": {
            "properties": {
                "edited_action": {
                    "type": "object",
                    "properties": {
                        "name": {"const": approval.action.name},
                        "args": {"type": "object"},
                    },
                    "required": ["name", "args"],
                    "additionalProperties": False,
                }
            },
            "required": ["edited_action"],
        },
        "reject": {"properties": {"message": {"type": "string"}}, "required": []},
        "respond": {"properties": {"message": {"type": "string"}}, "required": ["message"]},
    }
    choices = [
        {
            "type": "object",
            "properties": {"type": {"const": kind}, **shapes[kind]["properties"]},
            "required": ["type", *shapes[kind]["required"]],
            "additionalProperties": False,
        }
        for kind in approval.allowed_decisions
    ]
    return {**_DRAFT, "oneOf": choices}


def questions_schema(questions: Questions) -> dict[str, Any]:
    """The answer to a [`QUESTION`][pausetoken.kinds.QUESTION]: one answer per question asked.

    Each answer names its question by id and selects among that question's option labels;
    ``other`` is offered only where the question allows it.
    """
    answers: list[dict[str, Any]] = []
    for question in questions.questions:
        properties: dict[str, Any] = {
            "question_id": {"const": question.id},
            "selected": {
                "type": "array",
                "items": {"enum": [option.label for option in question.options]},
                "uniqueItems": True,
                **({} if question.multi_select else {"maxItems": 1}),
            },
        }
        if question.allow_other:
            properties["other"] = {"type": ["string", "null"]}
        answers.append(
            {
                "type": "object",
                "properties": properties,
                "required": ["question_id"],
                "additionalProperties": False,
            }
        )
    return {
        **_DRAFT,
        "type": "object",
        "properties": {
            "answers": {
                "type": "array",
                "prefixItems": answers,
                "items": False,
                "minItems": len(answers),
            }
        },
        "required": ["answers"],
        "additionalProperties": False,
    }


def kind_schema(kind: Any, payload: Any) -> dict[str, Any] | None:
    """The schema of the ready-made kinds, written from their payload; ``None`` for others."""
    if kind is APPROVAL and isinstance(payload, Approval):
        return approval_schema(payload)
    if kind is QUESTION and isinstance(payload, Questions):
        return questions_schema(payload)
    return None


def type_schema(tp: Any) -> dict[str, Any]:
    """A JSON Schema for values of ``tp`` as pausetoken's strict converter reads them.

    attrs classes are described field by field (no other member is accepted, as the strict
    converter refuses extra keys); sequences, unions, literals and mappings by their
    arguments; everything else (dataclasses, TypedDicts, pydantic models, plain types) by
    pydantic's ``TypeAdapter``.

    Raises:
        ConfigurationError: no schema can be written for the type.

    Examples:
        >>> type_schema(tuple[int, ...])
        {'type': 'array', 'items': {'type': 'integer'}}
    """
    try:
        return _schema(tp)
    except ConfigurationError:
        raise
    except Exception as exc:
        msg = (
            f"no JSON Schema can be written for the answer type ({type(exc).__name__}): "
            "give Resumable(..., response_schema=...)"
        )
        raise ConfigurationError(msg) from exc


def _attrs_schema(tp: type) -> dict[str, Any]:
    """An attrs class, field by field, by the names its ``__init__`` takes."""
    attrs.resolve_types(tp)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for field in attrs.fields(tp):
        if not field.init:
            continue
        properties[field.alias] = _schema(field.type)
        if field.default is attrs.NOTHING:
            required.append(field.alias)
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _schema(tp: Any) -> dict[str, Any]:  # noqa: PLR0911 - one return per shape of type
    if tp is Any:
        return {}
    if isinstance(tp, type) and attrs.has(tp):
        return _attrs_schema(tp)
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        return {"enum": list(args)}
    if origin is Union or origin is types.UnionType:
        return {"anyOf": [_schema(arg) for arg in args]}
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:  # noqa: PLR2004
        return {"type": "array", "items": _schema(args[0])}
    if origin is tuple and args:
        items = [_schema(arg) for arg in args]
        return {"type": "array", "prefixItems": items, "items": False, "minItems": len(items)}
    if isinstance(origin, type) and issubclass(origin, Mapping) and len(args) == 2:  # noqa: PLR2004
        return {"type": "object", "additionalProperties": _schema(args[1])}
    if (
        isinstance(origin, type)
        and issubclass(origin, Sequence)
        and not issubclass(origin, str)
        and len(args) == 1
    ):
        return {"type": "array", "items": _schema(args[0])}
    from pydantic import TypeAdapter  # noqa: PLC0415 - only for types written above

    schema: dict[str, Any] = TypeAdapter(tp).json_schema()
    return schema
