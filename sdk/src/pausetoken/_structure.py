"""The cattrs converter pausetoken uses for payloads, responses, claims and settings.

One converter per process would be global state; instead :func:`make_converter` builds one
and each :class:`~pausetoken.PauseTokens` service keeps its own. :data:`default_converter`
serves the module-level helpers (hashing, the CLI) that have no service at hand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cattrs.preconf.json import make_converter as _make_json_converter

if TYPE_CHECKING:
    import cattrs


def _is_pydantic_model(cls: Any) -> bool:
    # Duck-typed so that pydantic stays an optional dependency that is never imported here.
    return (
        isinstance(cls, type)
        and callable(getattr(cls, "model_validate", None))
        and callable(getattr(cls, "model_dump", None))
    )


def _strict(kind: type[Any], *, accept: tuple[type[Any], ...] | None = None) -> Any:
    # cattrs coerces by default (bool("no") is True, int("3") is 3); an approval answer must
    # never be coerced into something the person did not say.
    accepted = accept or (kind,)

    def structure(value: Any, _cls: Any) -> Any:
        if isinstance(value, bool) and kind is not bool:
            msg = f"expected {kind.__name__}, got bool"
            raise TypeError(msg)
        if not isinstance(value, accepted):
            msg = f"expected {kind.__name__}, got {type(value).__name__}"
            raise TypeError(msg)
        return kind(value)

    return structure


def make_converter() -> cattrs.Converter:
    """Build a converter that handles attrs classes, dataclasses, TypedDicts and pydantic.

    Primitives are structured strictly: ``"no"`` is not a ``bool`` and ``"3"`` is not an
    ``int``. Pydantic models are structured with ``model_validate`` and unstructured with
    ``model_dump(mode="json")``; everything else uses cattrs' own hooks.

    Returns:
        A fresh converter with detailed validation errors turned on.
    """
    converter = _make_json_converter(detailed_validation=True, forbid_extra_keys=True)
    converter.register_structure_hook(str, _strict(str))
    converter.register_structure_hook(bool, _strict(bool))
    converter.register_structure_hook(int, _strict(int))
    converter.register_structure_hook(float, _strict(float, accept=(int, float)))
    converter.register_structure_hook_func(
        _is_pydantic_model, lambda value, cls: cls.model_validate(value)
    )
    converter.register_unstructure_hook_func(
        _is_pydantic_model, lambda obj: obj.model_dump(mode="json")
    )
    return converter


default_converter = make_converter()
