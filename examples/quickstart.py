"""Mint a pause token, refuse a tampered one, redeem it once, refuse a replay.

The keys come from the key file that ``pausetoken keygen -o pausetoken-keys.json`` wrote in
the working directory, or from the file PAUSETOKEN_KEYS_FILE names. From a checkout, after
the README's first steps made ``.venv-uv``:

    .venv-uv/bin/uv run --no-project --with "./sdk[cli]" pausetoken keygen -o pausetoken-keys.json
    .venv-uv/bin/uv run --no-project --with ./sdk python examples/quickstart.py

It exits with status 0 when every step behaved as shown, 1 otherwise.
"""

from __future__ import annotations

import asyncio
import os
import sys
import warnings
from pathlib import Path

import attrs

from pausetoken import Interrupt, MemoryStoreWarning, PauseTokens, Scope, Settings
from pausetoken.exceptions import AlreadyRedeemed, InvalidToken, ScopeMismatch

KEYS_FILE = os.environ.get("PAUSETOKEN_KEYS_FILE", "pausetoken-keys.json")


@attrs.frozen
class Refund:
    order_id: str
    amount_cents: int


@attrs.frozen
class Decision:
    approved: bool
    note: str = ""


REFUND = Interrupt("refund", payload=Refund, response=Decision)


async def main() -> None:
    # One process only: the memory store is for examples and tests (a service sets
    # PAUSETOKEN_STORE_URL to a shared store, such as sqlite+aiosqlite:///pausetoken.db).
    warnings.simplefilter("ignore", MemoryStoreWarning)
    settings = Settings.from_mapping({"store_url": "memory://", "keys_file": KEYS_FILE})
    async with PauseTokens.from_settings(settings) as tokens:
        tokens.register(REFUND)
        acme = Scope("acme")

        event = await tokens.mint(
            REFUND, Refund("order-42", 1999), scope=acme, thread_id="thread-1", run_id="run-1"
        )
        print("minted:   ", event)
        print("claims:   ", tokens.verify(event.token))

        head, body, signature = event.token.split(".")
        forged = f"{head}.{body}.{'A' if signature[0] != 'A' else 'B'}{signature[1:]}"
        try:
            await tokens.consume(forged, {"approved": True}, scope=acme)
        except InvalidToken as exc:
            print("tampered: refused", exc.code)
        else:
            sys.exit("tampered: accepted")

        try:
            await tokens.consume(event.token, {"approved": True}, scope=Scope("globex"))
        except ScopeMismatch as exc:
            print("foreign:  refused", exc.code)
        else:
            sys.exit("foreign: accepted")

        answer = {"approved": True, "note": "ok"}
        done = await tokens.consume(event.token, answer, scope=acme, expect=REFUND)
        print("redeemed: ", done)

        try:
            await tokens.consume(event.token, {"approved": False}, scope=acme)
        except AlreadyRedeemed as exc:
            print("replay:   refused", exc.code)
        else:
            sys.exit("replay: accepted")


if __name__ == "__main__":
    if not Path(KEYS_FILE).is_file():
        sys.exit(f"no key file at {KEYS_FILE}: make one with `pausetoken keygen -o {KEYS_FILE}`")
    asyncio.run(main())
