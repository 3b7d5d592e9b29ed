"""The OpenAPI document describes what the router really does.

Each case is a request, sent to the router in-process; what the router answered is then
looked up in its own document (the one ``GET /openapi.json`` serves):

* the operation exists, or the path's description says that other methods get 405 and the
  ``Allow`` header names the documented methods;
* the status is one of the operation's responses, with the content type the router sent
  and the problem's ``code`` among the codes that response lists (``x-pausetoken-codes``);
  the headers it sent with a 401 and a 409 are described;
* a request refused for its shape (400 ``request_invalid``, ``request_json_invalid``,
  ``token_in_url``, 413, 415, a page request without its headers) is one the document
  refuses too: its parameters or body do not validate against the document's schemas (with
  ``jsonschema_rs``, which comes with schemathesis), or, for a rule JSON Schema cannot say
  (the token in two places, duplicate members), the operation states the rule in words;
* an accepted request is one the document accepts.

The fuzzer (test_asgi_fuzz.py) checks the other direction: requests drawn from the
document get the responses it declares.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Final

import attrs
import httpx
import jsonschema_rs
import pytest
from asgi_support import ACME, AUTH, App, make_app

from pausetoken.asgi import CSRF_HEADER, TOKEN_HEADER, openapi_document

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

BASE: Final = "http://testserver"
YES: Final = {"approved": True}
SHAPE_CODES: Final = {"request_invalid", "request_json_invalid", "token_in_url"}
MISSING: Final = object()


@attrs.frozen
class Case:
    """A request: what to send, and the status and code the router answers it with."""

    name: str
    method: str
    path: str
    status: int
    code: str | None = None
    # Builds the request's parts from a fresh token: headers, query, body (JSON or bytes).
    headers: dict[str, str] = attrs.field(factory=dict)
    query: dict[str, str] = attrs.field(factory=dict)
    body: Any = MISSING
    content: bytes | None = None
    content_type: str | None = None
    # For a shape refusal JSON Schema cannot state: words the operation must say.
    rule: str | None = None
    # Refused for a header the page's requests must have (or a value they must not send).
    missing_headers: bool = False
    # The page's anti-forgery header and Origin, as its script sends them.
    from_page: bool = False
    # Something to do to the service before sending (a first answer, a failing resume).
    before: str | None = None


TOKEN: Final = "<token>"  # replaced by a freshly minted token


def _cases() -> list[Case]:
    resume, describe, answer = "/resume", "/approve/describe", "/approve/answer"
    header = {TOKEN_HEADER: TOKEN}
    return [
        # POST /resume
        Case("answered, token in the header", "POST", resume, 200, headers=header,
             body={"answer": YES}),
        Case("answered, token in the body", "POST", resume, 200,
             body={"token": TOKEN, "answer": YES}),
        Case("token in both places", "POST", resume, 400, "request_invalid", headers=header,
             body={"token": TOKEN, "answer": YES}, rule="never both"),
        Case("no token anywhere", "POST", resume, 400, "request_invalid", body={"answer": YES},
             rule="exactly one"),
        Case("empty token in the body", "POST", resume, 400, "request_invalid",
             body={"token": "", "answer": YES}),
        Case("empty token in the header", "POST", resume, 400, "request_invalid",
             headers={TOKEN_HEADER: ""}, body={"answer": YES}),
        Case("token that is not a string", "POST", resume, 400, "request_invalid",
             body={"token": 5, "answer": YES}),
        Case("no answer", "POST", resume, 400, "request_invalid", body={"token": TOKEN}),
        Case("another member", "POST", resume, 400, "request_invalid", headers=header,
             body={"answer": YES, "note": 1}),
        Case("not an object", "POST", resume, 400, "request_invalid", headers=header,
             body=[YES]),
        Case("not JSON", "POST", resume, 400, "request_json_invalid", headers=header,
             content=b"{", content_type="application/json"),
        Case("duplicate members", "POST", resume, 400, "request_json_invalid", headers=header,
             content=b'{"answer": 1, "answer": 2}', content_type="application/json",
             rule="duplicate members"),
        Case("NaN", "POST", resume, 400, "request_json_invalid", headers=header,
             content=b'{"answer": NaN}', content_type="application/json", rule="NaN"),
        Case("nested too deeply", "POST", resume, 400, "request_json_invalid", headers=header,
             content=b'{"answer": ' + b"[" * 40 + b"]" * 40 + b"}",
             content_type="application/json", rule="32 levels"),
        Case("a form", "POST", resume, 415, "media_type_unsupported", headers=header,
             content=b"answer=yes", content_type="application/x-www-form-urlencoded"),
        Case("too large", "POST", resume, 413, "request_too_large", headers=header,
             content=b'{"answer": "' + b"x" * 70_000 + b'"}', content_type="application/json",
             rule="65536 bytes"),
        Case("token in the query string", "POST", resume, 400, "token_in_url",
             query={"token": "x"}, headers=header, body={"answer": YES}, rule="token_in_url"),
        Case("no authentication", "POST", resume, 401, "not_authenticated", headers=header,
             body={"answer": YES}, before="stranger"),
        Case("forged token", "POST", resume, 401, "token_malformed",
             headers={TOKEN_HEADER: "forged"}, body={"answer": YES}),
        Case("another tenant", "POST", resume, 403, "scope_mismatch", headers=header,
             body={"answer": YES}, before="globex"),
        Case("an answer the type refuses", "POST", resume, 422, "invalid_response",
             headers=header, body={"answer": {"approved": 3}}),
        Case("another answer after the first", "POST", resume, 409, "already_redeemed",
             headers=header, body={"answer": {"approved": False}}, before="answered"),
        Case("while another request holds the claim", "POST", resume, 409,
             "redemption_in_progress", headers=header, body={"answer": YES}, before="held"),
        Case("a revoked token", "POST", resume, 410, "token_revoked", headers=header,
             body={"answer": YES}, before="revoked"),
        Case("the resume function fails", "POST", resume, 500, "resume_failed", headers=header,
             body={"answer": YES}, before="failing"),
        Case("GET /resume", "GET", resume, 405),
        Case("PUT /resume", "PUT", resume, 405, body={"answer": YES}),
        # GET /openapi.json
        Case("the description", "GET", "/openapi.json", 200),
        Case("DELETE /openapi.json", "DELETE", "/openapi.json", 405),
        # the approval page
        Case("the page", "GET", "/approve", 200),
        Case("the page with a token in the query", "GET", "/approve", 400, "token_in_url",
             query={"token": "x"}, rule="token_in_url"),
        Case("a browser opening the page with a token in the query", "GET", "/approve", 400,
             query={"token": "x"}, headers={"Accept": "text/html"}, rule="token_in_url"),
        Case("POST /approve", "POST", "/approve", 405, body={"token": TOKEN}),
        Case("described with a token in the query", "POST", describe, 400, "token_in_url",
             query={"token": "x"}, body={"token": TOKEN}, from_page=True, rule="token_in_url"),
        Case("answered with a token in the query", "POST", answer, 400, "token_in_url",
             query={"pause_token": "x"}, body={"token": TOKEN, "answer": YES}, from_page=True,
             rule="token_in_url"),
        Case("described", "POST", describe, 200, body={"token": TOKEN}, from_page=True),
        Case("described with another member", "POST", describe, 400, "request_invalid",
             body={"token": TOKEN, "answer": YES}, from_page=True),
        Case("described with an empty token", "POST", describe, 400, "request_invalid",
             body={"token": ""}, from_page=True),
        Case("described without Origin", "POST", describe, 403, "origin_refused",
             body={"token": TOKEN}, headers={CSRF_HEADER: "<csrf>"}, missing_headers=True),
        Case("described from another origin", "POST", describe, 403, "origin_refused",
             body={"token": TOKEN}, headers={CSRF_HEADER: "<csrf>", "Origin": "https://evil"}),
        Case("described cross-site", "POST", describe, 403, "origin_refused",
             body={"token": TOKEN}, from_page=True, headers={"Sec-Fetch-Site": "cross-site"},
             missing_headers=True),
        Case("described without the page's value", "POST", describe, 403, "csrf_invalid",
             body={"token": TOKEN}, headers={"Origin": BASE}, missing_headers=True),
        Case("described with a forged value", "POST", describe, 403, "csrf_invalid",
             body={"token": TOKEN}, headers={"Origin": BASE, CSRF_HEADER: "1.2.3"}),
        Case("described by a forged token", "POST", describe, 401, "token_malformed",
             body={"token": "forged"}, from_page=True),
        Case("described after the answer", "POST", describe, 409, "already_redeemed",
             body={"token": TOKEN}, from_page=True, before="answered"),
        Case("GET describe", "GET", describe, 405),
        Case("answered from the page", "POST", answer, 200,
             body={"token": TOKEN, "answer": YES}, from_page=True),
        Case("answered from the page, token in the header", "POST", answer, 200,
             headers=header, body={"answer": YES}, from_page=True),
        Case("answered from the page, token twice", "POST", answer, 400, "request_invalid",
             headers=header, body={"token": TOKEN, "answer": YES}, from_page=True,
             rule="never both"),
        Case("answered without the page's value", "POST", answer, 403, "csrf_invalid",
             body={"token": TOKEN, "answer": YES}, headers={"Origin": BASE},
             missing_headers=True),
        Case("answered wrongly from the page", "POST", answer, 422, "invalid_response",
             body={"token": TOKEN, "answer": {"approved": "yes"}}, from_page=True),
    ]  # fmt: skip


CASES: Final = _cases()


@pytest.fixture
def app() -> App:
    return make_app()


@pytest.fixture
async def client(app: App) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app.router())
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=AUTH) as client:
        yield client


async def _csrf(client: httpx.AsyncClient) -> str:
    page = await client.get("/approve")
    found = re.search(r'name="pausetoken-csrf" content="([^"]+)"', page.text)
    assert found is not None
    return found[1]


@attrs.frozen
class Sent:
    headers: dict[str, str]
    query: dict[str, str]
    body: Any  # the parsed JSON, MISSING without a body, or the bytes that do not parse
    content_type: str | None


async def _before(
    app: App, client: httpx.AsyncClient, case: Case, token: str, headers: dict[str, str]
) -> Callable[[], Awaitable[None]] | None:
    """Do what the case needs done first; returns what undoes it after the request."""
    if case.before == "stranger":
        headers.pop("Authorization")
    elif case.before == "globex":
        headers["Authorization"] = "Bearer key-globex"
    elif case.before == "answered":
        assert (await client.post("/resume", json={"token": token, "answer": YES})).is_success
    elif case.before == "revoked":
        await app.tokens.revoke(token, scope=ACME)
    elif case.before == "held":
        return await _hold(app, client, token)
    elif case.before == "failing":
        app.fail_with = RuntimeError("boom")

        async def recover() -> None:
            app.fail_with = None

        return recover
    return None


async def _prepare(
    app: App, client: httpx.AsyncClient, case: Case
) -> tuple[Sent, Callable[[], Awaitable[None]] | None]:
    """The request the case sends, and what undoes what the case did first."""
    token = await app.mint(f"t-{case.name}")
    csrf = await _csrf(client)
    headers = {**AUTH}
    if case.from_page:
        headers |= {CSRF_HEADER: csrf, "Origin": BASE}
    for name, value in case.headers.items():
        headers[name] = {TOKEN: token, "<csrf>": csrf}.get(value, value)
    done = await _before(app, client, case, token, headers)
    body: Any = case.body
    if body is not MISSING:
        body = json.loads(json.dumps(body).replace(json.dumps(TOKEN), json.dumps(token)))
    if case.content is not None:
        body = case.content
    content_type = case.content_type or ("application/json" if body is not MISSING else None)
    return Sent(headers, dict(case.query), body, content_type), done


async def _hold(app: App, client: httpx.AsyncClient, token: str) -> Callable[[], Awaitable[None]]:
    import asyncio

    app.gate = asyncio.Event()
    app.started.clear()
    first = asyncio.create_task(client.post("/resume", json={"token": token, "answer": YES}))
    await app.started.wait()

    async def release() -> None:
        assert app.gate is not None
        app.gate.set()
        await first
        app.gate = None

    return release


async def _send(client: httpx.AsyncClient, case: Case, sent: Sent) -> httpx.Response:
    headers = dict(sent.headers)
    if sent.content_type is not None:
        headers["Content-Type"] = sent.content_type
    content = None
    if isinstance(sent.body, bytes):
        content = sent.body
    elif sent.body is not MISSING:
        content = json.dumps(sent.body).encode()
    request = client.build_request(
        case.method, case.path, params=sent.query, headers=headers, content=content
    )
    if "Authorization" not in sent.headers:
        del request.headers["Authorization"]
    return await client.send(request)


# -- reading the document --------------------------------------------------------------------


def _texts(document: dict[str, Any], path: str, operation: dict[str, Any]) -> str:
    """Every description the operation's reader sees, in one string."""
    texts = [
        document["info"].get("description", ""),
        document["paths"][path].get("description", ""),
    ]
    texts += [operation.get("summary", ""), operation.get("description", "")]
    texts += [p.get("description", "") for p in operation.get("parameters", [])]
    texts.append(operation.get("requestBody", {}).get("description", ""))
    return "\n".join(texts)


def _accepts_parameters(operation: dict[str, Any], sent: Sent) -> bool:
    for parameter in operation.get("parameters", []):
        where = sent.headers if parameter["in"] == "header" else sent.query
        values = {name.lower(): value for name, value in where.items()}
        value = values.get(parameter["name"].lower())
        if value is None:
            if parameter.get("required"):
                return False
        elif not jsonschema_rs.validator_for(parameter["schema"]).is_valid(value):
            return False
    return True


def _accepts_body(operation: dict[str, Any], sent: Sent) -> bool:
    body = operation.get("requestBody")
    if body is None or sent.body is MISSING:
        return sent.body is MISSING and not (body or {}).get("required")
    media_type = (sent.content_type or "").split(";")[0].strip()
    if media_type not in body["content"]:
        return False
    value = sent.body
    if isinstance(value, bytes):
        try:
            value = json.loads(value)
        except ValueError:
            return False
    return bool(jsonschema_rs.validator_for(body["content"][media_type]["schema"]).is_valid(value))


def _accepts(operation: dict[str, Any], sent: Sent) -> bool:
    """Whether the document's parameters and body schema accept the request."""
    return _accepts_parameters(operation, sent) and _accepts_body(operation, sent)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
async def test_the_document_describes_what_the_router_answers(
    case: Case, app: App, client: httpx.AsyncClient
) -> None:
    document = (await client.get("/openapi.json")).json()
    sent, done = await _prepare(app, client, case)
    try:
        response = await _send(client, case, sent)
    finally:
        if done is not None:
            await done()
    assert response.status_code == case.status, response.text
    code = response.json()["code"] if case.code is not None else None
    assert code == case.code

    path = document["paths"][case.path]
    operation = path.get(case.method.lower())
    if operation is None:  # a method the router does not take
        assert case.status == 405
        documented = sorted(m.upper() for m in path if m in {"get", "post", "put", "delete"})
        allowed = sorted(m.strip() for m in response.headers["allow"].split(","))
        assert [m for m in allowed if m != "HEAD"] == documented
        assert "405" in path["description"]
        assert "Allow" in path["description"]
        return

    described = operation["responses"].get(str(response.status_code))
    assert described is not None, f"{response.status_code} is not described"
    media_type = response.headers["content-type"].split(";")[0]
    assert media_type in described.get("content", {}), media_type
    if code is not None:
        assert code in described["x-pausetoken-codes"], code
    for header in ("www-authenticate", "retry-after"):
        if header in response.headers:
            assert header in {name.lower() for name in described.get("headers", {})}, header

    if case.status < 300:
        assert _accepts(operation, sent), "the document refuses a request the router accepts"
    elif case.rule is not None:
        assert case.rule in _texts(document, case.path, operation), case.rule
    elif code in SHAPE_CODES or case.status in {413, 415} or case.missing_headers:
        assert not _accepts(operation, sent), "the document accepts what the router refuses"


def test_every_route_of_the_router_is_in_the_document(app: App) -> None:
    document = openapi_document()
    assets = {"/approve/page.js", "/approve/page.css", "/approve/icon.svg"}
    for route in app.router().routes:
        if route.path in assets:  # the page's own files, named in its description
            assert route.path.rsplit("/", 1)[1] in document["paths"]["/approve"]["description"]
            continue
        methods = {m.lower() for m in route.methods or ()} - {"head"}
        documented = set(document["paths"][route.path]) & {"get", "post", "put", "delete"}
        assert documented == methods, route.path


def test_without_the_page_the_document_describes_the_routes_left() -> None:
    document = openapi_document(approval_page=False)
    assert set(document["paths"]) == {"/resume", "/openapi.json"}
    limit = openapi_document(max_body_bytes=4096)["paths"]["/resume"]["post"]
    assert "4096 bytes" in limit["requestBody"]["description"]
