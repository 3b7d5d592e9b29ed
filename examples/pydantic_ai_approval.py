"""A refund approval on Pydantic AI: one token per tool call, redeemed exactly once.

An agent (on Pydantic AI's ``TestModel``: no network, no API key) calls a ``refund`` tool
that requires approval, so its run ends with ``DeferredToolRequests``; the conversation is
saved to a ``ConversationStore``. ``mint_approvals()`` mints the token to send to the
approver; ``resume()`` redeems the approver's decision and runs the tool once, with the
approved arguments. Redemptions are kept by the SQLite token store in a temporary
directory. Each step checks itself and prints PASS or FAIL. From a checkout:

    uv run --no-project --with "./sdk[cli]" --with "./backends/sqlalchemy[sqlite]" \\
        --with ./backends/pydantic-ai python examples/pydantic_ai_approval.py

The exit status is 0 only if every step behaved as expected.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import InMemoryConversationStore
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import DeferredToolRequests

from pausetoken import JoseSigner, KeyRing, PauseTokens, Scope, open_store
from pausetoken.exceptions import (
    AlreadyRedeemed,
    InvalidResponse,
    InvalidToken,
    PauseTokenError,
    ScopeMismatch,
)
from pausetoken_pydantic_ai import ConversationCheckpoints, mint_approvals, register, resume

ACME = Scope("acme")
GLOBEX = Scope("globex")

refunds_paid: list[tuple[str, int]] = []

agent: Agent[None, Any] = Agent(
    TestModel(call_tools=["refund"]), output_type=[str, DeferredToolRequests]
)


@agent.tool_plain(requires_approval=True)
def refund(order: str, amount_cents: int) -> str:
    """Refund an order (the side effect the approver guards)."""
    refunds_paid.append((order, amount_cents))
    return f"refunded {amount_cents} cents on {order}"


failures: list[str] = []


def check(step: str, ok: bool) -> None:  # noqa: FBT001 - a step and whether it held
    print(("PASS " if ok else "FAIL ") + step)
    if not ok:
        failures.append(step)


async def refused(
    tokens: PauseTokens, answers: list[tuple[str, dict[str, Any]]], scope: Scope
) -> type[PauseTokenError] | None:
    """The class of the refusal (its code is printed), or None if resume() accepted them."""
    try:
        await resume(tokens, agent, answers, scope=scope)
    except PauseTokenError as exc:
        print("  refused:", exc.code, exc.http_status)
        return type(exc)
    return None


async def main(directory: Path) -> None:
    conversations = InMemoryConversationStore()
    store = open_store(f"sqlite+aiosqlite:///{directory / 'tokens.db'}")
    async with PauseTokens(
        signer=JoseSigner(KeyRing.generate()),
        store=store,
        checkpoints=ConversationCheckpoints(conversations, namespace="refunds"),
    ) as tokens:
        register(tokens)
        result = await agent.run(
            "refund order a", conversation=Conversation(conversation_id="conv-1")
        )
        await conversations.save(result)
        check("the run paused for approval", isinstance(result.output, DeferredToolRequests))

        (event,) = await mint_approvals(tokens, "conv-1", scope=ACME)
        print("approver is shown:", event.payload.tool_name, event.payload.args)

        head, body, signature = event.token.split(".")
        tampered = f"{head}.{body}.{signature[::-1]}"
        approve: dict[str, Any] = {"type": "approve"}
        check(
            "a tampered token is refused",
            await refused(tokens, [(tampered, approve)], ACME) is InvalidToken,
        )
        check(
            "another tenant is refused",
            await refused(tokens, [(event.token, approve)], GLOBEX) is ScopeMismatch,
        )
        bad_edit = {
            "type": "edit",
            "edited_action": {"name": "refund", "args": {"order": "a", "amount_cents": "lots"}},
        }
        check(
            "an edit that does not fit the tool's schema is refused (422)",
            await refused(tokens, [(event.token, bad_edit)], ACME) is InvalidResponse,
        )
        check("no tool ran so far", refunds_paid == [])

        edit = {
            "type": "edit",
            "edited_action": {"name": "refund", "args": {"order": "a", "amount_cents": 1999}},
        }
        resumed = await resume(tokens, agent, [(event.token, edit)], scope=ACME)
        check("the edited refund ran once", refunds_paid == [("a", 1999)])
        check("the run finished", resumed.requests is None and resumed.result is not None)

        again = await resume(tokens, agent, [(event.token, edit)], scope=ACME)
        check("a retry of the same decision is a replay", again.replayed)
        check(
            "another decision on the same token is refused",
            await refused(tokens, [(event.token, approve)], ACME) is AlreadyRedeemed,
        )
        check("the refund still ran exactly once", refunds_paid == [("a", 1999)])
    await store.aclose()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as temporary:
        asyncio.run(main(Path(temporary)))
    if failures:
        print(f"FAIL: {len(failures)} step(s) not as expected")
        sys.exit(1)
    print("PASS: every step as expected")
