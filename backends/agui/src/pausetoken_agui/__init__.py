"""AG-UI integration for pausetoken.

An AG-UI agent that ends a run with interrupts gets one token per interrupt, carried in
``Interrupt.metadata["pausetoken"]`` with ``expiresAt`` and ``responseSchema`` from the
kind (`AgUi.pause`). When the client resumes, each ``ResumeEntry`` brings the token back in
its own metadata; `AgUi.resume` verifies it, checks that it names the entry's
``interruptId`` and binds the entry's status and payload, redeems it exactly once and runs
the agent under the claim. `ThreadCheckpoints` is the checkpoint reader over the threads'
states (`ThreadStates`); `run_error` turns a refusal into a ``RunErrorEvent``.
"""

from __future__ import annotations

from pausetoken_agui._adapter import (
    AgUi,
    Answer,
    Ask,
    Outcome,
    Resumption,
    proof_of,
    to_interrupt,
)
from pausetoken_agui._errors import (
    METADATA_KEY,
    ProofForAnotherInterrupt,
    ProofForAnotherThread,
    ProofRefused,
    run_error,
)
from pausetoken_agui._kinds import Resumable, Status
from pausetoken_agui._reader import ThreadCheckpoints
from pausetoken_agui._schemas import approval_schema, questions_schema, type_schema
from pausetoken_agui._threads import (
    KEPT_OUTCOMES,
    Answered,
    MemoryThreadStates,
    SQLThreadStates,
    ThreadState,
    ThreadStates,
    Waiting,
)

__all__ = [
    "KEPT_OUTCOMES",
    "METADATA_KEY",
    "AgUi",
    "Answer",
    "Answered",
    "Ask",
    "MemoryThreadStates",
    "Outcome",
    "ProofForAnotherInterrupt",
    "ProofForAnotherThread",
    "ProofRefused",
    "Resumable",
    "Resumption",
    "SQLThreadStates",
    "Status",
    "ThreadCheckpoints",
    "ThreadState",
    "ThreadStates",
    "Waiting",
    "approval_schema",
    "proof_of",
    "questions_schema",
    "run_error",
    "to_interrupt",
    "type_schema",
]
