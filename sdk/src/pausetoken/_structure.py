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


def make_converter() -> cattrs.Converter:
    """Build a converter that handles attrs classes, dataclasses, TypedDicts and pydantic.

    Pydantic models are structured with ``model_validate`` and unstructured with
    ``model_dump(mode="json")``; everything else uses cattrs' own hooks.

    Returns:
        A fresh converter with detailed validation errors turned on.
    """
    converter = _make_json_converter(detailed_validation=True, forbid_extra_keys=True)
    converter.register_structure_hook_func(
        _is_pydantic_model, lambda value, cls: cls.model_validate(value)
    )
    converter.register_unstructure_hook_func(
        _is_pydantic_model, lambda obj: obj.model_dump(mode="json")
    )
    return converter


default_converter = make_converter()
