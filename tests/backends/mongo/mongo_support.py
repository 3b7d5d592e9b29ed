"""Helpers the Mongo store tests share."""

from __future__ import annotations

import secrets

#: The database the tests use on the server.
DATABASE = "pausetoken_test"


def new_collection(collections: list[str]) -> str:
    """A fresh collection name, recorded for dropping at the end of the session."""
    name = f"pt_test_{secrets.token_hex(6)}"
    collections.append(name)
    return name
