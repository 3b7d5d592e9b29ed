"""``LangGraphCheckpoints``: a checkpoint reader over a compiled graph's own checkpointer."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, NoReturn

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from pausetoken.exceptions import (
    CheckpointLost,
    CheckpointNotFound,
    LangGraphMisconfigured,
    StaleToken,
)
from pausetoken.plugins import PendingInterrupt
from pausetoken_langgraph._ask import unwrap
from pausetoken_langgraph._langchain import langchain_value

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from langgraph.checkpoint.base import CheckpointTuple, PendingWrite
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.pregel import Pregel
    from langgraph.types import Interrupt as GraphInterrupt
    from psycopg import AsyncConnection

__all__ = ["LangGraphCheckpoints", "pending_interrupts"]

logger = logging.getLogger("pausetoken.langgraph")

# The channel names LangGraph persists in a checkpoint's pending writes. They are part of
# the stored format, so they are spelled out here instead of imported from LangGraph's
# private modules.
_INTERRUPT: Final = "__interrupt__"
_CONTROL_WRITES: Final = frozenset({_INTERRUPT, "__resume__", "__error__", "__error_source_node__"})
_NULL_TASK_ID: Final = "00000000-0000-0000-0000-000000000000"

# The head checkpoint of a thread's root namespace and its pending writes, in one statement
# (AsyncSqliteSaver.aget_tuple takes six trips to the connection's thread and decodes the
# whole checkpoint). It reads the tables langgraph-checkpoint-sqlite creates and only the
# columns every release has had.
_SQLITE_HEAD: Final = (
    "SELECT c.checkpoint_id, w.task_id, w.channel, w.type, w.value "
    "FROM (SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
    "ORDER BY checkpoint_id DESC LIMIT 1) AS c "
    "LEFT JOIN writes AS w ON w.thread_id = ? AND w.checkpoint_ns = '' "
    "AND w.checkpoint_id = c.checkpoint_id"
)

# The same on AsyncPostgresSaver, whose aget_tuple also gathers every channel's blob: the
# tables and columns langgraph-checkpoint-postgres creates (its migrations only add to them).
_POSTGRES_HEAD: Final = (
    "SELECT c.checkpoint_id, w.task_id, w.channel, w.type, w.blob "
    "FROM (SELECT checkpoint_id FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = '' "
    "ORDER BY checkpoint_id DESC LIMIT 1) AS c "
    "LEFT JOIN checkpoint_writes AS w ON w.thread_id = %s AND w.checkpoint_ns = '' "
    "AND w.checkpoint_id = c.checkpoint_id"
)

# The async methods a graph run with ainvoke and this reader call on the checkpointer.
_ASYNC_METHODS: Final = ("aget_tuple", "aput", "aput_writes")
_SYNC: Final = LangGraphMisconfigured.LANGGRAPH_SYNC_CHECKPOINTER

# The name LangGraph gives a compiled graph that was not named.
_DEFAULT_GRAPH_NAME: Final = "LangGraph"
# Claims are at most 512 characters long.
_MAX_NAMESPACE: Final = 512


def pending_interrupts(writes: Sequence[PendingWrite] | None) -> dict[str, GraphInterrupt]:
    """The interrupts of a checkpoint that still wait for an answer, by interrupt id.

    The rule is LangGraph's own (``aget_state(config).interrupts`` of the thread head): a
    task that recorded an output write finished, and its interrupts are answered; the
    interrupts of every other task are pending. Answering one of several interrupts does
    not create a new checkpoint, and the raw writes keep listing answered interrupts, so
    the writes must be read this way rather than scanned for ``__interrupt__``.

    Args:
        writes: The checkpoint's pending writes ``(task_id, channel, value)``.

    Returns:
        The pending interrupts in the order LangGraph recorded them.
    """
    asked: dict[str, list[GraphInterrupt]] = {}
    finished: set[str] = set()
    for task_id, channel, value in writes or ():
        if task_id == _NULL_TASK_ID:
            continue
        if channel == _INTERRUPT:
            found = value if isinstance(value, Sequence) else [value]
            asked.setdefault(task_id, []).extend(found)
        elif channel not in _CONTROL_WRITES:
            finished.add(task_id)
    return {
        item.id: item
        for task_id, items in asked.items()
        if task_id not in finished
        for item in items
    }


class LangGraphCheckpoints:
    """Reads a compiled LangGraph graph's checkpoints to refuse stale or foreign answers.

    The reader only reads: it fetches the thread's head checkpoint with the checkpointer's
    ``aget_tuple`` (one read, cheaper than ``aget_state``) and never writes into the
    checkpointer. On ``AsyncSqliteSaver`` the check at redemption reads the head's id and
    pending writes in one statement under the saver's lock instead (about a quarter of
    ``aget_tuple``, which makes six trips to the connection's thread and decodes the whole
    checkpoint), and on ``AsyncPostgresSaver`` (not in pipeline mode) likewise. A token binds
    the head checkpoint's id, LangGraph's interrupt id and the hash of the value LangGraph
    stored for that interrupt; redeeming it requires that the checkpoint is still the head and
    that the interrupt still waits for an answer.

    For an interrupt raised with [`ask()`][pausetoken_langgraph.ask] the stored value is
    the envelope's ``payload``; for LangChain's per-call tool approval it is the interrupt
    value with the ``allowed_decisions`` of its ``response_schema``; for any other
    interrupt it is the raw interrupt value.

    Unknown threads: with a checkpointer that keeps state in this process's memory
    (``InMemorySaver``) a thread the checkpointer does not know was either never created
    here or lost with a restart, and is answered with
    [`CheckpointLost`][pausetoken.exceptions.CheckpointLost] (424). With any other checkpointer it
    is
    [`CheckpointNotFound`][pausetoken.exceptions.CheckpointNotFound] (404). Pass ``persistent`` to
    override the guess for a checkpointer of your own.

    Tokens are bound to the graph: the reader's `namespace` goes into every token it
    binds, and a service reading another graph refuses them (``token_namespace_mismatch``),
    even when both graphs share one checkpointer.

    Args:
        graph: The compiled graph, with its checkpointer.
        persistent: Whether the checkpointer keeps state across processes (default:
            everything but ``InMemorySaver``).
        namespace: What names this graph in its tokens and store rows. Default: the
            graph's ``name`` when it was given one (``builder.compile(name="refunds")``),
            otherwise a digest of its node names. Give one explicitly to keep the tokens of
            a graph valid across deployments that add or rename nodes.

    Raises:
        ConfigurationError: the graph was compiled without a checkpointer
            (``langgraph_no_checkpointer``), or with a synchronous one such as
            ``SqliteSaver`` (``langgraph_sync_checkpointer``): the helpers run the graph
            with ``ainvoke``, so the checkpointer must implement the async methods.

    Examples:
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> from langgraph.graph import START, StateGraph
        >>> graph = (
        ...     StateGraph(dict)
        ...     .add_node("review", lambda state: state)
        ...     .add_edge(START, "review")
        ...     .compile(checkpointer=InMemorySaver(), name="refunds")
        ... )
        >>> checkpoints = LangGraphCheckpoints(graph)
        >>> checkpoints.namespace, checkpoints.persistent
        ('langgraph:refunds', False)

        The service then reads this graph's checkpoints:
        ``PauseTokens(signer=signer, store=store, checkpoints=checkpoints)``.
    """

    #: The checkpoint reader API this class implements, as a literal (see
    #: `pausetoken.plugins`).
    api_version: ClassVar[int] = 1

    def __init__(
        self,
        graph: Pregel[Any, Any, Any, Any],
        *,
        persistent: bool | None = None,
        namespace: str | None = None,
    ) -> None:
        """Create the reader; see the class docstring for the arguments."""
        saver = graph.checkpointer
        if not isinstance(saver, BaseCheckpointSaver):
            msg = (
                "the graph has no checkpointer of its own: compile it with one, for example "
                "builder.compile(checkpointer=AsyncSqliteSaver(...))"
            )
            raise LangGraphMisconfigured(msg, code=LangGraphMisconfigured.LANGGRAPH_NO_CHECKPOINTER)
        _refuse_sync_saver(saver)
        self.graph = graph
        #: The graph's name in its tokens' ``ns`` claim and pause keys.
        self.namespace = namespace if namespace is not None else graph_namespace(graph)
        self.saver: BaseCheckpointSaver[Any] = saver
        self.persistent = not isinstance(saver, InMemorySaver) if persistent is None else persistent
        #: The head's id and pending writes, or ``None`` for a thread the saver does not know.
        self._read_head: Callable[[str], Awaitable[tuple[str, list[PendingWrite]] | None]]
        sqlite, postgres = _async_sqlite_saver(saver), _async_postgres_saver(saver)
        if sqlite is not None:
            self._read_head = _SqliteHead(sqlite)
        elif postgres is not None:
            self._read_head = _PostgresHead(postgres, fallback=self._head_writes)
        else:
            self._read_head = self._head_writes

    @classmethod
    def from_url(cls, url: str, **options: Any) -> NoReturn:
        """Refuse to be built from settings: the reader needs the compiled graph.

        Raises:
            ConfigurationError: always; build the reader in code instead.
        """
        del url, options
        msg = (
            "the langgraph checkpoint reader needs the compiled graph: build it in code and "
            "pass it as PauseTokens(..., checkpoints=LangGraphCheckpoints(graph)) or "
            "PauseTokens.from_settings(settings, checkpoints=LangGraphCheckpoints(graph))"
        )
        raise LangGraphMisconfigured(msg, code=LangGraphMisconfigured.LANGGRAPH_NEEDS_GRAPH)

    async def head(self, thread_id: str) -> CheckpointTuple:
        """The thread's current (head) checkpoint with its pending writes.

        Raises:
            CheckpointNotFound: the (persistent) checkpointer does not know the thread.
            CheckpointLost: the in-memory checkpointer does not know the thread.
        """
        config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        try:
            found = await self.saver.aget_tuple(config)
        except NotImplementedError as exc:  # a saver that declares async methods it lacks
            raise LangGraphMisconfigured(_sync_saver_message(self.saver), code=_SYNC) from exc
        if found is None:
            self._unknown_thread()
        return found

    def _unknown_thread(self) -> NoReturn:
        if self.persistent:
            msg = "the checkpointer does not know the token's thread"
            raise CheckpointNotFound(msg)
        msg = (
            "the in-memory checkpointer does not know the token's thread: it was created "
            "in another process or lost when this one restarted"
        )
        raise CheckpointLost(msg)

    async def bind(
        self,
        *,
        thread_id: str,
        payload: Any,
        interrupt_id: str | None = None,
        checkpoint_id: str | None = None,
    ) -> PendingInterrupt:
        """At mint time: find the interrupt in the thread's head checkpoint.

        Args:
            thread_id: The run's thread.
            payload: The payload given to ``mint`` (compared by the service with the
                stored value this returns).
            interrupt_id: LangGraph's interrupt id (from ``result["__interrupt__"]``).
            checkpoint_id: The checkpoint the caller saw paused; it must still be the head.

        Returns:
            The pause, with the value LangGraph stored for the interrupt.

        Raises:
            ConfigurationError: no ``interrupt_id`` was given (LangGraph assigns them).
            CheckpointNotFound: the thread is unknown (persistent checkpointer).
            CheckpointLost: the thread is unknown (in-memory checkpointer).
            StaleToken: the thread moved on from ``checkpoint_id``, or the interrupt is not
                pending at the head.
        """
        del payload
        if interrupt_id is None:
            msg = (
                "LangGraph assigns interrupt ids: pass the id of the pending interrupt "
                "(or use mint_pending)"
            )
            raise LangGraphMisconfigured(
                msg, code=LangGraphMisconfigured.LANGGRAPH_INTERRUPT_ID_REQUIRED
            )
        head = await self.head(thread_id)
        head_id = _checkpoint_id(head)
        if checkpoint_id is not None and checkpoint_id != head_id:
            msg = "the thread has moved on from the given checkpoint"
            raise StaleToken(msg)
        return self._pending_in(head.pending_writes or (), thread_id, head_id, interrupt_id)

    async def pending(
        self, *, thread_id: str, checkpoint_id: str, interrupt_id: str
    ) -> PendingInterrupt:
        """At redeem time: the token's checkpoint is the head and its interrupt pending.

        Returns:
            The pause, with the value LangGraph stored for the interrupt.

        Raises:
            CheckpointNotFound: the thread is unknown (persistent checkpointer).
            CheckpointLost: the thread is unknown (in-memory checkpointer).
            StaleToken: the thread moved on, or the interrupt was answered.
        """
        found = await self._read_head(thread_id)
        if found is None:
            self._unknown_thread()
        head_id, writes = found
        # Compare the returned id: some checkpointers answer a lookup with the head.
        if head_id != checkpoint_id:
            msg = "the thread has moved on to another checkpoint"
            raise StaleToken(msg)
        return self._pending_in(writes, thread_id, head_id, interrupt_id)

    async def _head_writes(self, thread_id: str) -> tuple[str, list[PendingWrite]]:
        head = await self.head(thread_id)
        return _checkpoint_id(head), list(head.pending_writes or ())

    def _pending_in(
        self, writes: Sequence[PendingWrite], thread_id: str, head_id: str, interrupt_id: str
    ) -> PendingInterrupt:
        found = pending_interrupts(writes).get(interrupt_id)
        if found is None:
            msg = "the interrupt is not pending at the thread's current checkpoint"
            raise StaleToken(msg)
        return PendingInterrupt(thread_id, head_id, interrupt_id, stored_value(found))

    async def aclose(self) -> None:
        """Nothing to release: the graph and its checkpointer belong to the application."""


def graph_namespace(graph: Pregel[Any, Any, Any, Any]) -> str:
    """The namespace a graph's tokens carry: its given name, else a digest of its nodes."""
    name = getattr(graph, "name", None)
    if isinstance(name, str) and name and name != _DEFAULT_GRAPH_NAME:
        return f"langgraph:{name}"[:_MAX_NAMESPACE]
    nodes = "\x00".join(sorted(str(node) for node in graph.nodes))
    return "langgraph-nodes:" + hashlib.sha256(nodes.encode("utf-8", "surrogatepass")).hexdigest()


def stored_value(found: GraphInterrupt) -> Any:
    """The value a token binds for a LangGraph interrupt.

    The envelope's payload for a pause raised with ``ask()``; for LangChain's per-call tool
    approval, its value with the decisions its ``response_schema`` allows; otherwise the
    interrupt's value.
    """
    name, payload = unwrap(found.value)
    return payload if name is not None else langchain_value(found)


def _refuse_sync_saver(saver: BaseCheckpointSaver[Any]) -> None:
    """Refuse a checkpointer without the async methods ``ainvoke`` and the reader call.

    A synchronous saver (``SqliteSaver``, ``PostgresSaver``) inherits them from
    ``BaseCheckpointSaver``, whose versions raise ``NotImplementedError``; it would fail
    only later, halfway through a redemption.
    """
    lacking = [
        name
        for name in _ASYNC_METHODS
        if getattr(type(saver), name, None) is getattr(BaseCheckpointSaver, name)
    ]
    if lacking:
        msg = f"{_sync_saver_message(saver)} (it does not implement {', '.join(lacking)})"
        raise LangGraphMisconfigured(msg, code=_SYNC)


def _sync_saver_message(saver: BaseCheckpointSaver[Any]) -> str:
    return (
        f"the graph's checkpointer {type(saver).__name__} is synchronous; resume() and "
        "mint_pending() run the graph with ainvoke and read it with aget_tuple: compile it "
        "with an async saver (AsyncSqliteSaver, AsyncPostgresSaver or InMemorySaver)"
    )


def _checkpoint_id(head: CheckpointTuple) -> str:
    return str(head.config["configurable"]["checkpoint_id"])


def _async_sqlite_saver(saver: BaseCheckpointSaver[Any]) -> AsyncSqliteSaver | None:
    """``saver`` if it is exactly ``AsyncSqliteSaver`` (a subclass may store differently)."""
    try:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver  # noqa: PLC0415
    except ImportError:  # the sqlite extra is not installed: no such saver can exist
        return None
    return saver if type(saver) is AsyncSqliteSaver else None


def _async_postgres_saver(saver: BaseCheckpointSaver[Any]) -> AsyncPostgresSaver | None:
    """``saver`` if it is exactly ``AsyncPostgresSaver`` (a subclass may store differently)."""
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver  # noqa: PLC0415
    except ImportError:  # the postgres extra is not installed: no such saver can exist
        return None
    return saver if type(saver) is AsyncPostgresSaver else None


class _PostgresHead:
    """The head of a thread on ``AsyncPostgresSaver`` in one statement.

    Read as the saver reads: under its lock, on its connection or one from its pool. A saver
    in pipeline mode is read with ``aget_tuple`` (``fallback``), which handles the pipeline.
    Only interrupt values are decoded, as on `_SqliteHead`.
    """

    def __init__(
        self,
        saver: AsyncPostgresSaver,
        *,
        fallback: Callable[[str], Awaitable[tuple[str, list[PendingWrite]] | None]],
    ) -> None:
        # Installed with the saver; imported once here rather than on every redemption.
        from psycopg import AsyncConnection  # noqa: PLC0415
        from psycopg.rows import tuple_row  # noqa: PLC0415

        self.saver = saver
        self.fallback = fallback
        self._single_connection = AsyncConnection
        self._tuple_row = tuple_row

    async def __call__(self, thread_id: str) -> tuple[str, list[PendingWrite]] | None:
        saver = self.saver
        if saver.pipe is not None:
            return await self.fallback(thread_id)
        async with saver.lock:
            if isinstance(saver.conn, self._single_connection):
                rows = await self._rows(saver.conn, thread_id)
            else:
                async with saver.conn.connection() as conn:
                    rows = await self._rows(conn, thread_id)
        return _head_of(rows, saver.serde.loads_typed)

    async def _rows(self, conn: AsyncConnection[Any], thread_id: str) -> list[tuple[Any, ...]]:
        async with conn.cursor(binary=True, row_factory=self._tuple_row) as cursor:
            await cursor.execute(_POSTGRES_HEAD, (thread_id, thread_id), binary=True)
            return await cursor.fetchall()


class _SqliteHead:
    """The head of a thread on ``AsyncSqliteSaver`` in one trip to its connection.

    It holds the saver's lock, as the saver's own reads do, so it never sees a write the
    saver has made on the shared connection but not yet committed. Only interrupt values
    are decoded; the rule in `pending_interrupts()` needs nothing else.
    """

    def __init__(self, saver: AsyncSqliteSaver) -> None:
        self.saver = saver

    async def __call__(self, thread_id: str) -> tuple[str, list[PendingWrite]] | None:
        saver = self.saver
        await saver.setup()
        async with saver.lock:
            rows = list(await saver.conn.execute_fetchall(_SQLITE_HEAD, (thread_id, thread_id)))
        return _head_of(rows, saver.serde.loads_typed)


def _head_of(
    rows: Sequence[Sequence[Any]], loads: Callable[[tuple[str, bytes]], Any]
) -> tuple[str, list[PendingWrite]] | None:
    """The head's id and pending writes from the rows of a one-statement head read.

    Rows are (checkpoint id, task id, channel, type, value), the task ``None`` for a head
    without writes. Only interrupt values are decoded: `pending_interrupts()` needs no other.
    """
    if not rows:
        return None
    writes: list[PendingWrite] = [
        (task_id, channel, loads((kind, bytes(value))) if channel == _INTERRUPT else None)
        for _, task_id, channel, kind, value in rows
        if task_id is not None
    ]
    return str(rows[0][0]), writes
