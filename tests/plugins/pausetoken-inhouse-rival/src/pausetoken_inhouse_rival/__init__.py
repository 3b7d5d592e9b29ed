"""A demo store plugin that claims the name ``inhouse`` too."""

from __future__ import annotations

from typing import Any

from pausetoken import MemoryStore

__all__ = ["RivalStore"]


class RivalStore(MemoryStore):
    """Never chosen while pausetoken-inhouse is installed: the name is ambiguous."""

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RivalStore:
        """Open any URL (the point of this plugin is its name)."""
        del url, options
        return cls()
