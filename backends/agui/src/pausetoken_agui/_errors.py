"""The adapter's own refusal, and every pausetoken error as an AG-UI ``RunErrorEvent``."""

from __future__ import annotations

from typing import Any, Final

from ag_ui.core import RunErrorEvent

from pausetoken.exceptions import (
    Code,
    InvalidResponse,
    InvalidToken,
    PauseTokenError,
    RedemptionInProgress,
)

__all__ = [
    "METADATA_KEY",
    "ProofForAnotherInterrupt",
    "ProofForAnotherThread",
    "ProofRefused",
    "run_error",
]

#: The key of pausetoken's member in AG-UI metadata objects (``Interrupt.metadata``,
#: ``ResumeEntry.metadata``, ``RunErrorEvent.metadata``, ``RunFinishedEvent.metadata``).
#: AG-UI reserves ``"ag-ui"`` for itself; every other key is the application's.
METADATA_KEY: Final = "pausetoken"


class ProofRefused(InvalidToken):
    """A resume entry's proof does not belong to it: missing, or minted for another entry.

    An `InvalidToken` (401), so code that handles forged tokens handles these too. Raised
    before anything is claimed. The class itself says the proof is missing; its subclasses
    `ProofForAnotherInterrupt` and `ProofForAnotherThread` carry the other two codes.
    """

    AGUI_PROOF_MISSING = Code('A resume entry has no token in metadata["pausetoken"]["token"].')
    AGUI_INTERRUPT_MISMATCH = Code(
        "A resume entry's token was minted for another interrupt than its interruptId."
    )
    AGUI_THREAD_MISMATCH = Code(
        "A resume entry's token was minted for another thread than the run's threadId."
    )
    action = (
        'Answer 401: send each interrupt\'s metadata["pausetoken"] back unchanged in the '
        "resume entry that answers it, on the same thread."
    )
    default_detail = "The resume entry carries no pausetoken proof."
    title = "Resume entry refused"


class ProofForAnotherInterrupt(ProofRefused):
    """A resume entry's token was minted for another interrupt than its ``interruptId``."""

    default_code = str(ProofRefused.AGUI_INTERRUPT_MISMATCH)
    default_detail = "The resume entry's token was minted for another interrupt."


class ProofForAnotherThread(ProofRefused):
    """A resume entry's token was minted for another thread than the run's ``threadId``."""

    default_code = str(ProofRefused.AGUI_THREAD_MISMATCH)
    default_detail = "The resume entry's token was minted for another thread."


def run_error(error: PauseTokenError) -> RunErrorEvent:
    """The ``RunErrorEvent`` that ends a run refused by pausetoken.

    ``message`` is the error's ``detail`` and ``code`` its stable code; ``metadata``
    holds the HTTP status a server would answer with and, where the error has them, the
    offending field of the answer (``InvalidResponse.field``) and the seconds to wait
    before retrying (``RedemptionInProgress.retry_after``). pausetoken's details never
    contain a token, a payload or an answer, so neither does the event.

    Examples:
        >>> from pausetoken.exceptions import ScopeMismatch
        >>> event = run_error(ScopeMismatch())
        >>> event.code, event.metadata
        ('scope_mismatch', {'pausetoken': {'status': 403}})
    """
    details: dict[str, Any] = {"status": error.http_status}
    if isinstance(error, InvalidResponse) and error.field is not None:
        details["field"] = error.field
    if isinstance(error, RedemptionInProgress) and error.retry_after is not None:
        details["retryAfter"] = error.retry_after
    return RunErrorEvent(message=error.detail, code=error.code, metadata={METADATA_KEY: details})
