"""A service's parts chosen by settings: signer, store and checkpoint reader, by plugin name."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from pausetoken._reader_api import CheckpointReader
    from pausetoken._settings import Settings
    from pausetoken._signer_api import Signer
    from pausetoken._store_api import TokenStore

__all__ = ["Parts", "open_parts"]


@attrs.frozen
class Parts:
    """What `open_parts()` made, and how to close what it opened (last opened first)."""

    signer: Signer
    store: TokenStore
    checkpoints: CheckpointReader
    closers: tuple[Callable[[], Awaitable[None]], ...]


def open_parts(settings: Settings, *, checkpoints: CheckpointReader | None) -> Parts:
    """Load the plugins ``settings`` name and open the store (and reader, unless given).

    Raises:
        ConfigurationError: for unknown or missing backends and bad options.
    """
    # Only settings need the registry, and reading entry points is slow to import.
    from pausetoken._registry import (  # noqa: PLC0415
        load_checkpoints,
        load_signer,
        open_store,
    )

    signer_options = {"max_token_bytes": settings.max_token_bytes, **settings.signer_options}
    signer = load_signer(settings.signer).from_keys(settings.keys, **signer_options)
    store = open_store(settings.store_url, **dict(settings.store_options))
    if checkpoints is not None:
        return Parts(signer, store, checkpoints, (store.aclose,))
    reader = load_checkpoints(settings.checkpoints).from_url(settings.checkpoints)
    return Parts(signer, store, reader, (store.aclose, reader.aclose))
