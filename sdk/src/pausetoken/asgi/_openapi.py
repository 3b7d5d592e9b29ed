"""The OpenAPI 3.1 description of the resume router's routes.

It describes what the router does, refusals included: each problem response lists the codes
it may carry (``x-pausetoken-codes``, read from the error classes), each path says what other
methods get, and a rule JSON Schema cannot state (the token in exactly one place, strict
JSON) is stated in words where the request is described.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, Final

from pausetoken import exceptions
from pausetoken.asgi._body import DEFAULT_MAX_BODY_BYTES, MAX_BODY_DEPTH

if TYPE_CHECKING:
    from pausetoken.exceptions import PauseTokenError

__all__ = ["CSRF_HEADER", "openapi_document"]

#: The header carrying the approval page's signed anti-forgery value.
CSRF_HEADER: Final = "X-Pausetoken-CSRF"

_PROBLEM: Final = {
    "type": "object",
    "description": "RFC 9457 problem details; clients ignore members they do not know.",
    "required": ["type", "title", "status", "detail", "code"],
    "properties": {
        "type": {"type": "string", "description": "urn:pausetoken:error:<code>"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "code": {"type": "string", "description": "A stable code; see the Errors page."},
        "retry_after": {"type": "number", "description": "redemption_in_progress only"},
        "field": {"type": "string", "description": "invalid_response only"},
    },
}

_ANSWERED: Final = {
    "type": "object",
    "required": ["replayed", "result"],
    "properties": {
        "replayed": {
            "type": "boolean",
            "description": "The answer had been committed before; the run was not resumed again.",
        },
        "result": {"description": "What the application's resume function returned."},
    },
    "additionalProperties": False,
}

_DESCRIBED: Final = {
    "type": "object",
    "required": ["name", "payload", "expires_at"],
    "properties": {
        "name": {"type": "string", "description": "The registered interrupt's name."},
        "payload": {"description": "What the pause shows, as the runtime stored it."},
        "expires_at": {"type": "string", "format": "date-time"},
    },
    "additionalProperties": False,
}

_E = exceptions
# What refuses a request before its token is looked at: the router reading it.
_READING: Final = (_E.NotAuthenticated, _E.UnsupportedMediaType, _E.RequestTooLarge)
# What a redemption may refuse with (the application's resume function redeems).
_REDEEMING: Final = (
    _E.InvalidToken,
    _E.TokenExpired,
    _E.TokenRevoked,
    _E.ScopeMismatch,
    _E.PrincipalMismatch,
    _E.UnknownInterrupt,
    _E.InvalidResponse,
    _E.PayloadMismatch,
    _E.CheckpointNotFound,
    _E.CheckpointLost,
    _E.StaleToken,
    _E.AlreadyRedeemed,
    _E.RedemptionInProgress,
    _E.LeaseLost,
    _E.StoreUnavailable,
    _E.CommitUnconfirmed,
)
# What describing a pause may refuse with: redeeming's checks before its claim, and a
# pause that is settled or being answered; not what only an answer (its type) or a held
# claim (its lease, its commit) brings.
_DESCRIBING: Final = tuple(
    error
    for error in _REDEEMING
    if error not in {_E.InvalidResponse, _E.LeaseLost, _E.CommitUnconfirmed}
)
# The router's own faults: the application's functions failed or returned something else.
_FAULTS: Final = (
    "configuration_error",
    "pausetoken_error",
    "resume_failed",
    "resume_result_invalid",
)
_REQUEST_SHAPE: Final = ("request_invalid", "request_json_invalid")
_STATUS_TEXT: Final = {
    "400": "The request or the pause cannot be answered as it stands; do not retry.",
    "401": "Not authenticated, or the token is damaged, forged or for another service.",
    "403": "This caller may not answer this pause (or the request is not the page's own).",
    "404": "The pause is gone.",
    "409": "Being answered (retry after Retry-After), answered already, or stale.",
    "410": "The token expired or the pause was revoked.",
    "413": "The body is longer than the router reads.",
    "415": "The body is not declared as application/json.",
    "422": "The answer does not fit the registered response type; correct it (see field).",
    "424": "The run's checkpoint is lost; it cannot be resumed.",
    "500": (
        "The service failed: the application's functions, or a commit not confirmed "
        "(then do not send the answer again). A configuration error may carry a more "
        "specific code (see the Errors page)."
    ),
    "503": "The token store is unavailable; retry later with the same request.",
}
_HEADERS: Final = {
    "401": {
        "WWW-Authenticate": {
            "description": "PauseToken for a refused token, Bearer for not_authenticated.",
            "schema": {"type": "string"},
        }
    },
    "409": {
        "Retry-After": {
            "description": "redemption_in_progress: seconds until the other claim ends.",
            "schema": {"type": "integer", "minimum": 1},
        }
    },
}


def _codes(classes: tuple[type[PauseTokenError], ...], *extra: str) -> dict[str, list[str]]:
    """The codes each status may carry: every code of ``classes``, and ``extra`` ones."""
    found: defaultdict[str, set[str]] = defaultdict(set)
    for error in classes:
        found[str(error.http_status)].update(error.codes)
    for code in extra:
        status = "500" if code in _FAULTS else "400"
        found[status].add(code)
    return {status: sorted(codes) for status, codes in sorted(found.items())}


def _problems(codes: dict[str, list[str]], *, html: bool = False) -> dict[str, Any]:
    problem: dict[str, Any] = {
        "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}
    }
    if html:  # the page's refusal, for a person's browser
        problem["text/html"] = {"schema": {"type": "string"}}
    responses: dict[str, Any] = {}
    for status, listed in codes.items():
        responses[status] = {
            "description": f"{_STATUS_TEXT[status]} Codes: {', '.join(listed)}.",
            "content": problem,
            "x-pausetoken-codes": listed,
        }
        if status in _HEADERS:
            responses[status]["headers"] = _HEADERS[status]
    return responses


def _json_responses(
    description: str,
    schema: dict[str, Any],
    refusals: tuple[type[PauseTokenError], ...],
    *faults: str,
) -> dict[str, Any]:
    """A JSON route's responses: 200 with ``schema``, or a problem with one of its codes.

    Every such route reads a JSON body and refuses a token in the URL, besides ``refusals``
    and the router's own ``faults``.
    """
    return {
        "200": {"description": description, "content": {"application/json": {"schema": schema}}},
        **_problems(_codes(refusals, *_REQUEST_SHAPE, "token_in_url", *faults)),
    }


def _json_body(schema: dict[str, Any], limit: int) -> dict[str, Any]:
    return {
        "required": True,
        "description": (
            f"At most {limit} bytes (413 otherwise), declared as application/json (415 "
            f"otherwise): UTF-8 JSON without duplicate members, NaN or Infinity, nested at "
            f"most {MAX_BODY_DEPTH} levels (400 request_json_invalid otherwise)."
        ),
        "content": {"application/json": {"schema": schema}},
    }


_TOKEN: Final = {"type": "string", "minLength": 1}
_ONE_PLACE: Final = (
    "The token travels in exactly one place: the Pause-Token header or the body's token "
    "member, never both (400 request_invalid), and never in the URL: a query string naming "
    "token, pause_token, pause-token or access_token is refused (400 token_in_url)."
)


def _answer_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["answer"],
        "properties": {
            "token": {**_TOKEN, "description": "The pause token, unless it is in the header."},
            "answer": {"description": "The answer, in the registered response type's shape."},
        },
        "additionalProperties": False,
    }


def _token_header() -> dict[str, Any]:
    return {
        "name": "Pause-Token",
        "in": "header",
        "required": False,
        "description": "The pause token, when the body has no token member (never both).",
        "schema": _TOKEN,
    }


def _page_headers() -> list[dict[str, Any]]:
    return [
        {
            "name": CSRF_HEADER,
            "in": "header",
            "required": True,
            "description": (
                "The anti-forgery value of the served page (403 csrf_invalid when missing, "
                "forged or older than the page's lifetime)."
            ),
            "schema": {"type": "string", "minLength": 1},
        },
        {
            "name": "Origin",
            "in": "header",
            "required": True,
            "description": (
                "The page's origin: the router's own (the request's scheme and host) or one "
                "of its allowed_origins (403 origin_refused otherwise)."
            ),
            "schema": {"type": "string", "minLength": 1},
        },
        {
            "name": "Sec-Fetch-Site",
            "in": "header",
            "required": False,
            "description": "Sent by browsers; any value but same-origin is 403 origin_refused.",
            "schema": {"type": "string", "enum": ["same-origin"]},
        },
    ]


def _methods(*allowed: str) -> str:
    names = ", ".join(allowed)
    return f"Other methods are answered 405 Method Not Allowed, with an Allow header: {names}."


def _page_paths(limit: int) -> dict[str, Any]:
    text = {"description": "The page.", "content": {"text/html": {"schema": {"type": "string"}}}}
    token_only = {
        "type": "object",
        "required": ["token"],
        "properties": {"token": _TOKEN},
        "additionalProperties": False,
    }
    page_refusals = (*_READING, _E.RequestForbidden)
    return {
        "/approve": {
            "description": (
                "The approval page; its script, style sheet and icon are served beside it "
                "(page.js, page.css, icon.svg). " + _methods("GET", "HEAD")
            ),
            "get": {
                "operationId": "approvalPage",
                "summary": "The approval page; the link carries the token as #token=...",
                "description": (
                    "The token travels in the link's fragment, which browsers never send; a "
                    "query string naming a token is refused (400 token_in_url): with a page "
                    "that says so, without the token, for a browser (Accept: text/html), "
                    "with the problem for any other client."
                ),
                "responses": {"200": text, **_problems({"400": ["token_in_url"]}, html=True)},
            },
        },
        "/approve/describe": {
            "description": _methods("POST"),
            "post": {
                "operationId": "describePause",
                "summary": "What a token asks: verified and read, nothing changed.",
                "description": (
                    "The token travels in the body, never in the URL: a query string naming "
                    "a token is refused (400 token_in_url)."
                ),
                "parameters": _page_headers(),
                "requestBody": _json_body(token_only, limit),
                "responses": _json_responses(
                    "The pending pause.", _DESCRIBED, (*page_refusals, *_DESCRIBING), _FAULTS[0]
                ),
            },
        },
        "/approve/answer": {
            "description": _methods("POST"),
            "post": {
                "operationId": "answerFromPage",
                "summary": "The approval page's answer: redeemed and the run resumed, once.",
                "description": (
                    "The token travels in exactly one place: the Pause-Token header or the "
                    "body's token member, never both (400 request_invalid), and never in the "
                    "URL (400 token_in_url)."
                ),
                "parameters": [*_page_headers(), _token_header()],
                "requestBody": _json_body(_answer_schema(), limit),
                "responses": _json_responses(
                    "Accepted.", _ANSWERED, (*page_refusals, *_REDEEMING), *_FAULTS
                ),
            },
        },
    }


def openapi_document(
    *, approval_page: bool = True, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
) -> dict[str, Any]:
    """The OpenAPI 3.1 description of the resume router's routes.

    Paths are relative to where the router is mounted; authentication is the
    application's and is not described.

    Args:
        approval_page: Describe the approval page's routes too.
        max_body_bytes: The body limit the router was built with.

    Returns:
        The OpenAPI document, ready for ``json.dumps``.
    """
    paths: dict[str, Any] = {
        "/resume": {
            "description": _methods("POST"),
            "post": {
                "operationId": "resume",
                "summary": "Redeem a token with an answer and resume the run, exactly once.",
                "description": (
                    f"{_ONE_PLACE} A retry with the same answer answers 200 with "
                    "replayed=true; 409 redemption_in_progress carries Retry-After."
                ),
                "parameters": [_token_header()],
                "requestBody": _json_body(_answer_schema(), max_body_bytes),
                "responses": _json_responses(
                    "Accepted: the run resumed (or had, for a retry).",
                    _ANSWERED,
                    (*_READING, *_REDEEMING),
                    *_FAULTS,
                ),
            },
        },
        "/openapi.json": {
            "description": _methods("GET", "HEAD"),
            "get": {
                "operationId": "openapi",
                "summary": "This description.",
                "responses": {
                    "200": {
                        "description": "The OpenAPI document.",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    }
                },
            },
        },
    }
    if approval_page:
        paths.update(_page_paths(max_body_bytes))
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "pausetoken resume router",
            "version": "1",
            "description": (
                "Answers to paused runs, redeemed exactly once. Authentication is the "
                "application's and is not described here: a request it refuses is 401 "
                "not_authenticated. Every refusal is an RFC 9457 problem whose code is "
                "listed with its status (x-pausetoken-codes)."
            ),
        },
        "paths": paths,
        "components": {"schemas": {"Problem": _PROBLEM}},
    }
