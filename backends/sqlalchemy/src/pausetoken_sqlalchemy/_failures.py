"""Telling a misconfigured store from an unreachable one.

A failure is permanent when waiting will not fix it: the credentials are wrong, the
database does not exist, the user may not write, the SQLite file cannot be opened, or the
table was dropped. Everything else (refused connections, timeouts, lost connections) is
transient. The drivers' own codes decide (PostgreSQL SQLSTATE, MySQL error numbers,
SQLite result codes), found anywhere in the exception's chain, since SQLAlchemy wraps
some driver errors and not others.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Final

import attrs

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["TABLE_MISSING", "Problem", "diagnose"]


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


_AUTHENTICATION: Final = Problem(
    "authentication", "authentication failed (wrong user name or password)"
)
_MISSING_DATABASE: Final = Problem("missing_database", "the database does not exist")
_PERMISSION: Final = Problem(
    "permission", "permission denied: the user may not write to the table (a read-only user?)"
)
_READ_ONLY: Final = Problem("read_only", "the database is read-only")
_CANNOT_OPEN: Final = Problem(
    "cannot_open", "unable to open the SQLite file (missing directory or no permission)"
)
_NOT_A_DATABASE: Final = Problem("not_a_database", "the file is not a SQLite database")
#: The redemptions table is gone while its schema record says it was created.
TABLE_MISSING: Final = Problem("table_missing", "the table does not exist")

_POSTGRES: Final = {
    "28P01": _AUTHENTICATION,  # invalid_password
    "28000": _AUTHENTICATION,  # invalid_authorization_specification
    "3D000": _MISSING_DATABASE,  # invalid_catalog_name
    "42501": _PERMISSION,  # insufficient_privilege
    "25006": _READ_ONLY,  # read_only_sql_transaction (a standby, or read-only default)
    "42P01": TABLE_MISSING,  # undefined_table
}
_MYSQL: Final = {
    1044: _PERMISSION,  # ER_DBACCESS_DENIED_ERROR
    1045: _AUTHENTICATION,  # ER_ACCESS_DENIED_ERROR
    1049: _MISSING_DATABASE,  # ER_BAD_DB_ERROR
    1142: _PERMISSION,  # ER_TABLEACCESS_DENIED_ERROR
    1143: _PERMISSION,  # ER_COLUMNACCESS_DENIED_ERROR
    1146: TABLE_MISSING,  # ER_NO_SUCH_TABLE
    1227: _PERMISSION,  # ER_SPECIFIC_ACCESS_DENIED_ERROR
    1290: _READ_ONLY,  # ER_OPTION_PREVENTS_STATEMENT (--read-only)
    1698: _AUTHENTICATION,  # ER_ACCESS_DENIED_NO_PASSWORD_ERROR
    1836: _READ_ONLY,  # ER_READ_ONLY_MODE
}
_SQLITE: Final = {
    3: _PERMISSION,  # SQLITE_PERM
    8: _READ_ONLY,  # SQLITE_READONLY
    14: _CANNOT_OPEN,  # SQLITE_CANTOPEN
    23: _AUTHENTICATION,  # SQLITE_AUTH
    26: _NOT_A_DATABASE,  # SQLITE_NOTADB
}


def _chain(exc: BaseException) -> Iterator[BaseException]:
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


def _one(exc: BaseException) -> Problem | None:
    state = getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)
    if isinstance(state, str) and state in _POSTGRES:
        return _POSTGRES[state]
    if isinstance(exc, sqlite3.Error):
        if "no such table" in str(exc):
            return TABLE_MISSING
        code = getattr(exc, "sqlite_errorcode", None)
        return _SQLITE.get(code & 0xFF) if isinstance(code, int) else None
    if type(exc).__module__.startswith("asyncmy") and exc.args and isinstance(exc.args[0], int):
        return _MYSQL.get(exc.args[0])
    return None


def diagnose(exc: BaseException) -> Problem | None:
    """The permanent cause of ``exc``, or ``None`` when it may pass by itself."""
    for current in _chain(exc):
        problem = _one(current)
        if problem is not None:
            return problem
    return None
