"""Canonical hashing: RFC 8785 bytes, stable across types, key order and processes."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import subprocess
import sys
import types
from typing import Any, NoReturn

import attrs
import pydantic
import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from pausetoken import PendingInterrupt, Scope, canonical_json, hash_payload, hash_scope
from pausetoken import _hashing as hashing
from pausetoken._hashing import MAX_DEPTH, to_json_value
from pausetoken.exceptions import UnsupportedPayload
from pausetoken.testing import strategies as pst
from scaffolding import Opaque


@given(pst.json_objects(), st.randoms())
def test_hash_does_not_depend_on_key_order(payload: dict[str, Any], random: Any) -> None:
    items = list(payload.items())
    random.shuffle(items)
    assert hash_payload(dict(items)) == hash_payload(payload)


@attrs.frozen
class AttrsRefund:
    amount_cents: int
    reason: str
    tags: list[str]


@dataclasses.dataclass(frozen=True)
class DataclassRefund:
    amount_cents: int
    reason: str
    tags: list[str]


class PydanticRefund(pydantic.BaseModel):
    amount_cents: int
    reason: str
    tags: list[str]


@given(
    pst.safe_integers(),
    st.text(),
    st.lists(st.text(max_size=5), max_size=4),
)
def test_equal_content_hashes_equal_whatever_its_type(
    amount: int, reason: str, tags: list[str]
) -> None:
    as_dict = {"tags": tags, "reason": reason, "amount_cents": amount}
    expected = hash_payload(as_dict)
    assert hash_payload(AttrsRefund(amount, reason, tags)) == expected
    assert hash_payload(DataclassRefund(amount, reason, tags)) == expected
    assert hash_payload(PydanticRefund(amount_cents=amount, reason=reason, tags=tags)) == expected
    assert hash_payload({**as_dict, "tags": tuple(tags)}) == expected


@pytest.mark.slow
def test_hash_is_the_same_in_another_process_with_another_hash_seed() -> None:
    payload = {"b": [1, 2.5, "x", None, True], "a": {"z": "€", "y": -0.0}, "c": 10**15}
    code = (
        "import json, sys; from pausetoken import hash_payload; "
        "print(hash_payload(json.loads(sys.argv[1])))"
    )
    seen = set()
    for seed in ("1", "2", "12345"):
        out = subprocess.run(
            [sys.executable, "-c", code, json.dumps(payload)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        seen.add(out.stdout.strip())
    assert seen == {hash_payload(payload)}


def test_rfc8785_published_number_and_string_example() -> None:
    # RFC 8785 section 3.2.2
    value = {
        "numbers": [333333333.33333329, 1e30, 4.50, 2e-3, 0.000000000000000000000000001],
        "string": "\u20ac$\u000f\u000aA'\u0042\u0022\u005c\\\"/",
        "literals": [None, True, False],
    }
    expected = (
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    ).encode()
    assert canonical_json(value) == expected
    assert hash_payload(value) == hashlib.sha256(expected).hexdigest()


def test_rfc8785_published_key_sorting_example() -> None:
    # RFC 8785 section 3.2.3: keys sort by UTF-16 code units, not code points.
    value = {
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\U0001f600": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis",
    }
    order = [json.loads(f"[{part}]")[0] for part in _keys_in_order(canonical_json(value))]
    assert order == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]


def _keys_in_order(encoded: bytes) -> list[str]:
    decoded = json.loads(encoded, object_pairs_hook=lambda pairs: [k for k, _ in pairs])
    return [json.dumps(key) for key in decoded]


def test_negative_zero_and_integral_floats_hash_like_json_numbers() -> None:
    assert hash_payload({"x": -0.0}) == hash_payload({"x": 0})
    assert hash_payload([1.0, 2]) == hash_payload([1, 2.0])


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (math.nan, "NaN"),
        (math.inf, "NaN and infinities"),
        ({"x": -math.inf}, "NaN and infinities"),
        (b"raw", "bytes"),
        ({"x": bytearray(b"raw")}, "bytes"),
        ({1, 2}, "sets"),
        ({"x": frozenset()}, "sets"),
        (2**53, "integers beyond"),
        ([-(2**53)], "integers beyond"),
        ({1: "x"}, "keys must be strings"),
        (object(), "not supported"),
        (Opaque(), "not supported"),
        ({"x": [Opaque()]}, "not supported"),
    ],
)
def test_values_json_cannot_carry_exactly_are_refused(payload: Any, why: str) -> None:
    with pytest.raises(UnsupportedPayload, match=why) as caught:
        hash_payload(payload)
    assert caught.value.code == "unsupported_payload"
    assert isinstance(caught.value, ValueError)


def test_refusal_names_the_path_but_not_the_value() -> None:
    with pytest.raises(UnsupportedPayload) as caught:
        hash_payload({"card": {"secret": b"4111 1111"}})
    assert "$.card.secret" in caught.value.detail
    assert "4111" not in str(caught.value)


def test_deep_nesting_is_refused_not_recursed_into() -> None:
    payload: Any = "leaf"
    for _ in range(5000):
        payload = [payload]
    with pytest.raises(UnsupportedPayload, match="nested deeper"):
        hash_payload(payload)


def test_largest_safe_integers_are_accepted() -> None:
    assert hash_payload(2**53 - 1) != hash_payload(-(2**53 - 1))


scope_text = st.text(alphabet=st.sampled_from("ab:_|\x00 "), max_size=6)
scopes = st.builds(
    Scope,
    tenant_id=scope_text.filter(bool),
    sub_tenant_id=st.none() | scope_text,
    namespace=st.none() | scope_text,
)


@given(scopes, scopes)
def test_distinct_scopes_never_share_a_hash(one: Scope, other: Scope) -> None:
    assert (hash_scope(one) == hash_scope(other)) == (one == other)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (Scope("a:b", "c"), Scope("a", "b:c")),
        (Scope("a_b"), Scope("a", "b")),
        (Scope("a", None), Scope("a", "")),
        (Scope("a", namespace="x"), Scope("a", sub_tenant_id="x")),
    ],
)
def test_delimiter_lookalike_scopes_hash_apart(one: Scope, other: Scope) -> None:
    assert hash_scope(one) != hash_scope(other)


def test_scope_hash_is_a_full_sha256() -> None:
    digest = hash_scope(Scope("acme"))
    assert len(digest) == 64
    assert int(digest, 16) >= 0


@given(pst.payloads())
def test_canonical_bytes_are_exactly_rfc8785s(value: Any) -> None:
    # The encoder takes a fast path for float-free values; it must never differ.
    assert canonical_json(value) == rfc8785.dumps(value)


@given(st.dictionaries(st.text(), st.text() | pst.safe_integers(), max_size=6))
def test_canonical_bytes_match_rfc8785_for_any_unicode_keys(value: dict[str, Any]) -> None:
    assert canonical_json(value) == rfc8785.dumps(value)


def test_lone_surrogates_are_refused() -> None:
    with pytest.raises(UnsupportedPayload):
        hash_payload({"x": "\ud800"})


# -- plain JSON data is encoded without being converted first ------------------------------------


def _full_path(value: Any) -> bytes:
    """The reference encoding: convert, then RFC 8785's own encoder, errors as canonical_json's."""
    converted = to_json_value(value)
    try:
        return rfc8785.dumps(converted)
    except (rfc8785.CanonicalizationError, ValueError, TypeError) as exc:
        msg = "payload cannot be encoded as canonical JSON"
        raise UnsupportedPayload(msg) from exc


def _encoded(encode: Any, value: Any) -> tuple[str, object]:
    try:
        return "encoded", encode(value)
    except UnsupportedPayload as exc:
        return "refused", exc.detail


class _Text(str):
    __slots__ = ()


_awkward_text = st.text(max_size=8) | st.text(
    st.characters(min_codepoint=0xD7F0, max_codepoint=0x1F680), max_size=4
)
_anything = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.floats()
    | _awkward_text
    | _awkward_text.map(_Text)
    | st.binary(max_size=3),
    lambda children: (
        st.lists(children, max_size=4)
        | st.lists(children, max_size=4).map(tuple)
        | st.dictionaries(_awkward_text | st.integers(0, 3), children, max_size=4)
    ),
    max_leaves=12,
)


@given(_anything)
def test_the_plain_json_fast_path_encodes_and_refuses_as_the_full_path(value: Any) -> None:
    assert _encoded(canonical_json, value) == _encoded(_full_path, value)


@pytest.mark.parametrize("depth", [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 2])
@pytest.mark.parametrize("leaf", ["leaf", 1, 1.5, [], {}])
def test_the_fast_path_keeps_the_depth_limit(depth: int, leaf: Any) -> None:
    value: Any = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    assert _encoded(canonical_json, value) == _encoded(_full_path, value)


@attrs.frozen
class _Holder:
    value: Any


@dataclasses.dataclass
class _DataHolder:
    value: Any


@given(_anything, st.sampled_from([_Holder, _DataHolder]))
def test_an_instance_is_encoded_and_refused_as_the_full_path(value: Any, holder: Any) -> None:
    # An instance whose fields unstructure to plain JSON is encoded without a converted
    # copy; it must give the same bytes and refusals as converting it first.
    assert _encoded(canonical_json, holder(value)) == _encoded(_full_path, holder(value))


@attrs.define
class _MappingRecord(dict):  # type: ignore[type-arg]
    field: int = 0


@dataclasses.dataclass(frozen=True)
class _IntRecord(int):
    field: str = ""


def _filled(record: _MappingRecord) -> _MappingRecord:
    record["a"] = 2
    return record


@pytest.mark.parametrize(
    "value",
    [_MappingRecord(field=1), _filled(_MappingRecord(field=1)), _IntRecord(7)],
    ids=["attrs dict, empty", "attrs dict", "dataclass int"],
)
def test_a_record_that_is_also_a_builtin_is_encoded_as_the_full_path(value: Any) -> None:
    # The full path reads a mapping's items and an int's value before it looks for fields.
    assert _encoded(canonical_json, value) == _encoded(_full_path, value)


@pytest.mark.parametrize("depth", [MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1])
@pytest.mark.parametrize("leaf", ["leaf", 1, [], {}])
def test_an_instance_counts_as_one_level_of_nesting(depth: int, leaf: Any) -> None:
    value: Any = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    assert _encoded(canonical_json, _Holder(value)) == _encoded(_full_path, _Holder(value))


def test_plain_json_is_encoded_without_conversion(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_conversion(*_args: object, **_kwargs: object) -> NoReturn:
        raise AssertionError

    value = {"b": [1, "é", None, True, {"ключ": 2**53 - 1}], "a": ""}
    expected = rfc8785.dumps(value)
    monkeypatch.setattr(hashing, "to_json_value", no_conversion)
    assert canonical_json(value) == expected


def _disguised(value: Any) -> Any:
    """``value`` with every dict a read-only mapping and every list a tuple."""
    if type(value) is dict:
        return types.MappingProxyType({key: _disguised(item) for key, item in value.items()})
    if type(value) is list:
        return tuple(_disguised(item) for item in value)
    return value


def _converted(value: Any) -> tuple[str, object]:
    try:
        return "converted", to_json_value(value)
    except UnsupportedPayload as exc:
        return "refused", exc.detail


@given(_anything)
def test_dicts_and_lists_convert_as_any_other_mapping_and_sequence(value: Any) -> None:
    assert _converted(value) == _converted(_disguised(value))


def test_refusals_inside_lists_and_dicts_name_the_path() -> None:
    with pytest.raises(UnsupportedPayload) as caught:
        to_json_value({"a": [1, {"b": [None, float("nan")]}]})
    assert "$.a[1].b[1]" in caught.value.detail


# -- a payload the reader keeps as canonical JSON --------------------------------------------


@given(pst.payloads())
def test_a_pause_read_from_canonical_json_hashes_as_its_payload(value: Any) -> None:
    encoded = canonical_json(value)
    pending = PendingInterrupt.from_canonical_json("t", "c", "i", encoded)
    assert pending.value == json.loads(encoded)
    # Equal to the payload's own hash, even where the decoded value could not be hashed
    # again (a float of 2**53 decodes as an integer beyond the exact range).
    assert pending.value_hash == hash_payload(value)


def _read(read: Any, raw: bytes) -> tuple[str, str]:
    try:
        return "read", repr(read(raw))
    except ValueError as exc:
        return "refused", type(exc).__name__


_json_ish = st.one_of(
    st.binary(max_size=12),
    st.tuples(
        st.sampled_from([b"", b" ", b"\n", b"\xef\xbb\xbf", b"x"]),
        pst.payloads().map(canonical_json),
        st.sampled_from([b"", b" ", b"\t\n", b"}", b"1", b"\xff"]),
    ).map(b"".join),
)


def _pending_value(raw: bytes) -> Any:
    return PendingInterrupt.from_canonical_json("t", "c", "i", raw).value


@given(_json_ish)
def test_a_pause_reads_any_bytes_as_json_loads_does(raw: bytes) -> None:
    # Canonical JSON is decoded without looking for whitespace; anything else, errors
    # included, as json.loads reads it.
    assert _read(_pending_value, raw) == _read(json.loads, raw)


@pytest.mark.parametrize(
    "raw",
    [
        *(b'{"a":1}', b' {"a":1}', b'{"a":1}\n', b'{"a":1}}', b'{"a":1}1', b"\xef\xbb\xbf[1]"),
        *(b'{"a":"\xff"}', b"", b"NaN", b'"x"'),
    ],
)
def test_a_pause_reads_these_bytes_as_json_loads_does(raw: bytes) -> None:
    assert _read(_pending_value, raw) == _read(json.loads, raw)


def test_a_pause_whose_value_was_replaced_hashes_the_new_value() -> None:
    pending = PendingInterrupt.from_canonical_json("t", "c", "i", canonical_json({"amount": 5}))
    swapped = attrs.evolve(pending, value={"amount": 6})
    assert swapped.value_hash == hash_payload({"amount": 6}) != pending.value_hash


def test_bytes_that_are_not_canonical_never_hash_as_the_payload() -> None:
    # Key order, spacing: the hash is of the bytes, so the redemption is refused.
    pending = PendingInterrupt.from_canonical_json("t", "c", "i", b'{"b": 1, "a": 2}')
    assert pending.value_hash != hash_payload({"a": 2, "b": 1})
