"""The OpenAPI 3.1 description of the resume router's routes."""

from __future__ import annotations

from typing import Any, Final

from pausetoken._asgi_body import DEFAULT_MAX_BODY_BYTES

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

# Every refusal the routes may answer with: the pausetoken errors' statuses.
_REFUSALS: Final = ("400", "401", "403", "404", "409", "410", "413", "415", "422", "424", "500")


def _problems(statuses: tuple[str, ...]) -> dict[str, Any]:
    problem = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
    responses: dict[str, Any] = {
        status: {"description": "Refused: see the problem's code.", "content": problem}
        for status in statuses
    }
    responses["503"] = {
        "description": "The token store is unavailable; retry later with the same request.",
        "content": problem,
    }
    return responses


def _json_body(schema: dict[str, Any], limit: int) -> dict[str, Any]:
    return {
        "required": True,
        "description": f"At most {limit} bytes.",
        "content": {"application/json": {"schema": schema}},
    }


def _answer_schema(*, token_required: bool) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["token", "answer"] if token_required else ["answer"],
        "properties": {
            "token": {"type": "string", "description": "The pause token (or in the header)."},
            "answer": {"description": "The answer, in the registered response type's shape."},
        },
        "additionalProperties": False,
    }


def _csrf_header() -> dict[str, Any]:
    return {
        "name": CSRF_HEADER,
        "in": "header",
        "required": True,
        "description": "The anti-forgery value of the served page; requests must be same-origin.",
        "schema": {"type": "string"},
    }


def _page_paths(limit: int) -> dict[str, Any]:
    text = {"description": "The page.", "content": {"text/html": {"schema": {"type": "string"}}}}
    token_only = {
        "type": "object",
        "required": ["token"],
        "properties": {"token": {"type": "string"}},
        "additionalProperties": False,
    }
    return {
        "/approve": {
            "get": {
                "operationId": "approvalPage",
                "summary": "The approval page; the link carries the token as #token=...",
                "responses": {"200": text},
            }
        },
        "/approve/describe": {
            "post": {
                "operationId": "describePause",
                "summary": "What a token asks: verified and read, nothing changed.",
                "parameters": [_csrf_header()],
                "requestBody": _json_body(token_only, limit),
                "responses": {
                    "200": {
                        "description": "The pending pause.",
                        "content": {"application/json": {"schema": _DESCRIBED}},
                    },
                    **_problems(_REFUSALS),
                },
            }
        },
        "/approve/answer": {
            "post": {
                "operationId": "answerFromPage",
                "summary": "The approval page's answer: redeemed and the run resumed, once.",
                "parameters": [_csrf_header()],
                "requestBody": _json_body(_answer_schema(token_required=True), limit),
                "responses": {
                    "200": {
                        "description": "Accepted.",
                        "content": {"application/json": {"schema": _ANSWERED}},
                    },
                    **_problems(_REFUSALS),
                },
            }
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
            "post": {
                "operationId": "resume",
                "summary": "Redeem a token with an answer and resume the run, exactly once.",
                "description": (
                    "The token travels in the Pause-Token header or the body's token member, "
                    "never in the URL. A retry with the same answer answers 200 with "
                    "replayed=true; 409 redemption_in_progress carries Retry-After."
                ),
                "parameters": [
                    {
                        "name": "Pause-Token",
                        "in": "header",
                        "required": False,
                        "description": "The pause token, when the body has no token member.",
                        "schema": {"type": "string"},
                    }
                ],
                "requestBody": _json_body(_answer_schema(token_required=False), max_body_bytes),
                "responses": {
                    "200": {
                        "description": "Accepted: the run resumed (or had, for a retry).",
                        "content": {"application/json": {"schema": _ANSWERED}},
                    },
                    **_problems(_REFUSALS),
                },
            }
        },
        "/openapi.json": {
            "get": {
                "operationId": "openapi",
                "summary": "This description.",
                "responses": {
                    "200": {
                        "description": "The OpenAPI document.",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    }
                },
            }
        },
    }
    if approval_page:
        paths.update(_page_paths(max_body_bytes))
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "pausetoken resume router",
            "version": "1",
            "description": "Answers to paused runs, redeemed exactly once.",
        },
        "paths": paths,
        "components": {"schemas": {"Problem": _PROBLEM}},
    }
