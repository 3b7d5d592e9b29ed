"""LangGraph integration for pausetoken.

Inside a node, `ask()` pauses the run with a small envelope around ``interrupt()``.
After the run returned paused, `mint_pending()` mints one token per pending interrupt,
bound to the thread, the head checkpoint, LangGraph's interrupt id and the stored payload.
`resume()` redeems a token in two phases and resumes the run exactly once.
`LangGraphCheckpoints` is the checkpoint reader the service uses for all of this.
`register_langchain()` lets the same functions handle the interrupts of LangChain's
``HumanInTheLoopMiddleware`` (``create_agent``), with no envelope.
"""

from __future__ import annotations

from pausetoken_langgraph._ask import ENVELOPE_VERSION, ask, envelope, unwrap
from pausetoken_langgraph._langchain import (
    LANGCHAIN_BATCHED,
    LANGCHAIN_PER_CALL,
    register_langchain,
)
from pausetoken_langgraph._reader import LangGraphCheckpoints, pending_interrupts
from pausetoken_langgraph._resume import PendingPause, Resumed, mint_pending, resume

__all__ = [
    "ENVELOPE_VERSION",
    "LANGCHAIN_BATCHED",
    "LANGCHAIN_PER_CALL",
    "LangGraphCheckpoints",
    "PendingPause",
    "Resumed",
    "ask",
    "envelope",
    "mint_pending",
    "pending_interrupts",
    "register_langchain",
    "resume",
    "unwrap",
]
