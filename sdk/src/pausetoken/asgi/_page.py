"""The approval page: a server-rendered page, its script and style, and its two requests.

The link a person gets carries the token in the URL fragment (``.../approve#token=...``),
which browsers never send: server and proxy logs see ``/approve`` only. The page's script
reads the fragment and posts the token in a body, first to learn what is asked
(``/approve/describe``, which changes nothing), then with the answer (``/approve/answer``).

Both requests must come from the page itself: the ``Origin`` is the router's own (or one
of ``allowed_origins``), and the ``X-Pausetoken-CSRF`` header carries the signed value the
page was served with, younger than the page's lifetime. The page is served with a strict
Content-Security-Policy: no inline script or style, nothing from another origin.

A token in a query string is never used: the two requests refuse it (``token_in_url``), as
``POST /resume`` does, and ``GET /approve?token=...`` shows a browser a page that says so,
without the token (any other client gets the problem).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import re
import secrets
import time
from importlib import resources
from typing import TYPE_CHECKING, Any, Final

import attrs
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from pausetoken.asgi._body import read_json_object, refuse_token_in_url
from pausetoken.asgi._endpoints import Endpoints, describe_pause, log_refusal, problem_response
from pausetoken.asgi._openapi import CSRF_HEADER
from pausetoken.exceptions import (
    InvalidRequest,
    InvalidSettings,
    PauseTokenError,
    RequestForbidden,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Sequence

    from starlette.requests import Request

__all__ = ["CONTENT_SECURITY_POLICY", "page_routes"]

#: Served with the page and its assets: nothing inline, nothing from elsewhere.
CONTENT_SECURITY_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_PAGE_HEADERS: Final = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
_ASSET_TYPES: Final = {
    "page.js": "text/javascript",
    "page.css": "text/css",
    "icon.svg": "image/svg+xml",
}


#: A served anti-forgery value: issued (Unix seconds, ASCII digits without a leading zero),
#: nonce and MAC (base64url). Anything else is refused before a number or MAC is computed.
_CSRF_VALUE: Final = re.compile(
    r"([1-9][0-9]{0,11})\.([A-Za-z0-9_-]{16,64})\.([A-Za-z0-9_-]{43})", re.ASCII
)


@attrs.frozen(repr=False)
class _PageGuard:
    """Issues and checks the page's signed anti-forgery values and the request's origin."""

    secret: bytes
    lifetime: float
    allowed_origins: tuple[str, ...]

    def _mac(self, issued: int, nonce: str) -> str:
        digest = hmac.new(self.secret, f"page.{issued}.{nonce}".encode(), hashlib.sha256)
        return base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()

    def issue(self) -> str:
        issued, nonce = int(time.time()), secrets.token_urlsafe(16)
        return f"{issued}.{nonce}.{self._mac(issued, nonce)}"

    def check(self, request: Request) -> None:
        own = f"{request.url.scheme}://{request.url.netloc}"
        origin = request.headers.get("origin")
        fetch_site = request.headers.get("sec-fetch-site")
        if origin not in (self.allowed_origins or (own,)) or fetch_site not in {
            None,
            "same-origin",
        }:
            msg = "the request does not come from the approval page's origin"
            raise RequestForbidden(msg, code=RequestForbidden.ORIGIN_REFUSED)
        # Parsed strictly first: str.isdigit() takes "²" and Arabic-Indic digits, int()
        # refuses some of them and more than 4300 digits, and compare_digest() refuses
        # non-ASCII text; each of those was a 500.
        found = _CSRF_VALUE.fullmatch(request.headers.get(CSRF_HEADER, ""))
        if found is not None:
            issued, nonce, mac = int(found[1]), found[2], found[3]
            fresh = 0 <= time.time() - issued <= self.lifetime
            if fresh and hmac.compare_digest(mac.encode(), self._mac(issued, nonce).encode()):
                return
        msg = "the page's anti-forgery value is missing, forged or expired: reload the page"
        raise RequestForbidden(msg, code=RequestForbidden.CSRF_INVALID)


def _head(request: Request, *, title: str) -> str:
    def url(name: str) -> str:
        return html.escape(request.url_for(name).path)

    return f"""<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{html.escape(title)}</title>
<link rel="icon" href="{url("pausetoken_page_icon")}" type="image/svg+xml">
<link rel="stylesheet" href="{url("pausetoken_page_css")}">"""


_FOOTER: Final = """<p class="footer">This link can be answered once. The token in it stays in
your browser: it never reaches the server's logs.</p>"""


def _page_html(request: Request, *, title: str, csrf: str) -> str:
    def url(name: str) -> str:
        return html.escape(request.url_for(name).path)

    return f"""<!doctype html>
<html lang="en">
<head>
{_head(request, title=title)}
<meta name="pausetoken-csrf" content="{html.escape(csrf)}">
<meta name="pausetoken-describe" content="{url("pausetoken_page_describe")}">
<meta name="pausetoken-answer" content="{url("pausetoken_page_answer")}">
<script src="{url("pausetoken_page_js")}" defer></script>
</head>
<body>
<main class="card" aria-live="polite">
<header class="card-head"><p class="eyebrow">{html.escape(title)}</p>
<h1 id="heading">Loading&hellip;</h1></header>
<div id="content"><p class="muted">Checking the link.</p></div>
<noscript><p class="notice">This page needs JavaScript to read the link.</p></noscript>
</main>
{_FOOTER}
</body>
</html>
"""


def _token_in_url_html(request: Request, *, title: str) -> str:
    """The page a browser gets for a link with the token in its query: no script, no token."""
    return f"""<!doctype html>
<html lang="en">
<head>
{_head(request, title=title)}
</head>
<body data-state="token-in-url">
<main class="card">
<header class="card-head"><p class="eyebrow">{html.escape(title)}</p>
<h1 id="heading">This link is not valid</h1></header>
<div id="content">
<p class="notice notice-error" role="alert">This link carries its token after a
<code>?</code>, where servers and proxies record it, so it was not used.</p>
<p>An approval link carries its token after a <code>#</code>
(<code>/approve#token=&hellip;</code>), which your browser keeps to itself. Ask whoever sent
this link for a new one, and tell them the old one should be withdrawn.</p>
</div>
</main>
</body>
</html>
"""


def _wants_html(request: Request) -> bool:
    """Whether the client asks for HTML by name, as a browser's navigation does."""
    accept = request.headers.get("accept", "")
    for item in accept.split(","):
        media_type, _, parameters = item.partition(";")
        if media_type.strip().lower() not in {"text/html", "application/xhtml+xml"}:
            continue
        quality = re.search(r"(?:^|;)\s*q\s*=\s*([0-9.]+)", parameters)
        if quality is None or quality[1].strip("0.") != "":
            return True
    return False


@attrs.frozen
class _Page:
    """The page's handlers: the router's endpoints behind the page's own checks."""

    endpoints: Endpoints
    guard: _PageGuard
    title: str

    async def page(self, request: Request) -> Response:
        try:
            refuse_token_in_url(request)
        except PauseTokenError as error:
            log_refusal("approve", error)
            if not _wants_html(request):
                return problem_response(error)
            # A person followed a link built the wrong way: tell them, without the token.
            refusal = _token_in_url_html(request, title=self.title)
            return Response(
                refusal,
                status_code=error.http_status,
                media_type="text/html; charset=utf-8",
                headers=_PAGE_HEADERS,
            )
        body = _page_html(request, title=self.title, csrf=self.guard.issue())
        return Response(body, media_type="text/html; charset=utf-8", headers=_PAGE_HEADERS)

    async def describe(self, request: Request) -> Response:
        try:
            refuse_token_in_url(request)
            self.guard.check(request)
            caller = await self.endpoints.caller(request)
            limit = self.endpoints.max_body_bytes
            body = await read_json_object(request, max_body_bytes=limit)
            token = body.get("token")
            if set(body) != {"token"} or not isinstance(token, str) or not token:
                msg = 'the request body must be {"token": ...}'
                raise InvalidRequest(msg)
            found = await describe_pause(self.endpoints.tokens, token, caller)
        except PauseTokenError as error:
            log_refusal("describe", error)
            return problem_response(error)
        return JSONResponse(found, headers={"Cache-Control": "no-store"})

    async def answer(self, request: Request) -> Response:
        try:
            refuse_token_in_url(request)
            self.guard.check(request)
            caller = await self.endpoints.caller(request)
            token, value = await self.endpoints.read_token_and_answer(request)
            return await self.endpoints.run_resume(token, value, caller)
        except PauseTokenError as error:
            log_refusal("answer", error)
            return problem_response(error)


def _asset(name: str) -> Callable[[Request], Coroutine[Any, Any, Response]]:
    content = resources.files("pausetoken.asgi").joinpath("_assets", name).read_bytes()
    headers = {**_PAGE_HEADERS, "Cache-Control": "no-cache"}

    async def serve(_request: Request) -> Response:
        return Response(content, media_type=_ASSET_TYPES[name], headers=headers)

    return serve


def page_routes(
    endpoints: Endpoints,
    *,
    title: str,
    secret: bytes | None,
    lifetime: float,
    allowed_origins: Sequence[str],
) -> list[Route]:
    """The page's routes, handled with the router's service and application functions.

    Raises:
        ConfigurationError: a ``secret`` shorter than 32 bytes, or a lifetime that is not
            positive.
    """
    if secret is not None and len(secret) < 32:  # noqa: PLR2004
        msg = "page_secret must be at least 32 random bytes"
        raise InvalidSettings(msg, code=InvalidSettings.SETTINGS_INVALID)
    if not lifetime > 0:
        msg = "page_lifetime must be a positive number of seconds"
        raise InvalidSettings(msg, code=InvalidSettings.SETTINGS_INVALID)
    guard = _PageGuard(secret or secrets.token_bytes(32), lifetime, tuple(allowed_origins))
    page = _Page(endpoints, guard, title)
    return [
        Route("/approve", page.page, methods=["GET"], name="pausetoken_page"),
        Route("/approve/page.js", _asset("page.js"), methods=["GET"], name="pausetoken_page_js"),
        Route("/approve/page.css", _asset("page.css"), methods=["GET"], name="pausetoken_page_css"),
        Route(
            "/approve/icon.svg", _asset("icon.svg"), methods=["GET"], name="pausetoken_page_icon"
        ),
        Route(
            "/approve/describe", page.describe, methods=["POST"], name="pausetoken_page_describe"
        ),
        Route("/approve/answer", page.answer, methods=["POST"], name="pausetoken_page_answer"),
    ]
