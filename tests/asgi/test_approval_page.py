"""The approval page's HTTP side: its anti-forgery check, tokens in the URL, crafted headers.

Every refusal is a typed problem (RFC 9457) with a stable code, never a server error: the
requests are sent through the ASGI app, as a browser or an attacker would send them.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any, Final

import httpx
import pytest
from asgi_support import ACME, AUTH, App, make_app

from pausetoken import TokenStatus
from pausetoken.asgi import CONTENT_SECURITY_POLICY, CSRF_HEADER

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

BASE: Final = "http://testserver"
YES: Final = {"approved": True}
PAGE_ROUTES: Final = ["/approve/describe", "/approve/answer"]


@pytest.fixture
def app() -> App:
    return make_app()


@pytest.fixture
async def client(app: App) -> AsyncIterator[httpx.AsyncClient]:
    # raise_app_exceptions: an unhandled error fails the test instead of becoming a 500.
    transport = httpx.ASGITransport(app=app.router())
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=AUTH) as client:
        yield client


def assert_problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem: dict[str, Any] = response.json()
    assert problem["code"] == code
    assert problem["status"] == status
    assert problem["type"] == f"urn:pausetoken:error:{code}"
    assert {"title", "detail"} <= set(problem)
    return problem


async def page_csrf(client: httpx.AsyncClient) -> str:
    page = await client.get("/approve")
    found = re.search(r'name="pausetoken-csrf" content="([^"]+)"', page.text)
    assert found is not None
    return found[1]


async def call_asgi(
    asgi: Any, path: str, headers: list[tuple[bytes, bytes]], body: bytes
) -> tuple[int, bytes]:
    """POST ``body`` straight to the ASGI app, with headers as raw bytes (no client checks)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), *headers],
        "server": ("testserver", 80),
        "client": ("127.0.0.1", 1234),
    }
    sent: list[dict[str, Any]] = []
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await asgi(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start["status"], b"".join(m.get("body", b"") for m in sent[1:])


def arabic_indic(number: int) -> str:
    return str(number).translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩"))


# -- item: a crafted anti-forgery value is refused, never a 500 ------------------------------

NOW: Final = int(time.time())
# Header values as the bytes on the wire: Starlette reads them as Latin-1.
CRAFTED: Final = {
    "arabic-indic-digits": f"{arabic_indic(NOW)}.nonce.mac".encode(),
    "superscript-digit": b"\xb2.nonce.mac",
    "superscript-timestamp": b"17\xb9\xb2\xb3.nonce.mac",
    "five-thousand-digits": ("9" * 5000 + ".nonce.mac").encode(),
    "five-thousand-digits-fresh-prefix": ("0" * 4990 + str(NOW) + ".nonce.mac").encode(),
    "non-ascii-mac": f"{NOW}.nonce.\xe9\xe9\xe9".encode("latin-1"),
    "non-ascii-nonce": f"{NOW}.\xe9.mac".encode("latin-1"),
    "negative": f"-{NOW}.nonce.mac".encode(),
    "plus-sign": f"+{NOW}.nonce.mac".encode(),
    "underscored": f"{NOW // 1000}_{NOW % 1000:03}.nonce.mac".encode(),
    "spaces": f" {NOW} .nonce.mac".encode(),
    "empty-parts": b"..",
    "extra-part": f"{NOW}.nonce.mac.more".encode(),
    "huge-mac": f"{NOW}.nonce.{'A' * 20000}".encode(),
}


@pytest.mark.parametrize("route", PAGE_ROUTES)
@pytest.mark.parametrize("value", list(CRAFTED.values()), ids=list(CRAFTED))
async def test_a_crafted_anti_forgery_value_is_a_typed_refusal(
    app: App, client: httpx.AsyncClient, route: str, value: bytes
) -> None:
    token = await app.mint()
    headers = {b"Origin": BASE.encode(), CSRF_HEADER.encode(): value}
    response = await client.post(route, json={"token": token, "answer": YES}, headers=headers)
    assert_problem(response, 403, "csrf_invalid")
    assert response.headers["cache-control"] == "no-store"
    assert await app.tokens.status(token, scope=ACME) is TokenStatus.ACTIVE


async def test_a_crafted_value_keeping_the_served_mac_is_still_refused(
    app: App, client: httpx.AsyncClient
) -> None:
    """The served value with its timestamp respelled (other digits, padding) does not pass."""
    token = await app.mint()
    issued, nonce, mac = (await page_csrf(client)).split(".")
    for respelled in (arabic_indic(int(issued)), "0" + issued, "0" * 5000 + issued):
        value = f"{respelled}.{nonce}.{mac}".encode()
        response = await client.post(
            "/approve/describe",
            json={"token": token},
            headers={b"Origin": BASE.encode(), CSRF_HEADER.encode(): value},
        )
        assert_problem(response, 403, "csrf_invalid")
    served = await client.post(
        "/approve/describe",
        json={"token": token},
        headers={"Origin": BASE, CSRF_HEADER: f"{issued}.{nonce}.{mac}"},
    )
    assert served.status_code == 200


@pytest.mark.parametrize("route", PAGE_ROUTES)
@pytest.mark.parametrize(
    ("length", "status"),
    [
        (b"\xb2", 400),
        ("١٢".encode(), 400),
        (b"-1", 400),
        (b"1_0", 400),
        (b"0x10", 400),
        (b"9" * 5000, 413),
        (b"0" * 5000 + b"99999", 413),
    ],
    ids=[
        "superscript",
        "arabic-indic",
        "negative",
        "underscored",
        "hex",
        "five-thousand-digits",
        "zero-padded",
    ],
)
async def test_a_crafted_content_length_is_a_typed_refusal(
    app: App, route: str, length: bytes, status: int
) -> None:
    token = await app.mint()
    router = app.router()
    transport = httpx.ASGITransport(app=router)
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=AUTH) as client:
        csrf = await page_csrf(client)
    body = b'{"token": "%s", "answer": {"approved": true}}' % token.encode()
    headers = [
        (b"origin", BASE.encode()),
        (CSRF_HEADER.lower().encode(), csrf.encode()),
        (b"authorization", AUTH["Authorization"].encode()),
        (b"content-type", b"application/json"),
        (b"content-length", length),
    ]
    answered, sent = await call_asgi(router, route, headers, body)
    assert answered == status, sent
    assert await app.tokens.status(token, scope=ACME) is TokenStatus.ACTIVE


# -- item: a token in the URL ----------------------------------------------------------------


@pytest.mark.parametrize("route", PAGE_ROUTES)
@pytest.mark.parametrize("parameter", ["token", "Token", "pause_token", "access_token"])
async def test_the_pages_requests_refuse_a_token_in_the_query_like_resume(
    app: App, client: httpx.AsyncClient, route: str, parameter: str
) -> None:
    token = await app.mint()
    headers = {"Origin": BASE, CSRF_HEADER: await page_csrf(client)}
    response = await client.post(
        f"{route}?{parameter}={token}", json={"token": token, "answer": YES}, headers=headers
    )
    problem = assert_problem(response, 400, "token_in_url")
    assert token not in response.text
    assert problem == (await client.post(f"/resume?{parameter}={token}", json={})).json()
    assert await app.tokens.status(token, scope=ACME) is TokenStatus.ACTIVE
    assert app.resumed == []


BROWSER_ACCEPT: Final = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


@pytest.mark.parametrize("parameter", ["token", "pause_token", "TOKEN"])
async def test_a_browser_opening_the_page_with_a_token_in_the_query_gets_a_page(
    app: App, client: httpx.AsyncClient, parameter: str
) -> None:
    token = await app.mint()
    response = await client.get(
        f"/approve?{parameter}={token}&lang=en", headers={"Accept": BROWSER_ACCEPT}
    )
    assert response.status_code == 400
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert response.headers["referrer-policy"] == "no-referrer"
    assert response.headers["cache-control"] == "no-store"
    page = response.text
    assert token not in page
    assert token[:12] not in page
    assert 'data-state="token-in-url"' in page
    assert "<h1" in page
    assert "not valid" in page
    assert "#token=" in page  # how the link should look
    assert re.findall(r"<script", page) == []  # nothing to run: it only tells
    assert 'href="/approve/page.css"' in page
    assert await app.tokens.status(token, scope=ACME) is TokenStatus.ACTIVE


@pytest.mark.parametrize(
    "accept", [None, "*/*", "application/json", "application/problem+json"], ids=str
)
async def test_a_client_that_does_not_ask_for_html_gets_the_problem(
    client: httpx.AsyncClient, accept: str | None
) -> None:
    headers = {} if accept is None else {"Accept": accept}
    response = await client.get("/approve?token=abc", headers=headers)
    problem = assert_problem(response, 400, "token_in_url")
    assert "abc" not in problem["detail"]


async def test_the_page_in_the_query_without_a_token_parameter_is_served(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/approve?lang=en", headers={"Accept": BROWSER_ACCEPT})
    assert response.status_code == 200
    assert 'name="pausetoken-csrf"' in response.text
