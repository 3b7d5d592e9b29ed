"""The cattrs converters pausetoken uses for payloads, responses, claims and settings.

`make_converter()` builds the strict converter. An [`Interrupt`][pausetoken.Interrupt] owns
the converter its payload and response are read and written with (``converter=``), so the
service and LangGraph's ``ask()`` in a node structure an answer the same way; an interrupt
given none uses `default_converter`, which also serves the module-level helpers (hashing,
the CLI). `structure_payload()` and `structure_response()` are the one place where a value
that does not fit its type becomes a typed error naming the field.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import typing
from typing import TYPE_CHECKING, Any, Final

import attrs
import cattrs
from cattrs.cols import (
    homogenous_tuple_structure_factory,
    is_any_set,
    is_frozenset,
    is_mutable_sequence,
    is_sequence,
    list_structure_factory,
)
from cattrs.errors import (
    AttributeValidationNote,
    ForbiddenExtraKeysError,
    IterableValidationError,
    IterableValidationNote,
)
from cattrs.preconf.json import make_converter as _make_json_converter

from pausetoken.exceptions import InvalidResponse, UnsupportedPayload

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = [
    "Mismatch",
    "default_converter",
    "describe_error",
    "make_converter",
    "structure_payload",
    "structure_response",
]

# What structuring user data into a registered type raises when the data does not fit
# (a scalar where a mapping belongs surfaces as AttributeError or TypeError from cattrs'
# generated code; pydantic's ValidationError is a ValueError).
STRUCTURE_ERRORS = (cattrs.BaseValidationError, TypeError, ValueError, KeyError, AttributeError)


class Mismatch(TypeError):
    """A value does not fit its type; the message names the kind only, never the value."""


def _is_pydantic_model(cls: Any) -> bool:
    # Duck-typed so that pydantic stays an optional dependency that is never imported here.
    return (
        isinstance(cls, type)
        and callable(getattr(cls, "model_validate_json", None))
        and callable(getattr(cls, "model_dump", None))
    )


def _is_enum(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, enum.Enum)


def _is_literal(cls: Any) -> bool:
    return typing.get_origin(cls) is typing.Literal


def _strict(kind: type[Any], *, accept: tuple[type[Any], ...] | None = None) -> Any:
    # cattrs coerces by default (bool("no") is True, int("3") is 3); an approval answer must
    # never be coerced into something the person did not say.
    accepted = accept or (kind,)

    def structure(value: Any, _cls: Any) -> Any:
        if isinstance(value, bool) and kind is not bool:
            msg = f"expected {kind.__name__}, got bool"
            raise Mismatch(msg)
        if not isinstance(value, accepted):
            msg = f"expected {kind.__name__}, got {type(value).__name__}"
            raise Mismatch(msg)
        return kind(value)

    return structure


def _same(value: Any, allowed: Any) -> bool:
    # True == 1 == 1.0 in Python; an answer matches an allowed value of its own JSON type only.
    return type(value) is type(allowed) and value == allowed


def _structure_literal(value: Any, cls: Any) -> Any:
    for allowed in typing.get_args(cls):
        if _same(value, allowed):
            return allowed
    msg = "not one of the allowed values"
    raise Mismatch(msg)


def _structure_enum(value: Any, cls: type[enum.Enum]) -> enum.Enum:
    if isinstance(value, cls):
        return value
    for member in cls:
        if _same(value, member.value):
            return member
    msg = f"not one of the values of {cls.__name__}"
    raise Mismatch(msg)


def _structure_pydantic(value: Any, cls: Any) -> Any:
    # Strict JSON-mode validation: "yes" is not True and "5000" is not 5000, while values
    # JSON has no type for (dates, UUIDs) are read from their string forms as usual.
    if isinstance(value, cls):
        value = value.model_dump(mode="json")
    return cls.model_validate_json(json.dumps(value, allow_nan=False), strict=True)


# What a JSON array may arrive as from Python callers; a str, bytes or mapping is iterable too,
# but reading one as a list of its characters or keys would accept what nobody sent.
_ARRAYS: Final = (list, tuple)
_SET_INPUTS: Final = (list, tuple, set, frozenset)


def _is_array_type(kind: Any) -> bool:
    return bool(is_sequence(kind) or is_any_set(kind) or typing.get_origin(kind) is tuple)


def _array_only(
    structure: Callable[[Any, Any], Any], accepted: tuple[type[Any], ...]
) -> Callable[[Any, Any], Any]:
    def guarded(value: Any, kind: Any) -> Any:
        if not isinstance(value, accepted):
            msg = f"expected an array, got {type(value).__name__}"
            raise Mismatch(msg)
        return structure(value, kind)

    return guarded


def _fixed_tuple(kind: Any, converter: cattrs.Converter) -> Callable[[Any, Any], Any]:
    hooks = [converter.get_structure_hook(arg) for arg in typing.get_args(kind)]

    def structure(value: Any, _kind: Any) -> tuple[Any, ...]:
        if len(value) != len(hooks):
            msg = f"expected an array of {len(hooks)} items, got {len(value)}"
            raise Mismatch(msg)
        items: list[Any] = []
        errors: list[Exception] = []
        for index, (item, hook, arg) in enumerate(
            zip(value, hooks, typing.get_args(kind), strict=True)
        ):
            try:
                items.append(hook(item, arg))
            except Exception as exc:  # noqa: BLE001 - gathered, as cattrs does, then raised
                exc.__notes__ = [*getattr(exc, "__notes__", []), _index_note(index, arg)]
                errors.append(exc)
        if errors:
            msg = f"While structuring {kind!r}"
            raise IterableValidationError(msg, errors, kind)
        return tuple(items)

    return structure


def _index_note(index: int, kind: Any) -> IterableValidationNote:
    return IterableValidationNote(f"Structuring item @ index {index}", index, kind)


def _array_factory(kind: Any, converter: cattrs.Converter) -> Callable[[Any, Any], Any]:
    """The structure hook for a list, tuple, sequence or set type that takes arrays only."""
    args = typing.get_args(kind)
    if is_any_set(kind):
        as_list: Any = list[args[0]] if args else list  # type: ignore[valid-type]
        items = list_structure_factory(as_list, converter)
        made = frozenset if is_frozenset(kind) or kind is frozenset else set
        return _array_only(lambda value, _kind: made(items(list(value), as_list)), _SET_INPUTS)
    if typing.get_origin(kind) is tuple and args and args[-1] is not Ellipsis:
        return _array_only(_fixed_tuple(kind, converter), _ARRAYS)
    if is_mutable_sequence(kind):
        return _array_only(list_structure_factory(kind, converter), _ARRAYS)
    return _array_only(homogenous_tuple_structure_factory(kind, converter), _ARRAYS)


def make_converter() -> cattrs.Converter:
    """Build a converter that handles attrs classes, dataclasses, TypedDicts and pydantic.

    Structuring is strict: ``"no"`` is not a ``bool``, ``"3"`` is not an ``int``, ``true``
    and ``1.0`` are not the ``Literal`` or ``Enum`` value ``1``, a list, tuple or set is read
    from an array only (never a string's characters or a mapping's keys), and pydantic models are
    validated in strict mode (from their JSON form). Pydantic models are unstructured with
    ``model_dump(mode="json")``; everything else uses cattrs' own hooks.

    Returns:
        A fresh converter with detailed validation errors turned on.
    """
    converter = _make_json_converter(detailed_validation=True, forbid_extra_keys=True)
    converter.register_structure_hook(str, _strict(str))
    converter.register_structure_hook(bool, _strict(bool))
    converter.register_structure_hook(int, _strict(int))
    converter.register_structure_hook(float, _strict(float, accept=(int, float)))
    converter.register_structure_hook_func(_is_literal, _structure_literal)
    converter.register_structure_hook_func(_is_enum, _structure_enum)
    converter.register_structure_hook_func(_is_pydantic_model, _structure_pydantic)
    converter.register_structure_hook_factory(_is_array_type, _array_factory)
    converter.register_unstructure_hook_func(
        _is_pydantic_model, lambda obj: obj.model_dump(mode="json")
    )
    return converter


def _is_record(kind: Any) -> bool:
    return isinstance(kind, type) and (attrs.has(kind) or dataclasses.is_dataclass(kind))


# Asked on every redemption of the few registered types.
_is_record_type = functools.lru_cache(maxsize=256)(_is_record)


def _structure(value: Any, kind: Any, converter: cattrs.Converter) -> Any:
    try:
        is_record = _is_record_type(kind)
    except TypeError:  # an unhashable type form
        is_record = _is_record(kind)
    if is_record and isinstance(value, kind):
        # Round-trip instances so the same validation applies as to raw data.
        value = converter.unstructure(value)
    return converter.structure(value, kind)


def structure_payload(value: Any, kind: Any, *, converter: cattrs.Converter, name: str) -> Any:
    """Structure a payload into its interrupt's payload type.

    Args:
        value: An instance of ``kind`` or data that structures into it.
        kind: The registered payload type.
        converter: The interrupt's converter.
        name: The interrupt's name, for the message.

    Returns:
        The payload as an instance of ``kind``.

    Raises:
        UnsupportedPayload: the value does not fit (code ``invalid_payload``); the message
            names the field, never the value.
    """
    try:
        return _structure(value, kind, converter)
    except STRUCTURE_ERRORS as exc:
        problem, path = describe_error(exc, kind)
        msg = f"payload does not fit the registered type of {name!r}: {problem} at {path}"
        raise UnsupportedPayload(msg, code=UnsupportedPayload.INVALID_PAYLOAD) from exc


def structure_response(value: Any, kind: Any, *, converter: cattrs.Converter, name: str) -> Any:
    """Structure an answer into its interrupt's response type, as `structure_payload` does.

    Raises:
        InvalidResponse: the value does not fit; ``field`` is the path of the offending
            field (``$.amount_cents``), and the message never quotes the value.
    """
    try:
        return _structure(value, kind, converter)
    except STRUCTURE_ERRORS as exc:
        problem, path = describe_error(exc, kind)
        msg = f"the answer to {name!r} does not fit its response type: {problem} at {path}"
        raise InvalidResponse(msg, field=path) from exc


def describe_error(exc: BaseException, kind: Any) -> tuple[str, str]:
    """What went wrong structuring a value into ``kind``, without the value.

    The description is built from the error's kind and a path of field names of the
    registered type and list positions only: never a submitted value, and never a key the
    submitter chose (mapping keys show as ``[*]``, unknown fields are counted, not named).

    Returns:
        ``(problem, path)``, for example ``("expected int, got str", "$.amount_cents")``.
    """
    path = "$"
    node: BaseException = exc
    while isinstance(node, cattrs.BaseValidationError) and node.exceptions:
        node = node.exceptions[0]
        for note in getattr(node, "__notes__", ()):
            path += _step(note)
    if _is_pydantic_error(node):
        return _describe_pydantic(node, kind, path)
    return _problem(node), path


def _step(note: object) -> str:
    if isinstance(note, AttributeValidationNote):
        return f".{note.name}"
    if isinstance(note, IterableValidationNote):
        positional = isinstance(note.index, int) and not note.startswith("Structuring mapping")
        return f"[{note.index}]" if positional else "[*]"
    return ""


def _problem(error: BaseException) -> str:
    if isinstance(error, Mismatch):
        return str(error)
    if isinstance(error, ForbiddenExtraKeysError):
        count = len(error.extra_fields)
        return f"{count} unknown field{'s' if count != 1 else ''}"
    if isinstance(error, KeyError):
        return "a required field is missing"
    if isinstance(error, AttributeError | TypeError):
        return "a value of the wrong type"
    return "an invalid value"


def _is_pydantic_error(error: BaseException) -> bool:
    return isinstance(error, ValueError) and callable(getattr(error, "errors", None))


def _describe_pydantic(error: Any, kind: Any, path: str) -> tuple[str, str]:
    try:
        first = error.errors(include_url=False, include_input=False, include_context=False)[0]
    except (IndexError, TypeError):
        return "an invalid value", path
    return str(first.get("type", "invalid")), path + _pydantic_path(first.get("loc", ()), kind)


def _pydantic_path(loc: Sequence[object], kind: Any) -> str:
    # Field names are the model's own; anything else a string could be is a submitted key.
    path, model = "", kind
    for part in loc:
        fields = getattr(model, "model_fields", None)
        if isinstance(part, str) and isinstance(fields, dict) and part in fields:
            path += f".{part}"
            annotation = fields[part].annotation
            model = annotation if _is_pydantic_model(annotation) else None
        elif isinstance(part, int):
            path += f"[{part}]"
            model = None
        else:
            path += "[*]"
            model = None
    return path


default_converter = make_converter()
