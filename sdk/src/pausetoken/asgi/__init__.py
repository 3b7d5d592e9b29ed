"""HTTP for pausetoken: a Starlette router that takes answers and serves the approval page.

Install the ``http`` extra (``pip install "pausetoken[http]"``). The application mounts
the router and gives it two functions: ``authenticate`` tells who sent a request (from its
session or API key, never from its body) and ``resume`` redeems the answer and resumes the
run. Every refusal is an RFC 9457 problem response with the error's status and code.

A whole application (the HTTP page of the documentation runs a complete one)::

    from starlette.applications import Starlette
    from starlette.routing import Mount

    from pausetoken.asgi import Caller, ResumeResult, resume_router


    async def authenticate(request):
        return Caller(Scope("acme"), principal="alice")  # from the session, really


    async def resume(request):
        done = await tokens.consume(request.token, request.answer, scope=request.scope)
        return ResumeResult({"status": "resumed"}, replayed=done.replayed)


    router = resume_router(tokens, authenticate=authenticate, resume=resume)
    app = Starlette(routes=[Mount("/pauses", app=router)])
"""

from __future__ import annotations

from pausetoken.asgi._body import DEFAULT_MAX_BODY_BYTES
from pausetoken.asgi._endpoints import (
    TOKEN_HEADER,
    Authenticate,
    Caller,
    Resume,
    ResumeRequest,
    ResumeResult,
    describe_pause,
    problem_response,
)
from pausetoken.asgi._openapi import CSRF_HEADER, openapi_document
from pausetoken.asgi._page import CONTENT_SECURITY_POLICY
from pausetoken.asgi._router import resume_router

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "CSRF_HEADER",
    "DEFAULT_MAX_BODY_BYTES",
    "TOKEN_HEADER",
    "Authenticate",
    "Caller",
    "Resume",
    "ResumeRequest",
    "ResumeResult",
    "describe_pause",
    "openapi_document",
    "problem_response",
    "resume_router",
]
