"""A Pydantic AI ConversationStore on a SQLite file, so OS processes share conversations.

Test support only: records and entries are pickled (each process runs the same code), and
every write is one ``BEGIN IMMEDIATE`` transaction that checks the expected revision, the
compare-and-set Pydantic AI asks of a store.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import pickle
import sqlite3
from typing import TYPE_CHECKING

from pydantic_ai.conversation_store import (
    ConversationConflict,
    ConversationEntry,
    ConversationRecord,
    ConversationStore,
)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (id TEXT PRIMARY KEY, revision TEXT NOT NULL, body BLOB);
CREATE TABLE IF NOT EXISTS entries (id TEXT PRIMARY KEY, body BLOB NOT NULL);
"""


class SQLiteConversationStore(ConversationStore):
    def __init__(self, path: Path) -> None:
        self._path = str(path)
        with self._connect() as db:
            db.executescript(_SCHEMA)

    def _connect(self) -> contextlib.closing[sqlite3.Connection]:
        return contextlib.closing(sqlite3.connect(self._path, timeout=30, isolation_level=None))

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        return await asyncio.to_thread(self._select_record, conversation_id)

    def _select_record(self, conversation_id: str) -> ConversationRecord | None:
        with self._connect() as db:
            row = db.execute("SELECT body FROM records WHERE id = ?", (conversation_id,)).fetchone()
        return None if row is None else pickle.loads(row[0])  # noqa: S301 - written by these tests

    async def read_records(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> Sequence[ConversationRecord]:
        with self._connect() as db:
            rows = db.execute("SELECT body FROM records").fetchall()
        records = [pickle.loads(body) for (body,) in rows]  # noqa: S301
        records = [r for r in records if scope is None or r.scope == scope]
        records.sort(key=lambda record: record.updated_at, reverse=True)
        return records[:limit]

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        await asyncio.to_thread(self._write_record, record, new_entries, expected_revision)

    def _write_record(
        self,
        record: ConversationRecord,
        new_entries: Sequence[ConversationEntry],
        expected_revision: str | None,
    ) -> None:
        with self._connect() as db:
            self._compare_and_set(db, record, new_entries, expected_revision)

    @staticmethod
    def _compare_and_set(
        db: sqlite3.Connection,
        record: ConversationRecord,
        new_entries: Sequence[ConversationEntry],
        expected_revision: str | None,
    ) -> None:
        try:
            db.execute("BEGIN IMMEDIATE")
            row = db.execute(
                "SELECT revision, body FROM records WHERE id = ?", (record.conversation_id,)
            ).fetchone()
            if (None if row is None else row[0]) != expected_revision:
                raise ConversationConflict(record.conversation_id)
            if row is not None:
                stored = pickle.loads(row[1])  # noqa: S301
                record = dataclasses.replace(record, title=stored.title, metadata=stored.metadata)
            for entry in new_entries:
                db.execute(
                    "INSERT OR REPLACE INTO entries VALUES (?, ?)", (entry.id, pickle.dumps(entry))
                )
            db.execute(
                "INSERT OR REPLACE INTO records VALUES (?, ?, ?)",
                (record.conversation_id, record.revision, pickle.dumps(record)),
            )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        with self._connect() as db:
            deleted = db.execute(
                "DELETE FROM records WHERE id = ? AND revision = ?",
                (conversation_id, expected_revision),
            ).rowcount
        if not deleted:
            raise ConversationConflict(conversation_id)

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        with self._connect() as db:
            row = db.execute("SELECT body FROM entries WHERE id = ?", (entry_id,)).fetchone()
        if row is None:
            raise LookupError(entry_id)
        return pickle.loads(row[0])  # type: ignore[no-any-return]  # noqa: S301
