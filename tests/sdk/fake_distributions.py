"""Distributions installed on the fly, so entry-point discovery is tested as it runs for users.

A `Site` is a directory put on ``sys.path`` holding ``*.dist-info`` directories (``METADATA``
and ``entry_points.txt``) and the modules they point at: :mod:`importlib.metadata` finds
them exactly as it finds installed distributions.
"""

from __future__ import annotations

import importlib.metadata
import sys
import textwrap
import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


class Site:
    """A directory on ``sys.path`` holding fake distributions and their modules."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.monkeypatch = monkeypatch
        monkeypatch.syspath_prepend(str(root))

    def module(self, source: str) -> str:
        """Write a module with ``source`` under a fresh name and return that name."""
        name = f"fake_plugin_{uuid.uuid4().hex[:10]}"
        (self.root / f"{name}.py").write_text(textwrap.dedent(source))
        self.monkeypatch.delitem(sys.modules, name, raising=False)
        return name

    def distribution(
        self, name: str, version: str, entry_points: dict[str, dict[str, str]]
    ) -> None:
        """Install the distribution ``name`` registering ``{group: {name: target}}``."""
        info = self.root / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        lines = []
        for group, names in entry_points.items():
            lines.append(f"[{group}]")
            lines.extend(f"{key} = {value}" for key, value in names.items())
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


def hide_distributions(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Make :mod:`importlib.metadata` report no entry points of the named distributions."""
    real = importlib.metadata.entry_points

    def entry_points(*, group: str) -> importlib.metadata.EntryPoints:
        found = real(group=group)
        return importlib.metadata.EntryPoints(
            ep for ep in found if ep.dist is None or ep.dist.name not in names
        )

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
