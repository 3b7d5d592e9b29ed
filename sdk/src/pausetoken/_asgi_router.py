"""The resume router: ``POST /resume``, the OpenAPI description and the approval page."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.responses import JSONResponse, Response
from starlette.routing import Route, Router

from pausetoken._asgi_body import DEFAULT_MAX_BODY_BYTES
from pausetoken._asgi_endpoints import Endpoints
from pausetoken._asgi_openapi import openapi_document
from pausetoken._asgi_page import page_routes
from pausetoken.exceptions import ConfigurationError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from starlette.requests import Request

    from pausetoken._asgi_endpoints import Caller, ResumeRequest, ResumeResult
    from pausetoken._service import PauseTokens

__all__ = ["resume_router"]


def resume_router(
    tokens: PauseTokens,
    *,
    authenticate: Callable[[Request], Awaitable[Caller]],
    resume: Callable[[ResumeRequest], Awaitable[ResumeResult]],
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    approval_page: bool = True,
    page_title: str = "Approval request",
    page_secret: bytes | None = None,
    page_lifetime: float = 3600.0,
    allowed_origins: Sequence[str] = (),
) -> Router:
    """The router an application mounts to take answers over HTTP.

    Routes, relative to where it is mounted:

    * ``POST /resume``: the token (``Pause-Token`` header or body ``token``) and the
      body's ``answer``; 200 with ``{"replayed": ..., "result": ...}``, or a problem.
    * ``GET /openapi.json``: the OpenAPI description of these routes.
    * With ``approval_page``: ``GET /approve`` (the page, opened with
      ``#token=...`` in the link), its script and style sheet, and the two requests the
      page makes, ``POST /approve/describe`` and ``POST /approve/answer``.

    Args:
        tokens: The service; the page reads pending payloads through its checkpoint reader.
        authenticate: Tells the caller's scope and principal from the request (a session,
            an API key: never the body); raises
            [`NotAuthenticated`][pausetoken.exceptions.NotAuthenticated] for a stranger.
        resume: Redeems the token with the answer and resumes the run, for example with
            ``pausetoken_langgraph.resume`` or ``tokens.consume``; returns a
            [`ResumeResult`][pausetoken.asgi.ResumeResult].
        max_body_bytes: The longest body read; longer ones are refused before parsing.
        approval_page: Serve the approval page.
        page_title: The page's heading.
        page_secret: At least 32 bytes that sign the page's anti-forgery values; give every
            worker process the same one. Default: random, for this process only.
        page_lifetime: Seconds a served page may still answer.
        allowed_origins: Origins (``https://app.example``) the page's requests may come
            from, when a proxy in front changes the scheme or host; default: the
            request's own.

    Returns:
        A Starlette router: mount it (``Mount("/pauses", app=router)``) or serve it as is.

    Raises:
        ConfigurationError: ``max_body_bytes`` below 4096, a short ``page_secret`` or a
            lifetime that is not positive.
    """
    if not 4096 <= max_body_bytes <= 16 * 1024 * 1024:  # noqa: PLR2004
        msg = "max_body_bytes must be from 4096 (a token fits) to 16 MiB"
        raise ConfigurationError(msg, code="settings_invalid")
    endpoints = Endpoints(tokens, authenticate, resume, max_body_bytes)
    document = openapi_document(approval_page=approval_page, max_body_bytes=max_body_bytes)

    async def get_openapi(_request: Request) -> Response:
        return JSONResponse(document)

    routes = [
        Route("/resume", endpoints.post_resume, methods=["POST"], name="pausetoken_resume"),
        Route("/openapi.json", get_openapi, methods=["GET"], name="pausetoken_openapi"),
    ]
    if approval_page:
        routes += page_routes(
            endpoints,
            title=page_title,
            secret=page_secret,
            lifetime=page_lifetime,
            allowed_origins=allowed_origins,
        )
    return Router(routes=routes)
