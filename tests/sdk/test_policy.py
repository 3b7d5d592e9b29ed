"""Every default and range is one rule, applied alike by every constructor that takes it."""

from __future__ import annotations

import typing
import warnings
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import attrs
import pytest

from pausetoken import (
    JoseSigner,
    KeyRing,
    MemoryCheckpoints,
    MemoryStore,
    MemoryStoreWarning,
    PauseTokens,
    Settings,
    TokenPolicy,
)
from pausetoken._policy import PolicyKeywords, ServicePolicy
from pausetoken.exceptions import ConfigurationError

if TYPE_CHECKING:
    from collections.abc import Callable

KEYS = KeyRing.generate()

OUT_OF_RANGE: dict[str, object] = {
    "leeway": timedelta(minutes=6),
    "max_lifetime": timedelta(days=31),
    "max_token_bytes": 100,
    "issuer": " ",
    "audience": "x" * 513,
}


def _policy(**value: Any) -> object:
    return TokenPolicy(**value)


def _settings(**value: Any) -> object:
    return Settings(store_url="memory://", keys=KEYS, **value)


def _service(**value: Any) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        store = MemoryStore()
    return PauseTokens(
        signer=JoseSigner(KEYS), store=store, checkpoints=MemoryCheckpoints(), **value
    )


BUILDERS: dict[str, tuple[Callable[..., object], str]] = {
    "TokenPolicy": (_policy, "policy_invalid"),
    "Settings": (_settings, "settings_invalid"),
    "PauseTokens": (_service, "policy_invalid"),
}


@pytest.mark.parametrize("builder", BUILDERS)
@pytest.mark.parametrize(("name", "value"), OUT_OF_RANGE.items())
def test_every_constructor_refuses_the_same_out_of_range_value(
    builder: str, name: str, value: object
) -> None:
    build, code = BUILDERS[builder]
    with pytest.raises(ConfigurationError) as caught:
        build(**{name: value})
    assert caught.value.code == code
    assert name in str(caught.value)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("leeway", timedelta(minutes=5)),
        ("max_lifetime", timedelta(days=30)),
        ("max_token_bytes", 65536),
        ("issuer", "x" * 512),
    ],
)
@pytest.mark.parametrize("builder", BUILDERS)
def test_every_constructor_accepts_the_same_bounds(builder: str, name: str, value: object) -> None:
    build, _ = BUILDERS[builder]
    build(**{name: value})


def test_the_defaults_are_the_same_everywhere() -> None:
    settings = Settings(store_url="memory://", keys=KEYS)
    service = _service()
    assert settings.policy == TokenPolicy() == service.policy  # type: ignore[attr-defined]


async def test_a_service_from_settings_keeps_their_policy() -> None:
    settings = Settings(
        store_url="memory://",
        keys=KEYS,
        issuer="billing",
        ttl=timedelta(hours=1),
        lease=timedelta(seconds=5),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        service = PauseTokens.from_settings(settings)
    async with service:
        assert (service.policy, service.ttl, service.lease) == (
            settings.policy,
            timedelta(hours=1),
            timedelta(seconds=5),
        )


def test_an_unknown_policy_keyword_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match="tll"):
        _service(tll=timedelta(hours=1))


def test_settings_take_the_policy_by_keyword_only() -> None:
    with pytest.raises(TypeError):
        Settings("billing", store_url="memory://", keys=KEYS)  # type: ignore[misc]


def test_the_policy_keywords_type_checkers_see_are_the_service_policys_fields() -> None:
    # PauseTokens(**policy) is typed by PolicyKeywords; it must never drift from the fields.
    fields = [field.name for field in attrs.fields(ServicePolicy)]
    declared = typing.get_type_hints(ServicePolicy)
    assert typing.get_type_hints(PolicyKeywords) == {name: declared[name] for name in fields}
    assert PolicyKeywords.__required_keys__ == frozenset()
