"""Telling a misconfigured store from an unreachable one.

A failure is permanent when waiting will not fix it: the credentials are wrong, the
database does not exist, the user may not write, the SQLite file cannot be opened, or the
table was dropped. Everything else (refused connections, timeouts, lost connections) is
transient. Each engine family reads its driver's own codes (PostgreSQL SQLSTATE, MySQL
error numbers, SQLite result codes; see `EngineFamily.problem()`), found anywhere in the
exception's chain (`causes()`), since SQLAlchemy wraps some driver errors and not others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import attrs

if TYPE_CHECKING:
    from collections.abc import Iterator

    from sqlalchemy.engine import URL

__all__ = [
    "AUTHENTICATION",
    "CANNOT_OPEN",
    "MISSING_DATABASE",
    "NOT_A_DATABASE",
    "PERMISSION",
    "READ_ONLY",
    "TABLE_MISSING",
    "Problem",
    "causes",
]


@attrs.frozen
class Problem:
    """A permanent cause found in a failure.

    Attributes:
        kind: A short name (``"authentication"``, ``"missing_database"``, ``"permission"``,
            ``"read_only"``, ``"cannot_open"``, ``"not_a_database"``, ``"table_missing"``).
        cause: The cause in words, without any value from the URL.
    """

    kind: str
    cause: str

    def explain(self, url: URL, table_name: str) -> str:
        """The cause, with the user, database or table it concerns (never the password)."""
        where = {
            "authentication": f" for user {url.username!r}",
            "missing_database": f" (database {url.database!r})",
            "permission": f" (user {url.username!r}, table {table_name})",
            "cannot_open": f" ({url.database!r})",
            "read_only": f" (table {table_name})",
        }
        return self.cause + where.get(self.kind, "")


AUTHENTICATION: Final = Problem(
    "authentication", "authentication failed (wrong user name or password)"
)
MISSING_DATABASE: Final = Problem("missing_database", "the database does not exist")
PERMISSION: Final = Problem(
    "permission", "permission denied: the user may not write to the table (a read-only user?)"
)
READ_ONLY: Final = Problem("read_only", "the database is read-only")
CANNOT_OPEN: Final = Problem(
    "cannot_open", "unable to open the SQLite file (missing directory or no permission)"
)
NOT_A_DATABASE: Final = Problem("not_a_database", "the file is not a SQLite database")
#: The redemptions table is gone while its schema record says it was created.
TABLE_MISSING: Final = Problem("table_missing", "the table does not exist")


def causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and everything in its chain: causes, contexts and SQLAlchemy's ``orig``."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        orig = getattr(current, "orig", None)
        wrapped = orig if isinstance(orig, BaseException) else None
        pending.extend((wrapped, current.__cause__, current.__context__))
