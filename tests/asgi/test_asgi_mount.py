"""The router wherever it is mounted: behind a wrapper, built in a lifespan, under a root path.

An application whose service is built in its lifespan cannot build the router before it
starts: it mounts an ASGI function that hands each request to the router the lifespan made.
The router then resolves its own links (the page's script, style and requests) relative to
where the request reached it, not through the application's routing table.
"""

from __future__ import annotations

import contextlib
import re
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from asgi_support import AUTH, App, make_app
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.routing import Mount, Route
from starlette.testclient import TestClient

from pausetoken.asgi import CSRF_HEADER, TOKEN_HEADER

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from starlette.requests import Request
    from starlette.types import Receive, Scope, Send

BASE = "http://testserver"
YES = {"approved": True}


@pytest.fixture
def app() -> App:
    return make_app()


def _links(page: str) -> dict[str, str]:
    found = dict(re.findall(r'name="pausetoken-(describe|answer)" content="([^"]+)"', page))
    script = re.search(r'<script src="([^"]+)"', page)
    if script is not None:
        found["js"] = script[1]
    return found


async def _answer_through_the_page(
    client: httpx.AsyncClient, prefix: str, token: str
) -> httpx.Response:
    page = await client.get(f"{prefix}/approve")
    assert page.status_code == 200, page.text
    links = _links(page.text)
    assert links == {
        "describe": f"{prefix}/approve/describe",
        "answer": f"{prefix}/approve/answer",
        "js": f"{prefix}/approve/page.js",
    }
    csrf = re.search(r'name="pausetoken-csrf" content="([^"]+)"', page.text)
    assert csrf is not None
    headers = {CSRF_HEADER: csrf[1], "Origin": BASE}
    assert (await client.get(links["js"])).status_code == 200
    described = await client.post(links["describe"], json={"token": token}, headers=headers)
    assert described.status_code == 200, described.text
    return await client.post(links["answer"], json={"token": token, "answer": YES}, headers=headers)


def _wrapper(router: Any) -> Any:
    """What an application mounts when the router is built later: an ASGI function."""

    async def pauses(scope: Scope, receive: Receive, send: Send) -> None:
        await router(scope, receive, send)

    return pauses


async def test_behind_a_wrapper_the_page_links_and_answers_under_the_mount(app: App) -> None:
    outer = Starlette(routes=[Mount("/pauses", app=_wrapper(app.router()))])
    transport = httpx.ASGITransport(app=outer)
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=AUTH) as client:
        answered = await _answer_through_the_page(client, "/pauses", await app.mint())
    assert answered.status_code == 200, answered.text


async def test_nested_mounts_and_middleware_around_the_router_keep_its_links(app: App) -> None:
    inner = Starlette(
        routes=[Mount("/pauses", app=app.router())], middleware=[Middleware(GZipMiddleware)]
    )
    outer = Starlette(routes=[Mount("/v1", app=_wrapper(inner))])
    transport = httpx.ASGITransport(app=outer)
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=AUTH) as client:
        answered = await _answer_through_the_page(client, "/v1/pauses", await app.mint())
    assert answered.status_code == 200, answered.text


async def test_under_a_proxys_root_path_the_links_carry_it(app: App) -> None:
    outer = Starlette(routes=[Mount("/pauses", app=_wrapper(app.router()))])
    transport = httpx.ASGITransport(app=outer, root_path="/shop")
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=AUTH) as client:
        page = await client.get("/shop/pauses/approve")
    assert _links(page.text)["describe"] == "/shop/pauses/approve/describe"


async def test_served_alone_the_links_are_the_routers_own(app: App) -> None:
    transport = httpx.ASGITransport(app=_wrapper(app.router()))
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=AUTH) as client:
        answered = await _answer_through_the_page(client, "", await app.mint())
    assert answered.status_code == 200, answered.text


async def test_the_applications_own_url_for_still_works_beside_the_router(app: App) -> None:
    async def home(request: Request) -> Any:
        from starlette.responses import PlainTextResponse

        return PlainTextResponse(str(request.url_for("pauses", path="/approve")))

    outer = Starlette(
        routes=[Route("/", home), Mount("/pauses", app=_wrapper(app.router()), name="pauses")]
    )
    transport = httpx.ASGITransport(app=outer)
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=AUTH) as client:
        assert (await client.get("/")).text == f"{BASE}/pauses/approve"


def test_a_router_built_in_the_lifespan_serves_the_page_and_answers(app: App) -> None:
    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[dict[str, Any]]:
        yield {"pauses": app.router()}

    async def pauses(scope: Scope, receive: Receive, send: Send) -> None:
        await scope["state"]["pauses"](scope, receive, send)

    outer = Starlette(routes=[Mount("/pauses", app=pauses)], lifespan=lifespan)
    with TestClient(outer, base_url=BASE, headers=AUTH) as client:
        token = client.portal.call(app.mint)  # type: ignore[union-attr]
        page = client.get("/pauses/approve")
        assert page.status_code == 200, page.text
        csrf = re.search(r'name="pausetoken-csrf" content="([^"]+)"', page.text)
        assert csrf is not None
        headers = {CSRF_HEADER: csrf[1], "Origin": BASE}
        answered = client.post(
            _links(page.text)["answer"], json={"token": token, "answer": YES}, headers=headers
        )
        assert answered.status_code == 200, answered.text
        again = client.post("/pauses/resume", json={"answer": YES}, headers={TOKEN_HEADER: token})
        assert again.json()["replayed"] is True
