"""A refund approval on LangGraph: minted in one process, resumed in another.

A request handler runs the graph until it pauses in ``ask()`` and mints a token for the
approver (``mint``). The answer arrives later, in another process, which redeems the token
exactly once and resumes the run (``resume``). Checkpoints are kept by AsyncSqliteSaver and
redemptions by the SQLite token store, both in files in ``--dir``; the keys come from the key
file named by PAUSETOKEN_KEYS_FILE (``pausetoken keygen -o FILE`` makes one).

    python examples/langgraph_approval.py --dir DIR    # mint, then resume in another process
    python examples/langgraph_approval.py mint --dir DIR --order order-42
    python examples/langgraph_approval.py resume --dir DIR TOKEN '{"approved": true}'

Without ``--dir`` the first form works in a temporary directory, and without
PAUSETOKEN_KEYS_FILE it makes a key file there with ``pausetoken keygen``. From a checkout:

    uv run --no-project --with "./sdk[cli]" --with "./backends/sqlalchemy[sqlite]" \\
        --with "./backends/langgraph[sqlite]" python examples/langgraph_approval.py

The exit status is 0 only if every step behaved as expected.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import attrs
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph

from pausetoken import Interrupt, PauseTokens, Scope, Settings
from pausetoken.exceptions import AlreadyRedeemed, PauseTokenError
from pausetoken_langgraph import LangGraphCheckpoints, ask, mint_pending, resume

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.pregel import Pregel

ACME = Scope("acme")


@attrs.frozen
class Refund:
    """What the approver is shown."""

    order_id: str
    amount_cents: int


@attrs.frozen
class Decision:
    """What the approver answers."""

    approved: bool
    note: str = ""


REFUND = Interrupt("refund", payload=Refund, response=Decision)


class State(TypedDict, total=False):
    order_id: str
    status: str


def build_graph(saver: BaseCheckpointSaver[Any], ledger: Path) -> Pregel[Any, Any, Any, Any]:
    """The approval graph; every process builds the same one."""

    def approve(state: State) -> State:
        # Nothing with side effects before ask(): the node runs again from its first line.
        decision = ask(REFUND, Refund(state["order_id"], 1999))
        if decision.approved:
            with ledger.open("a") as paid:  # stands for the payment provider
                paid.write(f"{state['order_id']}\n")
        return {"status": "refunded" if decision.approved else "rejected"}

    builder = StateGraph(State)
    builder.add_node("approve", approve)
    builder.add_edge(START, "approve")
    builder.add_edge("approve", END)
    # A name keeps its open tokens valid across deployments that add or rename nodes.
    return builder.compile(checkpointer=saver, name="refunds")


@asynccontextmanager
async def open_service(
    directory: Path, keys_file: str
) -> AsyncIterator[tuple[Pregel[Any, Any, Any, Any], PauseTokens]]:
    """The graph and its token service, opened the same way by every process."""
    settings = Settings.from_mapping(
        {"store_url": f"sqlite+aiosqlite:///{directory / 'tokens.db'}", "keys_file": keys_file}
    )
    async with AsyncSqliteSaver.from_conn_string(str(directory / "checkpoints.db")) as saver:
        graph = build_graph(saver, directory / "refunds-paid.txt")
        reader = LangGraphCheckpoints(graph)
        async with PauseTokens.from_settings(settings, checkpoints=reader) as service:
            service.register(REFUND)
            yield graph, service


async def mint(directory: Path, keys_file: str, order_id: str) -> dict[str, Any]:
    """The request handler: run the graph until it pauses, mint a token for the approver."""
    async with open_service(directory, keys_file) as (graph, service):
        config: RunnableConfig = {"configurable": {"thread_id": order_id}}
        await graph.ainvoke({"order_id": order_id}, config)  # returns paused in ask()
        [event] = await mint_pending(service, graph, config, scope=ACME)
        # Send the token and the payload to the approver (a link, a chat message, ...).
        return {"token": event.token, "payload": attrs.asdict(event.payload), "pid": os.getpid()}


async def answer(directory: Path, keys_file: str, token: str, response: Any) -> dict[str, Any]:
    """The answer arrived (any process, any time later): redeem once and resume the run."""
    async with open_service(directory, keys_file) as (graph, service):
        resumed = await resume(service, graph, token, response, scope=ACME)
        status = None if resumed.output is None else resumed.output["status"]
        return {"status": status, "replayed": resumed.replayed, "pid": os.getpid()}


def run_step(directory: Path, *args: str, env: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """Run one subcommand of this script in a process of its own; its JSON answer."""
    done = subprocess.run(  # noqa: S603 - this script, with arguments made here
        [sys.executable, __file__, *args, "--dir", str(directory)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    sys.stderr.write(done.stderr)
    try:
        return done.returncode, json.loads(done.stdout)
    except json.JSONDecodeError:
        return done.returncode, {"output": done.stdout}


def demo(directory: Path) -> int:
    """Mint in one process, answer in another, retry from this one; check every step."""
    env = dict(os.environ)
    if not env.get("PAUSETOKEN_KEYS_FILE"):
        keys = directory / "pausetoken-keys.json"
        subprocess.run(  # noqa: S603 - the pausetoken command of this interpreter
            [sys.executable, "-m", "pausetoken", "keygen", "-o", str(keys)],
            check=True,
            timeout=60,
        )
        env["PAUSETOKEN_KEYS_FILE"] = str(keys)
    keys_file = env["PAUSETOKEN_KEYS_FILE"]
    failed: list[str] = []

    def check(what: str, *, ok: bool) -> None:
        print("PASS" if ok else "FAIL", what)
        if not ok:
            failed.append(what)

    status, minted = run_step(directory, "mint", "--order", "order-42", env=env)
    check(f"process {minted.get('pid')} paused the run and minted", ok="token" in minted)
    if "token" not in minted:
        return 1
    print(f"     the approver is shown {minted['payload']}")
    token = minted["token"]

    approve = {"approved": True, "note": "within policy"}
    status, first = run_step(directory, "resume", token, json.dumps(approve), env=env)
    check(
        f"process {first.get('pid')} redeemed the answer and the run finished: {first}",
        ok=status == 0 and first.get("status") == "refunded" and first.get("replayed") is False,
    )

    # The client retries (its connection dropped), then someone answers differently: from
    # this process now, which opens the same files.
    retry = asyncio.run(answer(directory, keys_file, token, approve))
    check("the same answer again is answered without resuming the run", ok=retry["replayed"])
    try:
        asyncio.run(answer(directory, keys_file, token, {"approved": False}))
    except AlreadyRedeemed as exc:
        check(f"another answer is refused: {exc.code} (HTTP {exc.http_status})", ok=True)
    else:
        check("another answer is refused", ok=False)

    paid = (directory / "refunds-paid.txt").read_text().split()
    check(f"the refund was paid once: {paid}", ok=paid == ["order-42"])
    print(f"FAIL: {len(failed)} step(s)" if failed else "PASS: every step as expected")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--dir", type=Path, help="where the checkpoint and token files live")
    steps = parser.add_subparsers(dest="step")
    minting = steps.add_parser("mint", help="run the graph until it pauses; print the token")
    minting.add_argument("--order", default="order-42")
    minting.add_argument("--dir", type=Path, required=True)
    answering = steps.add_parser("resume", help="redeem a token with an answer; resume the run")
    answering.add_argument("token")
    answering.add_argument("answer", help='the answer as JSON, for example {"approved": true}')
    answering.add_argument("--dir", type=Path, required=True)
    args = parser.parse_args(argv)

    if args.step is None:
        if args.dir is not None:
            args.dir.mkdir(parents=True, exist_ok=True)
            return demo(args.dir)
        with tempfile.TemporaryDirectory(prefix="pausetoken-approval-") as directory:
            return demo(Path(directory))
    keys_file = os.environ.get("PAUSETOKEN_KEYS_FILE")
    if not keys_file:
        sys.exit("set PAUSETOKEN_KEYS_FILE to a key file (`pausetoken keygen -o FILE` makes one)")
    try:
        if args.step == "mint":
            result = asyncio.run(mint(args.dir, keys_file, args.order))
        else:
            response = json.loads(args.answer)
            result = asyncio.run(answer(args.dir, keys_file, args.token, response))
    except PauseTokenError as exc:
        print(json.dumps({"refused": exc.code, "status": exc.http_status, "pid": os.getpid()}))
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
