"""A refund approval over AG-UI: the interrupt carries a token, the resume entry brings it back.

An AG-UI agent endpoint runs in this process: it reads a ``RunAgentInput`` as an HTTP body
would carry it (camelCase JSON) and answers with server-sent events (``EventEncoder``). A
scripted agent (no model, no network) asks to approve a refund with pausetoken's ready-made
``APPROVAL`` kind, so its first run ends with an interrupt whose ``metadata["pausetoken"]``
holds the token, with ``expiresAt`` and a ``responseSchema`` naming the decisions allowed.
The client answers with a ``ResumeEntry`` that returns that metadata unchanged; the
refund runs once. Tokens and thread states are kept in SQLite files in a temporary
directory. Each step checks itself and prints PASS or FAIL. From a checkout:

    uv run --no-project --with ./sdk --with "./backends/sqlalchemy[sqlite]" \\
        --with "./backends/agui[sqlite]" python examples/agui_approval.py

The exit status is 0 only if every step behaved as expected.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from ag_ui.core import RunAgentInput
from ag_ui.encoder import EventEncoder

from pausetoken import JoseSigner, KeyRing, PauseTokens, Scope, kinds, open_store
from pausetoken.kinds import Action, Approval
from pausetoken_agui import (
    AgUi,
    Ask,
    Outcome,
    Resumable,
    Resumption,
    SQLThreadStates,
    ThreadCheckpoints,
)

APPROVAL = Resumable(kinds.APPROVAL)
TENANTS = {"acme-key": Scope("acme"), "globex-key": Scope("globex")}

refunds_paid: list[tuple[str, int]] = []
#: Every event the endpoint sent in answer to resume entries.
resumed: list[str] = []


async def refund_agent(run: Resumption) -> Outcome:
    """Asks to approve a refund; once answered, pays it (or not) and says so."""
    if not run.answers:
        action = Action("refund", {"order": "A-1001", "amount_cents": 1999})
        ask = Ask(
            APPROVAL,
            Approval(action, ("approve", "edit", "reject")),
            reason="tool_approval",
            message="Refund 19.99 on order A-1001?",
            tool_call_id="call-1",
        )
        return Outcome(result="waiting for approval", asks=[ask])
    decision = run.answer(APPROVAL).response
    if decision is None or decision["type"] == "reject":
        return Outcome(result={"refunded": False})
    args = decision["edited_action"]["args"] if decision["type"] == "edit" else None
    order, cents = (args or {"order": "A-1001", "amount_cents": 1999}).values()
    run.ensure_held()  # the claim is still ours: pay
    refunds_paid.append((order, cents))
    return Outcome(result={"refunded": True, "amount_cents": cents})


class Endpoint:
    """POST /agent: the body is a RunAgentInput, the answer a stream of SSE events."""

    def __init__(self, agui: AgUi) -> None:
        self.agui = agui
        self.encoder = EventEncoder()

    async def post(self, body: bytes, *, api_key: str) -> list[str]:
        run_input = RunAgentInput.model_validate_json(body)
        scope = TENANTS[api_key]  # the tenant comes from the caller's credentials
        stream = [
            self.encoder.encode(event)
            async for event in self.agui.stream(run_input, refund_agent, scope=scope)
        ]
        if run_input.resume:
            resumed.extend(stream)
        return stream


def events(stream: list[str]) -> list[dict[str, Any]]:
    """What a client reads from the stream: one JSON object per ``data:`` line."""
    return [json.loads(chunk.removeprefix("data: ")) for chunk in stream]


def body(thread: str, run: str, resume: list[dict[str, Any]] | None = None) -> bytes:
    """A RunAgentInput as a client sends it."""
    payload: dict[str, Any] = {"threadId": thread, "runId": run, "messages": []}
    if resume is not None:
        payload["resume"] = resume
    return json.dumps(payload).encode()


def entry(interrupt: dict[str, Any], decision: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    """The resume entry that answers an interrupt: its metadata goes back unchanged."""
    return {
        "interruptId": interrupt["id"],
        "status": "resolved",
        "payload": decision,
        "metadata": metadata or interrupt["metadata"],
    }


failures: list[str] = []


def check(step: str, ok: bool) -> None:  # noqa: FBT001 - a step and whether it held
    print(("PASS " if ok else "FAIL ") + step)
    if not ok:
        failures.append(step)


def error_code(stream: list[str]) -> str | None:
    last = events(stream)[-1]
    return last["code"] if last["type"] == "RUN_ERROR" else None


async def main(directory: Path) -> None:
    url = f"sqlite+aiosqlite:///{directory / 'pausetoken.db'}"
    store = open_store(url)
    states = SQLThreadStates(url)
    service = PauseTokens(
        signer=JoseSigner(KeyRing.generate()),
        store=store,
        checkpoints=ThreadCheckpoints(states, namespace="refunds"),
    )
    async with service:
        endpoint = Endpoint(AgUi(service, [APPROVAL]))

        first = events(await endpoint.post(body("t-1", "run-1"), api_key="acme-key"))
        finished = first[-1]
        (interrupt,) = finished["outcome"]["interrupts"]
        schema = interrupt["responseSchema"]
        allowed = [choice["properties"]["type"]["const"] for choice in schema["oneOf"]]
        check(
            "the run ends with an interrupt carrying a token, its expiry and the decisions allowed",
            "token" in interrupt["metadata"]["pausetoken"]
            and interrupt["expiresAt"].endswith("+00:00")
            and allowed == ["approve", "edit", "reject"],
        )

        token = interrupt["metadata"]["pausetoken"]["token"]
        tampered = entry(
            interrupt, {"type": "approve"}, pausetoken={"token": token[:-6] + "AAAAAA"}
        )
        code = error_code(await endpoint.post(body("t-1", "run-2", [tampered]), api_key="acme-key"))
        check(
            "a tampered token ends the run with RUN_ERROR (token_*)", str(code).startswith("token_")
        )

        approve = entry(interrupt, {"type": "approve"})
        code = error_code(
            await endpoint.post(body("t-1", "run-2", [approve]), api_key="globex-key")
        )
        check("another tenant's answer is refused (scope_mismatch)", code == "scope_mismatch")

        rename = {"type": "edit", "edited_action": {"name": "wire_money", "args": {}}}
        stream = await endpoint.post(
            body("t-1", "run-2", [entry(interrupt, rename)]), api_key="acme-key"
        )
        last = events(stream)[-1]
        check(
            "an edit that renames the action is refused, naming the field (invalid_response)",
            last.get("code") == "invalid_response"
            and last["metadata"]["pausetoken"]["field"] == "$.edited_action.name",
        )
        check("no refund was paid so far", refunds_paid == [])

        done = events(await endpoint.post(body("t-1", "run-2", [approve]), api_key="acme-key"))[-1]
        check(
            "the approved refund is paid once and the run completes",
            refunds_paid == [("A-1001", 1999)]
            and done["result"] == {"refunded": True, "amount_cents": 1999},
        )

        again = events(await endpoint.post(body("t-1", "run-3", [approve]), api_key="acme-key"))[-1]
        check(
            "the same entry again gets the stored outcome, marked replayed",
            again["result"] == done["result"]
            and again["metadata"] == {"pausetoken": {"replayed": True}},
        )
        reject = entry(interrupt, {"type": "reject", "message": "changed my mind"})
        code = error_code(await endpoint.post(body("t-1", "run-4", [reject]), api_key="acme-key"))
        check(
            "another answer to the same interrupt is a conflict (already_redeemed)",
            code == "already_redeemed",
        )
        check("the refund was paid exactly once", refunds_paid == [("A-1001", 1999)])
        check("no answer to a resume entry repeats the token", token not in "".join(resumed))
    await states.aclose()
    await store.aclose()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as temporary:
        asyncio.run(main(Path(temporary)))
    if failures:
        print(f"FAIL: {len(failures)} step(s) not as expected")
        sys.exit(1)
    print("PASS: every step as expected")
