"""A demo store plugin: a MemoryStore chosen by ``inhouse://`` URLs."""

from __future__ import annotations

from typing import Any

from pausetoken import MemoryStore
from pausetoken.exceptions import ConfigurationError

__all__ = ["InHouseStore"]


class InHouseStore(MemoryStore):
    """A process-local store registered by a separate distribution."""

    @classmethod
    def from_url(cls, url: str, **options: Any) -> InHouseStore:
        """Open ``inhouse://`` (no options).

        Raises:
            ConfigurationError: for any other URL or any option.
        """
        if not url.startswith("inhouse://") or options:
            msg = "the in-house store is opened as 'inhouse://' without options"
            raise ConfigurationError(msg)
        return cls()
