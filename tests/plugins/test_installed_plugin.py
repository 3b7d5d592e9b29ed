"""The demo plugin distributions, installed for real (the nox ``tests`` session does so).

``pausetoken-inhouse`` registers the store ``inhouse``; ``pausetoken-inhouse-rival``
registers the same name, and only the ambiguity test wants both installed.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

import pytest

from pausetoken import available_backends, open_store
from pausetoken.exceptions import AmbiguousBackend
from pausetoken.testing import StoreConformance

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from pausetoken import TokenStore


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


INHOUSE = _installed("pausetoken-inhouse")
RIVAL = _installed("pausetoken-inhouse-rival")

pytestmark = [
    pytest.mark.skipif(
        not INHOUSE,
        reason="pausetoken-inhouse is not installed "
        "(pip install -e tests/plugins/pausetoken-inhouse, or run the nox tests session)",
    ),
    pytest.mark.filterwarnings("ignore::pausetoken.MemoryStoreWarning"),
]

needs_one_plugin = pytest.mark.skipif(
    RIVAL, reason="pausetoken-inhouse-rival is installed too, so 'inhouse' is ambiguous"
)


@pytest.mark.slow
@needs_one_plugin
def test_the_plugin_is_listed_and_imported_only_when_chosen() -> None:
    script = textwrap.dedent(
        """
        import sys, warnings
        warnings.simplefilter("ignore")
        import pausetoken
        found = [(b.distribution, b.target) for b in pausetoken.available_backends("stores")
                 if b.name == "inhouse"]
        before = "pausetoken_inhouse" in sys.modules
        store = pausetoken.open_store("inhouse://")
        print(found, before, type(store).__module__)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    listed = "[('pausetoken-inhouse', 'pausetoken_inhouse:InHouseStore')]"
    expected = f"{listed} False pausetoken_inhouse"
    assert done.stdout.strip() == expected


@needs_one_plugin
def test_the_plugin_reports_its_version() -> None:
    (info,) = [b for b in available_backends("stores") if b.name == "inhouse"]
    assert info.version == importlib.metadata.version("pausetoken-inhouse")
    assert info.importable is True


@pytest.mark.rival_plugin
@pytest.mark.skipif(not RIVAL, reason="pausetoken-inhouse-rival is not installed")
def test_two_installed_distributions_claiming_one_name_are_refused() -> None:
    with pytest.raises(AmbiguousBackend) as info:
        open_store("inhouse://")
    assert "pausetoken-inhouse " in info.value.detail
    assert "pausetoken-inhouse-rival" in info.value.detail


@needs_one_plugin
class TestInHousePluginConformance(StoreConformance):
    """A third-party store runs the kit by overriding one fixture (and stating why not two)."""

    process_race_skip_reason = "the in-house store keeps its rows in one process"

    @pytest.fixture
    async def store(self) -> AsyncIterator[TokenStore]:
        store = open_store("inhouse://")
        yield store
        await store.aclose()
