"""Canonical hashing of payloads and scopes (sha256 over RFC 8785 JSON)."""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import json
import json.encoder
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import rfc8785

from pausetoken.exceptions import UnsupportedPayload

if TYPE_CHECKING:
    from collections.abc import Callable

    import cattrs


__all__ = ["canonical_json", "fingerprint", "hash_payload", "to_json_value"]

#: Largest integer magnitude that every JSON implementation represents exactly (I-JSON).
MAX_SAFE_INTEGER = 2**53 - 1
#: Deepest nesting accepted in a payload; deeper structures are refused, not recursed into.
MAX_DEPTH = 64

JSONValue = None | bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"]


def _refuse(path: str, why: str) -> UnsupportedPayload:
    return UnsupportedPayload(f"payload at {path} cannot be hashed: {why}")


def to_json_value(  # noqa: C901, PLR0911, PLR0912 - one flat dispatch reads best
    obj: Any, *, converter: cattrs.Converter | None = None, _path: str = "$", _depth: int = 0
) -> JSONValue:
    """Turn ``obj`` into plain JSON values, refusing anything JSON cannot carry exactly.

    attrs classes and dataclasses are unstructured with cattrs, pydantic models with
    ``model_dump(mode="json")``, enums become their values, tuples become lists.

    Args:
        obj: The value to convert.
        converter: The cattrs converter to unstructure attrs classes and dataclasses with.

    Returns:
        A tree of ``dict``/``list``/``str``/``int``/``float``/``bool``/``None``.

    Raises:
        UnsupportedPayload: NaN or infinite floats, integers beyond 2**53 - 1, bytes, sets,
            non-string mapping keys, unknown types (classes that cannot be hashed
            included), or nesting deeper than 64 levels.
    """
    if _depth > MAX_DEPTH:
        raise _refuse(_path, f"nested deeper than {MAX_DEPTH} levels")
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    # The built-in containers next: each would reach its branch below after the checks for
    # enums, numbers, bytes and sets, which it never is.
    if type(obj) is dict:
        return _from_mapping(obj, converter, _path, _depth)
    if type(obj) is list:
        return _from_list(obj, converter, _path, _depth)
    if not _hashable(type(obj)):
        # Its class (of a metaclass with __eq__ and no __hash__) cannot be looked up in
        # the caches of the ABC checks below nor in the converter's dispatch.
        raise _refuse(_path, f"values of type {type(obj).__name__} are not supported")
    if isinstance(obj, enum.Enum):
        return to_json_value(obj.value, converter=converter, _path=_path, _depth=_depth + 1)
    if isinstance(obj, int):
        if abs(obj) > MAX_SAFE_INTEGER:
            raise _refuse(_path, "integers beyond 2**53 - 1 are not exact in JSON")
        return int(obj)
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise _refuse(_path, "NaN and infinities have no JSON form")
        return float(obj)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        raise _refuse(_path, "bytes have no JSON form; encode them (base64) first")
    if isinstance(obj, (set, frozenset)):
        raise _refuse(_path, "sets have no order; use a sorted list")
    if isinstance(obj, Mapping):
        return _from_mapping(obj, converter, _path, _depth)
    if isinstance(obj, (list, tuple)):
        return _from_list(obj, converter, _path, _depth)
    if _is_instance(obj):
        return to_json_value(
            _unstructure(obj, converter, _path), converter=converter, _path=_path, _depth=_depth + 1
        )
    if isinstance(obj, Sequence):
        raise _refuse(_path, f"{type(obj).__name__} is not a list or tuple")
    raise _refuse(_path, f"values of type {type(obj).__name__} are not supported")


def _from_mapping(
    obj: Mapping[Any, Any], converter: cattrs.Converter | None, path: str, depth: int
) -> dict[str, JSONValue]:
    out: dict[str, JSONValue] = {}
    for key, value in obj.items():
        if not isinstance(key, str):
            raise _refuse(path, "mapping keys must be strings")
        out[key] = to_json_value(
            value, converter=converter, _path=f"{path}.{key}", _depth=depth + 1
        )
    return out


def _from_list(
    obj: list[Any] | tuple[Any, ...], converter: cattrs.Converter | None, path: str, depth: int
) -> list[JSONValue]:
    return [
        to_json_value(item, converter=converter, _path=f"{path}[{i}]", _depth=depth + 1)
        for i, item in enumerate(obj)
    ]


# What `to_json_value()` reads as a value of its own before it looks for a record's fields:
# a record that is also one of these (an attrs class deriving from int) is read as that.
_READ_BEFORE_FIELDS = (
    str,
    bool,
    dict,
    list,
    enum.Enum,
    int,
    float,
    bytes,
    bytearray,
    memoryview,
    set,
    frozenset,
    Mapping,
    tuple,
)


# Asked of every record hashed: an isinstance() test against the ABCs in that tuple costs
# more than the answer cached per type.
@functools.lru_cache(maxsize=256)
def _reads_as_value(kind: Any) -> bool:
    """Whether instances of ``kind`` are one of `_READ_BEFORE_FIELDS`."""
    return issubclass(kind, _READ_BEFORE_FIELDS)


def _hashable(kind: type) -> bool:
    try:
        hash(kind)
    except TypeError:
        return False
    return True


def _is_instance(obj: Any) -> bool:
    """Whether ``obj`` is an instance the converter unstructures (attrs, dataclass, pydantic)."""
    return attrs.has(type(obj)) or dataclasses.is_dataclass(obj) or _is_pydantic(obj)


def _unstructure(obj: Any, converter: cattrs.Converter | None, path: str = "$") -> Any:
    if converter is None:
        # Imported here: Scope hashes plain strings, and `import pausetoken` stays free of
        # cattrs' converters until a payload is a class instance.
        from pausetoken._structure import default_converter  # noqa: PLC0415

        converter = default_converter
    try:
        return converter.unstructure(obj)
    except TypeError as exc:
        # A field holding a value the converter cannot dispatch on (see `_hashable`).
        raise _refuse(path, f"a {type(obj).__name__} could not be unstructured") from exc


def _is_pydantic(obj: Any) -> bool:
    return callable(getattr(type(obj), "model_dump", None)) and callable(
        getattr(type(obj), "model_validate", None)
    )


def _needs_full_encoder(value: JSONValue) -> bool:
    """Whether ``json.dumps`` could differ from RFC 8785 for ``value``.

    They agree on strings, integers, literals and the escaping of control characters. They
    differ on floats (ECMAScript number formatting) and on the order of keys holding
    characters beyond U+FFFF (RFC 8785 sorts by UTF-16 code units, Python by code points).
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            return True
        if isinstance(item, dict):
            if any(not key.isascii() and max(key) > "\uffff" for key in item):
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _not_plain(obj: Any) -> Any:
    # Never called: only plain JSON reaches the encoder.
    msg = f"{type(obj).__name__} is not plain JSON"
    raise TypeError(msg)


# What json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False) writes.
# CPython's C encoder is built once here: json.dumps builds one on every call, which costs
# more than encoding a small payload. It checks no cycles (``markers`` is None): the values
# it is given are plain JSON at most MAX_DEPTH deep, or came out of `to_json_value()`,
# which refuses deeper nesting.
_C_ENCODER: Callable[[Any, int], Any] | None
try:
    from _json import make_encoder
except ImportError:  # pragma: no cover - an interpreter without CPython's _json
    _C_ENCODER = None
else:
    # markers, default, encoder, indent, key and item separators, sort_keys, skipkeys,
    # allow_nan: the C type takes them by position only.
    _C_ENCODER = make_encoder(
        *(None, _not_plain, json.encoder.encode_basestring, None, ":", ",", True, False, False)
    )
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _encode(value: JSONValue) -> bytes:
    if _C_ENCODER is None:  # pragma: no cover - an interpreter without CPython's _json
        return _ENCODER.encode(value).encode("utf-8")
    return "".join(_C_ENCODER(value, 0)).encode("utf-8")


def _plain(obj: Any, depth: int = 0) -> bool:  # noqa: PLR0911 - one flat dispatch
    """Whether ``obj`` is plain JSON that json.dumps writes exactly as RFC 8785 does.

    Plain means `to_json_value()` would return an equal copy and `_needs_full_encoder()`
    would be false. Only the exact built-in types count (``dict`` with ``str`` keys,
    ``list``, ``str``, ``int`` within 2**53 - 1, ``bool``, ``None``) at most `MAX_DEPTH`
    levels deep (``obj`` itself at ``depth``); anything else, floats included, takes the
    full path, which converts or refuses it.
    """
    kind = type(obj)
    # Compared, not looked up in a set: a class that cannot be hashed must reach the full
    # path, which refuses it.
    if kind is str or kind is bool or obj is None:
        return depth <= MAX_DEPTH
    if kind is int:
        return depth <= MAX_DEPTH and -MAX_SAFE_INTEGER <= obj <= MAX_SAFE_INTEGER
    if kind is dict:
        children: Any = obj.values()
        for key in obj:
            if type(key) is not str or (not key.isascii() and max(key) > "\uffff"):
                return False
    elif kind is list:
        children = obj
    else:
        return False
    if depth >= MAX_DEPTH:
        # The children would be deeper than the limit.
        return depth == MAX_DEPTH and not obj
    # Strings, the commonest leaf, without a call; a loop, as a generator costs more.
    for child in children:  # noqa: SIM110
        if type(child) is not str and not _plain(child, depth + 1):
            return False
    return True


def _json_value(obj: Any, converter: cattrs.Converter | None) -> tuple[JSONValue, bool]:
    """``obj`` as `to_json_value()` converts it, and whether it is plain (`_plain()`).

    Plain data is returned as it is, and so is what a record unstructures to when that is
    plain: converting either would only copy it. Only for encoding: never handed out.
    """
    if _plain(obj):
        return obj, True
    kind: Any = type(obj)
    if not _is_instance(obj) or not _hashable(kind) or _reads_as_value(kind):
        return to_json_value(obj, converter=converter), False
    # What `to_json_value()` does with a record: its fields, one level down.
    value = _unstructure(obj, converter)
    if _plain(value, 1):
        return value, True
    return to_json_value(value, converter=converter, _depth=1), False


def canonical_json(obj: Any, *, converter: cattrs.Converter | None = None) -> bytes:
    """Encode ``obj`` as RFC 8785 canonical JSON (the bytes that are hashed).

    Raises:
        UnsupportedPayload: as `to_json_value()`, and for strings that are not valid
            Unicode (lone surrogates).
    """
    # Plain JSON data (what a checkpoint or a converter hands over) is encoded as it is.
    value, plain = _json_value(obj, converter)
    try:
        if not plain and _needs_full_encoder(value):
            return rfc8785.dumps(value)
        # The common case (no floats): the C encoder writes exactly RFC 8785's bytes.
        return _encode(value)
    except (rfc8785.CanonicalizationError, ValueError, TypeError) as exc:
        msg = "payload cannot be encoded as canonical JSON"
        raise UnsupportedPayload(msg) from exc


def hash_payload(obj: Any, *, converter: cattrs.Converter | None = None) -> str:
    """Hash a payload: sha256 hex of its RFC 8785 canonical JSON.

    Equal content hashes equal whether it is given as an attrs instance, a dataclass, a
    pydantic model or a dict, and whatever the key order.

    Examples:
        >>> hash_payload({"b": 1, "a": [1.0, "x"]}) == hash_payload({"a": [1, "x"], "b": 1})
        True

    Raises:
        UnsupportedPayload: if the payload cannot be represented exactly as JSON.
    """
    return hashlib.sha256(canonical_json(obj, converter=converter)).hexdigest()


@functools.lru_cache(maxsize=4096)
def fingerprint(token: str) -> str:
    """A short, non-reversible label for a token or ``jti``, safe for reprs and logs."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()[:12]
