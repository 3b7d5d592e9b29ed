"""URLs are shown without their secrets, however they are written."""

from __future__ import annotations

import pytest

from pausetoken import KeyRing, Settings, redact_url

SECRET = "hunter2-S3cret"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"postgresql+asyncpg//app:{SECRET}@db/x", "postgresql+asyncpg//app:***@db/x"),
        (f"//app:{SECRET}@db/x", "//app:***@db/x"),
        (f"app:{SECRET}@db/x", "app:***@db/x"),
        (f"postgresql://u:pa//{SECRET}@host/db", "postgresql://u:***@host/db"),
        (f"postgresql://db/x?sslpassword={SECRET}", "postgresql://db/x?sslpassword=***"),
        (f"postgresql://db/x?pass={SECRET}&a=1", "postgresql://db/x?pass=***&a=1"),
        (f"redis://cache/0?api_key={SECRET}", "redis://cache/0?api_key=***"),
        (f"mongodb://h/db?authToken={SECRET}", "mongodb://h/db?authToken=***"),
        (f"mongodb://h/db?PWD={SECRET}", "mongodb://h/db?PWD=***"),
        (f"postgresql://db/x?a={SECRET}&&b", "postgresql://db/x?***"),
    ],
)
def test_secrets_are_hidden_in_mistyped_and_scheme_less_urls(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://u:{SECRET}\n@host/db",
        f"postgresql://host/{SECRET} db",
        f"postgresql://host/db\x00{SECRET}",
    ],
)
def test_an_unparsable_url_is_never_shown_whole(url: str) -> None:
    assert SECRET not in redact_url(url)


def test_settings_repr_hides_a_password_in_the_query() -> None:
    settings = Settings(
        store_url=f"postgresql+asyncpg://db/tokens?sslpassword={SECRET}", keys=KeyRing.generate()
    )
    assert SECRET not in repr(settings)
    assert "sslpassword=***" in repr(settings)


def test_a_url_with_an_empty_authority_keeps_it() -> None:
    assert redact_url("sqlite+aiosqlite:///x.db?pwd=s") == "sqlite+aiosqlite:///x.db?pwd=***"
