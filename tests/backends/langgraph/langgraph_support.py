"""Graphs, value types and helpers shared by the LangGraph integration tests."""

from __future__ import annotations

import contextlib
import operator
import re
import secrets
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

import attrs
import pytest
from langgraph.graph import END, START, StateGraph

import servers
from pausetoken import Interrupt
from pausetoken_langgraph import ask

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.pregel import Pregel

POSTGRESQL_ENV = "PAUSETOKEN_TEST_POSTGRESQL_URL"
SAVERS = ("memory", "sqlite", "postgresql")


@attrs.frozen
class Refund:
    order_id: str
    amount_cents: int


@attrs.frozen
class Decision:
    approved: bool
    note: str = ""


APPROVAL = Interrupt("approval", payload=Refund, response=Decision)


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def psycopg_conninfo(url: str) -> str:
    """A libpq URL from a SQLAlchemy-style one (``postgresql+asyncpg://`` -> ``postgresql://``)."""
    return re.sub(r"^postgres(?:ql)?(?:\+[a-z0-9_]+)?://", "postgresql://", url)


def postgresql_url() -> str:
    url = servers.variable("POSTGRESQL_URL")
    if not url:
        pytest.skip(f"{POSTGRESQL_ENV} is not set: no PostgreSQL server to test against")
    return psycopg_conninfo(url)


@attrs.define
class Effects:
    """Side effects the graphs' nodes cause, counted."""

    done: list[str] = attrs.Factory(list)
    fail_next: int = 0

    def count(self, what: str) -> int:
        return self.done.count(what)


def refund_node(effects: Effects, name: str) -> Callable[[State], dict[str, Any]]:
    def node(state: State) -> dict[str, Any]:
        decision = ask(APPROVAL, Refund(f"order-{name}", 1999))
        if effects.fail_next:
            effects.fail_next -= 1
            msg = "payment provider unavailable"
            raise RuntimeError(msg)
        effects.done.append(f"{name}:{decision.approved}")
        return {"log": [f"{name}:{decision.approved}"]}

    return node


def two_questions_node(effects: Effects) -> Callable[[State], dict[str, Any]]:
    def node(state: State) -> dict[str, Any]:
        first = ask("approval", Refund("order-first", 100), response=Decision)
        second = ask("approval", Refund("order-second", 200), response=Decision)
        effects.done.append(f"both:{first.approved}:{second.approved}")
        return {"log": [f"first:{first.approved}", f"second:{second.approved}"]}

    return node


@attrs.frozen
class Graphs:
    """Builders of the graphs the tests pause and resume."""

    saver: BaseCheckpointSaver[Any]
    effects: Effects

    def single(self) -> Pregel[Any, Any, Any, Any]:
        builder = StateGraph(State)
        builder.add_node("refund", refund_node(self.effects, "refund"))
        builder.add_edge(START, "refund")
        builder.add_edge("refund", END)
        return builder.compile(checkpointer=self.saver)

    def parallel(self) -> Pregel[Any, Any, Any, Any]:
        builder = StateGraph(State)
        for name in ("left", "right"):
            builder.add_node(name, refund_node(self.effects, name))
            builder.add_edge(START, name)
            builder.add_edge(name, END)
        return builder.compile(checkpointer=self.saver)

    def sequential(self) -> Pregel[Any, Any, Any, Any]:
        builder = StateGraph(State)
        builder.add_node("both", two_questions_node(self.effects))
        builder.add_edge(START, "both")
        builder.add_edge("both", END)
        return builder.compile(checkpointer=self.saver)

    def nested(self) -> Pregel[Any, Any, Any, Any]:
        inner = StateGraph(State)
        inner.add_node("refund", refund_node(self.effects, "inner"))
        inner.add_edge(START, "refund")
        inner.add_edge("refund", END)
        builder = StateGraph(State)
        builder.add_node("sub", inner.compile())
        builder.add_edge(START, "sub")
        builder.add_edge("sub", END)
        return builder.compile(checkpointer=self.saver)


def thread() -> dict[str, Any]:
    return {"configurable": {"thread_id": f"thread-{secrets.token_hex(6)}"}}


@contextlib.asynccontextmanager
async def postgresql_schema() -> AsyncIterator[str]:
    """Conninfo for a fresh schema on the test server (its ``search_path``); dropped after."""
    import psycopg

    shared = postgresql_url()
    schema = f"pt_lg_{secrets.token_hex(6)}"
    async with await psycopg.AsyncConnection.connect(shared, autocommit=True) as conn:
        await conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield psycopg.conninfo.make_conninfo(shared, options=f"-c search_path={schema}")
    finally:
        async with await psycopg.AsyncConnection.connect(shared, autocommit=True) as conn:
            await conn.execute(f"DROP SCHEMA {schema} CASCADE")
