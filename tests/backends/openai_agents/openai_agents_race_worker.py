"""One worker process of the multi-process race: it resumes every token it is given.

Run as ``python openai_agents_race_worker.py ENGINE JWKS TOKENS LEDGER``: it builds its own
agent, service, token store and run states, says ``ready`` on stdout, waits for a line on
stdin (the start shared by every worker), resumes each token with an approval and prints one
JSON list of outcomes: ``"resumed"``, ``"replayed"`` or an error code. The ``refund`` tool
appends a line to LEDGER each time it runs.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from agents import set_tracing_disabled
from openai_agents_support import Refunds, refund_agent

from pausetoken import JoseSigner, KeyRing, PauseTokens, open_store
from pausetoken.exceptions import PauseTokenError
from pausetoken_openai_agents import AgentRunCheckpoints, Decision, SQLRunStates, resume
from scaffolding import ACME


class Ledger(list[dict[str, Any]]):
    """The refunds made, appended to a file shared by every worker."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self._path = path

    def append(self, item: dict[str, Any]) -> None:
        with self._path.open("a", encoding="utf-8") as ledger:
            ledger.write(json.dumps(item) + "\n")


async def _outcome(service: PauseTokens, token: str) -> str:
    try:
        resumed = await resume(service, token, Decision(approve=True), scope=ACME)
    except PauseTokenError as exc:
        return exc.code
    return "replayed" if resumed.replayed else "resumed"


async def main(engine: str, jwks: str, tokens: list[str], ledger: Path) -> list[str]:
    set_tracing_disabled(disabled=True)
    store = open_store(engine)
    states = SQLRunStates(engine)
    agent = refund_agent(Refunds(done=Ledger(ledger)))
    service = PauseTokens(
        signer=JoseSigner(KeyRing.from_jwks(jwks)),
        store=store,
        checkpoints=AgentRunCheckpoints(agent, states),
    )
    try:
        # Connections open before the start, so the first claim is not the slowest.
        await store.check()
        await states.load("warm-up")
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        await asyncio.to_thread(sys.stdin.readline)
        return list(await asyncio.gather(*(_outcome(service, token) for token in tokens)))
    finally:
        await states.aclose()
        await store.aclose()


if __name__ == "__main__":
    engine, jwks, tokens_file, ledger_file = sys.argv[1:]
    tokens = json.loads(Path(tokens_file).read_text(encoding="utf-8"))
    sys.stdout.write(json.dumps(asyncio.run(main(engine, jwks, tokens, Path(ledger_file)))) + "\n")
