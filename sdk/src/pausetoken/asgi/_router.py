"""The resume router: ``POST /resume``, the OpenAPI description and the approval page."""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import TYPE_CHECKING, Any, Final

from starlette.datastructures import URLPath
from starlette.responses import JSONResponse, Response
from starlette.routing import NoMatchFound, Route, Router

from pausetoken._keys import KeyRing
from pausetoken.asgi._body import DEFAULT_MAX_BODY_BYTES
from pausetoken.asgi._endpoints import Endpoints
from pausetoken.asgi._openapi import openapi_document
from pausetoken.asgi._page import page_routes
from pausetoken.exceptions import InvalidSettings

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from starlette.requests import Request
    from starlette.types import Receive, Scope, Send

    from pausetoken._service import PauseTokens
    from pausetoken.asgi._endpoints import Caller, ResumeRequest, ResumeResult

__all__ = ["derive_page_secret", "resume_router"]

#: HKDF's ``info`` for the page secret: a label of its own, so that the derived secret is
#: unrelated to the signing key and to anything else derived from it.
_PAGE_SECRET_LABEL: Final = b"pausetoken approval page anti-forgery v1"


def _hkdf_sha256(key_material: bytes, info: bytes) -> bytes:
    """RFC 5869 HKDF-SHA256 with an empty salt, for one 32-byte block."""
    pseudorandom = hmac.new(b"\0" * 32, key_material, hashlib.sha256).digest()
    return hmac.new(pseudorandom, info + b"\x01", hashlib.sha256).digest()


def derive_page_secret(tokens: PauseTokens) -> bytes:
    """The page secret every worker holding the same signing key derives alike.

    HKDF-SHA256 over the private material of the service's active signing key, with a
    label of its own and the key's ``kid``: every process that loaded the same key set
    derives the same 32 bytes, a process with other keys different ones, and the result
    tells nothing about the key. Rotating the active key changes it (a page served before
    then asks to be reloaded).

    Raises:
        ConfigurationError: ``settings_missing`` when the service's signer is not a
            built-in one over a [`KeyRing`][pausetoken.KeyRing], or its ring holds no
            private active key (a verify-only ring).
    """
    keys = getattr(tokens.signer, "keys", None)
    if not (isinstance(keys, KeyRing) and keys.can_sign):
        msg = (
            "the approval page needs a secret shared by every worker: pass page_secret "
            "(32 random bytes, the same in every process), or give the service a signer "
            "over a key ring that holds its private signing key, to derive it from"
        )
        raise InvalidSettings(msg, code=InvalidSettings.SETTINGS_MISSING)
    kid, key, _alg = keys.signing_key()
    jwk = key.as_dict(private=True)
    # "k" is a symmetric key's, "d" the private half of an asymmetric one.
    material = str(jwk.get("k") or jwk["d"])
    raw = base64.urlsafe_b64decode(material + "=" * (-len(material) % 4))
    return _hkdf_sha256(raw, _PAGE_SECRET_LABEL + b"\0" + kid.encode("utf-8"))


class _Links:
    """Resolves the router's route names to paths under where the request reached it.

    Starlette resolves ``request.url_for`` through the application's routing table, which
    does not list a router mounted behind a function (one built in a lifespan) or another
    wrapper. The router's own names resolve here instead, from the request's ``root_path``;
    any other name is the application's, resolved as before.
    """

    def __init__(self, router: Router, prefix: str, outer: Any) -> None:
        self._router, self._prefix, self._outer = router, prefix, outer

    def url_path_for(self, name: str, /, **path_params: Any) -> URLPath:
        try:
            found = self._router.url_path_for(name, **path_params)
        except NoMatchFound:
            if self._outer is None:
                raise
            outer: URLPath = self._outer.url_path_for(name, **path_params)
            return outer
        return URLPath(self._prefix + found, protocol=found.protocol, host=found.host)


class _ResumeRouter(Router):
    """A Starlette router whose routes link to each other wherever it is mounted."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in {"http", "websocket"}:
            await super().__call__(scope, receive, send)
            return
        root_path = scope.get("root_path", "")
        # url_for adds the application's root path; the rest is where this router sits.
        app_root = scope.get("app_root_path", root_path)
        prefix = root_path.removeprefix(app_root)
        outer = scope.get("router")
        scope["router"] = _Links(self, prefix.rstrip("/"), outer)
        try:
            await super().__call__(scope, receive, send)
        finally:
            if outer is None:
                scope.pop("router", None)
            else:
                scope["router"] = outer


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
        page_secret: At least 32 bytes that sign the page's anti-forgery values, the same in
            every worker process. Default: derived from the service's active signing key
            (HKDF-SHA256 with a label of its own), which every worker loading the same key
            set derives alike.
        page_lifetime: Seconds a served page may still answer.
        allowed_origins: Origins (``https://app.example``) the page's requests may come
            from, when a proxy in front changes the scheme or host; default: the
            request's own.

    Returns:
        A Starlette router: mount it (``Mount("/pauses", app=router)``), serve it as is, or
        hand it requests from a function mounted before it is built (a router built in
        the application's lifespan): its page links to its own routes relative to where
        each request reached it.

    Raises:
        ConfigurationError: ``max_body_bytes`` below 4096, a short ``page_secret`` or a
            lifetime that is not positive (``settings_invalid``); with the page and no
            ``page_secret``, a service that holds no private signing key to derive one
            from (``settings_missing``).
    """
    if not 4096 <= max_body_bytes <= 16 * 1024 * 1024:  # noqa: PLR2004
        msg = "max_body_bytes must be from 4096 (a token fits) to 16 MiB"
        raise InvalidSettings(msg, code=InvalidSettings.SETTINGS_INVALID)
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
            secret=page_secret if page_secret is not None else derive_page_secret(tokens),
            lifetime=page_lifetime,
            allowed_origins=allowed_origins,
        )
    return _ResumeRouter(routes=routes)
