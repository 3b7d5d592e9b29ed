"""One worker process of the multi-process race: it resumes every token it is given.

Run as ``python pydantic_ai_race_worker.py ENGINE CONVERSATIONS NAMESPACE JWKS TOKENS LEDGER``:
it builds its own agent, service, token store and conversation store (a SQLite file shared
by every worker), says ``ready`` on stdout, waits for a line on stdin (the start shared by
every worker), resumes each token with an approval and prints one JSON list of outcomes:
``"resumed"``, ``"replayed"`` or an error code. The ``refund`` tool appends a line to LEDGER
each time it runs.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from pydantic_ai_support import Ledger, build_agent
from sqlite_conversations import SQLiteConversationStore

from pausetoken import JoseSigner, KeyRing, PauseTokens, open_store
from pausetoken.exceptions import PauseTokenError
from pausetoken_pydantic_ai import ConversationCheckpoints, register, resume
from scaffolding import ACME


class FileLedger(list[Any]):
    """The refunds made, appended to a file shared by every worker."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self._path = path

    def append(self, item: Any) -> None:
        with self._path.open("a", encoding="utf-8") as ledger:
            ledger.write(json.dumps(item) + "\n")


async def _outcome(service: PauseTokens, agent: Any, token: str) -> str:
    try:
        resumed = await resume(service, agent, [(token, {"type": "approve"})], scope=ACME)
    except PauseTokenError as exc:
        return exc.code
    return "replayed" if resumed.replayed else "resumed"


async def main(argv: list[str], tokens: list[str]) -> list[str]:
    engine, conversations, namespace, jwks, _, ledger_file = argv
    store = open_store(engine)
    agent = build_agent(Ledger(refunds=FileLedger(Path(ledger_file))))
    service = PauseTokens(
        signer=JoseSigner(KeyRing.from_jwks(jwks)),
        store=store,
        checkpoints=ConversationCheckpoints(
            SQLiteConversationStore(Path(conversations)), namespace=namespace
        ),
    )
    register(service)
    try:
        await store.check()  # connections open before the start
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        await asyncio.to_thread(sys.stdin.readline)
        return list(await asyncio.gather(*(_outcome(service, agent, t) for t in tokens)))
    finally:
        await store.aclose()


if __name__ == "__main__":
    given = json.loads(Path(sys.argv[5]).read_text(encoding="utf-8"))
    sys.stdout.write(json.dumps(asyncio.run(main(sys.argv[1:], given))) + "\n")
