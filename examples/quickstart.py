"""Mint a pause token, refuse a tampered one, redeem it once, refuse a replay.

Run from a checkout:  uv run --no-project --with ./sdk python examples/quickstart.py
"""

from __future__ import annotations

import asyncio
import warnings

import attrs

from pausetoken import (
    Interrupt,
    JoseSigner,
    KeyRing,
    MemoryCheckpoints,
    MemoryStore,
    MemoryStoreWarning,
    PauseTokens,
    Scope,
)
from pausetoken.exceptions import AlreadyRedeemed, InvalidToken, ScopeMismatch


@attrs.frozen
class Refund:
    order_id: str
    amount_cents: int


@attrs.frozen
class Decision:
    approved: bool
    note: str = ""


async def main() -> None:
    # One process only: the memory store is for examples and tests.
    warnings.simplefilter("ignore", MemoryStoreWarning)
    keys = KeyRing.generate()  # in production: KeyRing.from_jwks(...) from `pausetoken keygen`
    tokens = PauseTokens(
        signer=JoseSigner(keys), store=MemoryStore(), checkpoints=MemoryCheckpoints()
    )
    tokens.register(Interrupt("refund", payload=Refund, response=Decision))
    acme = Scope("acme")

    event = await tokens.mint(
        "refund", Refund("order-42", 1999), scope=acme, thread_id="thread-1", run_id="run-1"
    )
    print("minted:   ", event)
    print("claims:   ", tokens.verify(event.token))

    head, body, signature = event.token.split(".")
    forged = f"{head}.{body}.{'A' if signature[0] != 'A' else 'B'}{signature[1:]}"
    try:
        await tokens.consume(forged, {"approved": True}, scope=acme)
    except InvalidToken as exc:
        print("tampered: refused", exc.code)

    try:
        await tokens.consume(event.token, {"approved": True}, scope=Scope("globex"))
    except ScopeMismatch as exc:
        print("foreign:  refused", exc.code)

    done = await tokens.consume(event.token, {"approved": True, "note": "ok"}, scope=acme)
    print("redeemed: ", done)

    try:
        await tokens.consume(event.token, {"approved": False}, scope=acme)
    except AlreadyRedeemed as exc:
        print("replay:   refused", exc.code)


if __name__ == "__main__":
    asyncio.run(main())
