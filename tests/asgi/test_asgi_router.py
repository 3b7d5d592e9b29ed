"""The resume router against its ASGI app, in-process (httpx.ASGITransport)."""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from asgi_support import ACME, AUTH, GLOBEX, App, make_app
from starlette.applications import Starlette
from starlette.routing import Mount

from pausetoken import Interrupt, PauseTokens, TokenStatus, exceptions
from pausetoken.asgi import (
    CONTENT_SECURITY_POLICY,
    CSRF_HEADER,
    TOKEN_HEADER,
    Caller,
    ResumeRequest,
    ResumeResult,
    openapi_document,
    problem_response,
    resume_router,
)
from pausetoken.exceptions import ConfigurationError, PauseTokenError, RedemptionInProgress

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

BASE = "http://testserver"
YES = {"approved": True}


@pytest.fixture
def app() -> App:
    return make_app()


@pytest.fixture
async def client(app: App) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app.router())
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=AUTH) as client:
        yield client


def assert_problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["code"] == code
    assert problem["status"] == status
    assert problem["type"] == f"urn:pausetoken:error:{code}"
    assert {"title", "detail"} <= set(problem)
    return problem


async def resume(client: httpx.AsyncClient, token: str, answer: Any = YES) -> httpx.Response:
    return await client.post("/resume", json={"answer": answer}, headers={TOKEN_HEADER: token})


# -- answering -------------------------------------------------------------------------------


async def test_an_answer_resumes_the_run_once_and_returns_its_result(
    app: App, client: httpx.AsyncClient
) -> None:
    token = await app.mint()
    response = await resume(client, token)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "no-store"
    assert response.json() == {
        "replayed": False,
        "result": {"status": "resumed", "thread_id": "t-1"},
    }
    assert [thread for thread, _ in app.resumed] == ["t-1"]
    assert await app.tokens.status(token, scope=ACME) is TokenStatus.REDEEMED


async def test_the_token_may_travel_in_the_body(app: App, client: httpx.AsyncClient) -> None:
    token = await app.mint()
    response = await client.post("/resume", json={"token": token, "answer": YES})
    assert response.status_code == 200
    assert response.json()["replayed"] is False


async def test_a_retry_of_the_same_answer_is_replayed_and_does_not_resume_again(
    app: App, client: httpx.AsyncClient
) -> None:
    token = await app.mint()
    assert (await resume(client, token)).status_code == 200
    again = await resume(client, token)
    assert again.status_code == 200
    assert again.json() == {"replayed": True, "result": {"status": "resumed"}}
    assert len(app.resumed) == 1


async def test_another_answer_after_the_first_is_a_conflict(
    app: App, client: httpx.AsyncClient
) -> None:
    token = await app.mint()
    await resume(client, token)
    assert_problem(await resume(client, token, {"approved": False}), 409, "already_redeemed")
    assert len(app.resumed) == 1


async def test_a_second_request_while_the_first_resumes_gets_retry_after(
    app: App, client: httpx.AsyncClient
) -> None:
    token = await app.mint()
    app.gate = asyncio.Event()
    first = asyncio.create_task(resume(client, token))
    await app.started.wait()
    second = await resume(client, token)
    problem = assert_problem(second, 409, "redemption_in_progress")
    assert int(second.headers["retry-after"]) >= 1
    assert problem["retry_after"] > 0
    app.gate.set()
    assert (await first).status_code == 200
    assert (await resume(client, token)).json()["replayed"] is True


async def test_a_forged_token_is_401_with_a_challenge(app: App, client: httpx.AsyncClient) -> None:
    token = await app.mint()
    head, claims, signature = token.split(".")
    forged = f"{head}.{claims}.{'B' if signature[0] == 'A' else 'A'}{signature[1:]}"
    response = await resume(client, forged)
    assert_problem(response, 401, "token_signature_invalid")
    assert response.headers["www-authenticate"] == "PauseToken"
    assert await app.tokens.status(token, scope=ACME) is TokenStatus.ACTIVE


async def test_another_tenant_is_refused(app: App, client: httpx.AsyncClient) -> None:
    token = await app.mint()
    response = await client.post(
        "/resume",
        json={"answer": YES},
        headers={TOKEN_HEADER: token, "Authorization": "Bearer key-globex"},
    )
    assert_problem(response, 403, "scope_mismatch")
    assert app.resumed == []


async def test_a_malformed_answer_is_422_and_the_token_stays_redeemable(
    app: App, client: httpx.AsyncClient
) -> None:
    token = await app.mint()
    assert_problem(await resume(client, token, {"approved": "yes"}), 422, "invalid_response")
    assert (await resume(client, token)).status_code == 200


async def test_an_expired_token_is_410(app: App) -> None:
    now = [time.time()]
    expired = make_app(clock=lambda: now[0])
    token = await expired.mint()
    now[0] += 2 * 86400
    transport = httpx.ASGITransport(app=expired.router())
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=AUTH) as client:
        assert_problem(await resume(client, token), 410, "token_expired")


async def test_a_revoked_token_is_410(app: App, client: httpx.AsyncClient) -> None:
    token = await app.mint()
    await app.tokens.revoke(token, scope=ACME)
    assert_problem(await resume(client, token), 410, "token_revoked")


async def test_a_resume_function_that_fails_is_500_and_the_answer_can_be_sent_again(
    app: App, client: httpx.AsyncClient
) -> None:
    token = await app.mint()
    app.fail_with = RuntimeError("the graph broke")
    problem = assert_problem(await resume(client, token), 500, "resume_failed")
    assert "graph broke" not in problem["detail"]
    app.fail_with = None
    assert (await resume(client, token)).status_code == 200


async def test_a_result_json_cannot_carry_is_500_resume_result_invalid(app: App) -> None:
    token = await app.mint()

    async def resume_to_a_set(request: ResumeRequest) -> ResumeResult:
        await app.tokens.consume(request.token, request.answer, scope=request.scope)
        return ResumeResult({1, 2})

    router = resume_router(app.tokens, authenticate=_acme, resume=resume_to_a_set)
    transport = httpx.ASGITransport(app=router)
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
        assert_problem(await resume(client, token), 500, "resume_result_invalid")


async def _acme(_request: object) -> Caller:
    return Caller(ACME)


# -- authentication --------------------------------------------------------------------------


async def test_a_stranger_is_401_before_the_body_is_read(app: App) -> None:
    transport = httpx.ASGITransport(app=app.router())
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
        response = await client.post("/resume", content=b"not json")
        assert_problem(response, 401, "not_authenticated")
        assert response.headers["www-authenticate"] == "Bearer"


async def test_an_authenticate_function_returning_something_else_is_a_500(app: App) -> None:
    async def wrong(_request: object) -> Any:
        return ACME

    router = resume_router(app.tokens, authenticate=wrong, resume=app.resume)
    transport = httpx.ASGITransport(app=router)
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
        problem = assert_problem(await resume(client, await app.mint()), 500, "configuration_error")
        assert problem["detail"] == "The service is not configured correctly."


# -- what the router refuses before looking at a token ------------------------------------------


@pytest.mark.parametrize(
    ("content", "code"),
    [
        (b"{", "request_json_invalid"),
        (b'{"answer": 1, "answer": 2}', "request_json_invalid"),
        (b'{"answer": NaN}', "request_json_invalid"),
        (b'{"answer": Infinity}', "request_json_invalid"),
        ('{"answer": "caf\u00e9"}'.encode("utf-16"), "request_json_invalid"),
        (b'{"answer": ' + b"[" * 40 + b"]" * 40 + b"}", "request_json_invalid"),
        (b"[" * 50_000 + b"]" * 50_000, "request_too_large"),
        (b'["answer"]', "request_invalid"),
        (b'{"token": "x"}', "request_invalid"),
        (b'{"answer": true, "scope": "acme"}', "request_invalid"),
        (b'{"answer": true}', "request_invalid"),
        (b'{"answer": true, "token": 7}', "request_invalid"),
        (b'{"answer": true, "token": ""}', "request_invalid"),
    ],
    ids=[
        "truncated",
        "duplicate-member",
        "nan",
        "infinity",
        "utf-16",
        "too-deep",
        "too-large",
        "not-an-object",
        "no-answer",
        "unknown-member",
        "no-token",
        "token-not-a-string",
        "empty-token",
    ],
)
async def test_a_body_not_in_shape_is_refused_with_its_code(
    client: httpx.AsyncClient, content: bytes, code: str
) -> None:
    response = await client.post(
        "/resume", content=content, headers={"Content-Type": "application/json"}
    )
    assert_problem(response, 413 if code == "request_too_large" else 400, code)


async def test_a_body_over_the_limit_is_refused_before_it_is_read_whole(app: App) -> None:
    chunks_read = 0

    async def body() -> AsyncIterator[bytes]:
        nonlocal chunks_read
        for _ in range(1000):  # no Content-Length: the router counts as it reads
            chunks_read += 1
            yield b" " * 1024

    transport = httpx.ASGITransport(app=app.router(max_body_bytes=8192))
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=AUTH) as client:
        response = await client.post(
            "/resume", content=body(), headers={"Content-Type": "application/json"}
        )
    assert_problem(response, 413, "request_too_large")
    assert chunks_read < 1000


async def test_a_declared_length_over_the_limit_is_refused_unread(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post(
        "/resume",
        content=b"{}",
        headers={"Content-Type": "application/json", "Content-Length": str(10**9)},
    )
    assert_problem(response, 413, "request_too_large")


@pytest.mark.parametrize(
    "content_type", [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]
)
async def test_a_body_that_is_not_json_is_415(
    app: App, client: httpx.AsyncClient, content_type: str | None
) -> None:
    token = await app.mint()
    headers = {TOKEN_HEADER: token}
    if content_type is not None:
        headers["Content-Type"] = content_type
    response = await client.post("/resume", content=b'{"answer": true}', headers=headers)
    assert_problem(response, 415, "media_type_unsupported")


async def test_json_with_a_charset_parameter_is_json(app: App, client: httpx.AsyncClient) -> None:
    token = await app.mint()
    response = await client.post(
        "/resume",
        content=b'{"answer": {"approved": true}}',
        headers={TOKEN_HEADER: token, "Content-Type": "application/json; charset=utf-8"},
    )
    assert response.status_code == 200


async def test_a_token_in_the_query_string_is_refused_and_not_used(
    app: App, client: httpx.AsyncClient
) -> None:
    token = await app.mint()
    response = await client.post("/resume", params={"token": token}, json={"answer": YES})
    assert_problem(response, 400, "token_in_url")
    assert await app.tokens.status(token, scope=ACME) is TokenStatus.ACTIVE


async def test_a_token_sent_twice_is_refused(app: App, client: httpx.AsyncClient) -> None:
    token = await app.mint()
    response = await client.post(
        "/resume", json={"token": token, "answer": YES}, headers={TOKEN_HEADER: token}
    )
    assert_problem(response, 400, "request_invalid")


async def test_only_post_answers(client: httpx.AsyncClient) -> None:
    assert (await client.get("/resume")).status_code == 405


# -- problem responses -----------------------------------------------------------------------


def test_redemption_in_progress_rounds_retry_after_up_and_never_below_one() -> None:
    assert problem_response(RedemptionInProgress(retry_after=2.1)).headers["retry-after"] == "3"
    assert problem_response(RedemptionInProgress(retry_after=0.01)).headers["retry-after"] == "1"
    assert problem_response(RedemptionInProgress()).headers["retry-after"] == "1"


def test_a_configuration_errors_detail_stays_in_the_log() -> None:
    response = problem_response(ConfigurationError("keys file /etc/secret is unreadable"))
    assert b"/etc/secret" not in response.body


ERRORS = [
    error
    for name in exceptions.__all__
    if isinstance(error := getattr(exceptions, name), type)
    and issubclass(error, exceptions.PauseTokenError)
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda error: error.__name__)
def test_every_error_is_answered_with_its_problem_details(error: type[PauseTokenError]) -> None:
    response = problem_response(error("what went wrong"))
    problem = json.loads(response.body)
    assert response.status_code == error.http_status == problem["status"]
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["cache-control"] == "no-store"
    assert problem["code"] == error.default_code
    assert problem["type"] == f"urn:pausetoken:error:{error.default_code}"
    shown = problem["detail"] == "what went wrong"
    assert shown is not issubclass(error, exceptions.ConfigurationError)
    assert ("www-authenticate" in response.headers) is (response.status_code == 401)
    assert ("retry-after" in response.headers) is (error is RedemptionInProgress)


# -- OpenAPI and configuration ---------------------------------------------------------------


async def test_the_router_serves_its_openapi_description(
    app: App, client: httpx.AsyncClient
) -> None:
    response = await client.get("/openapi.json")
    assert response.json() == openapi_document()
    assert set(response.json()["paths"]) == {
        "/resume",
        "/openapi.json",
        "/approve",
        "/approve/describe",
        "/approve/answer",
    }
    without_page = openapi_document(approval_page=False)
    assert set(without_page["paths"]) == {"/resume", "/openapi.json"}


async def test_without_the_page_its_routes_are_absent(app: App) -> None:
    transport = httpx.ASGITransport(app=app.router(approval_page=False))
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=AUTH) as client:
        assert (await client.get("/approve")).status_code == 404
        assert (await client.get("/openapi.json")).json() == openapi_document(approval_page=False)


async def test_mounted_under_a_prefix_the_page_links_its_assets_under_it(app: App) -> None:
    outer = Starlette(routes=[Mount("/pauses", app=app.router())])
    transport = httpx.ASGITransport(app=outer)
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=AUTH) as client:
        page = (await client.get("/pauses/approve")).text
        assert 'src="/pauses/approve/page.js"' in page
        assert 'content="/pauses/approve/answer"' in page
        token = await app.mint()
        response = await client.post(
            "/pauses/resume", json={"answer": YES}, headers={TOKEN_HEADER: token}
        )
        assert response.status_code == 200


@pytest.mark.parametrize(
    "options",
    [
        {"max_body_bytes": 1000},
        {"page_secret": b"short"},
        {"page_lifetime": 0},
    ],
)
def test_unsafe_options_are_refused_when_the_router_is_built(
    app: App, options: dict[str, Any]
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        app.router(**options)
    assert caught.value.code == "settings_invalid"


def test_reprs_show_no_token_or_answer() -> None:
    request = ResumeRequest("eyJhbGciOi.secret-claims.sig", {"note": "private"}, Caller(ACME))
    assert "secret" not in repr(request)
    assert "private" not in repr(request)
    assert "private" not in repr(ResumeResult({"note": "private"}))
    assert request.scope == ACME
    assert request.principal is None
    assert Caller(GLOBEX, "bob").principal == "bob"


# -- the approval page's HTTP side -----------------------------------------------------------


async def page_csrf(client: httpx.AsyncClient) -> str:
    page = await client.get("/approve")
    found = re.search(r'name="pausetoken-csrf" content="([^"]+)"', page.text)
    assert found is not None
    return found[1]


async def test_the_page_is_served_with_a_strict_policy_and_no_inline_script(
    client: httpx.AsyncClient,
) -> None:
    page = await client.get("/approve")
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "default-src 'none'" in CONTENT_SECURITY_POLICY
    assert "'unsafe-inline'" not in CONTENT_SECURITY_POLICY
    assert page.headers["cache-control"] == "no-store"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["x-content-type-options"] == "nosniff"
    assert re.findall(r"<script(?![^>]*\bsrc=)", page.text) == []
    assert "<style" not in page.text
    assert " style=" not in page.text
    for asset, media in (("page.js", "text/javascript"), ("page.css", "text/css")):
        served = await client.get(f"/approve/{asset}")
        assert served.headers["content-type"].startswith(media)
        assert served.headers["content-security-policy"] == CONTENT_SECURITY_POLICY


async def test_the_page_with_a_token_in_the_query_is_refused(client: httpx.AsyncClient) -> None:
    assert_problem(await client.get("/approve?token=abc"), 400, "token_in_url")


async def test_describe_shows_the_pending_payload_and_changes_nothing(
    app: App, client: httpx.AsyncClient
) -> None:
    token = await app.mint()
    csrf = await page_csrf(client)
    headers = {CSRF_HEADER: csrf, "Origin": BASE}
    described = await client.post("/approve/describe", json={"token": token}, headers=headers)
    assert described.status_code == 200
    body = described.json()
    assert body["name"] == "refund"
    assert body["payload"] == {"order_id": "order-1", "amount_cents": 1250}
    assert body["expires_at"].endswith("+00:00")
    assert await app.tokens.status(token, scope=ACME) is TokenStatus.ACTIVE
    answered = await client.post(
        "/approve/answer", json={"token": token, "answer": YES}, headers=headers
    )
    assert answered.json()["replayed"] is False
    again = await client.post("/approve/describe", json={"token": token}, headers=headers)
    assert_problem(again, 409, "already_redeemed")


async def test_describe_tells_a_revoked_pause(app: App, client: httpx.AsyncClient) -> None:
    token = await app.mint()
    await app.tokens.revoke(token, scope=ACME)
    headers = {CSRF_HEADER: await page_csrf(client), "Origin": BASE}
    response = await client.post("/approve/describe", json={"token": token}, headers=headers)
    assert_problem(response, 410, "token_revoked")


async def test_describe_refuses_another_tenant_and_a_forged_token(
    app: App, client: httpx.AsyncClient
) -> None:
    token = await app.mint(scope=GLOBEX)
    headers = {CSRF_HEADER: await page_csrf(client), "Origin": BASE}
    response = await client.post("/approve/describe", json={"token": token}, headers=headers)
    assert_problem(response, 403, "scope_mismatch")
    response = await client.post(
        "/approve/describe", json={"token": token[:-2] + "xx"}, headers=headers
    )
    assert response.status_code == 401


async def test_describe_refuses_a_token_bound_to_another_principal(
    app: App, client: httpx.AsyncClient
) -> None:
    token = await app.mint(principal="carol")
    headers = {CSRF_HEADER: await page_csrf(client), "Origin": BASE}
    response = await client.post("/approve/describe", json={"token": token}, headers=headers)
    assert_problem(response, 403, "principal_mismatch")


async def test_describe_while_another_request_holds_the_claim_is_in_progress(
    app: App, client: httpx.AsyncClient
) -> None:
    token = await app.mint()
    app.gate = asyncio.Event()
    first = asyncio.create_task(resume(client, token))
    await app.started.wait()
    headers = {CSRF_HEADER: await page_csrf(client), "Origin": BASE}
    response = await client.post("/approve/describe", json={"token": token}, headers=headers)
    assert_problem(response, 409, "redemption_in_progress")
    assert "retry-after" in response.headers
    app.gate.set()
    await first


@pytest.mark.parametrize("route", ["/approve/describe", "/approve/answer"])
@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({}, "origin_refused"),
        ({"Origin": "https://evil.example"}, "origin_refused"),
        ({"Origin": BASE, "Sec-Fetch-Site": "cross-site"}, "origin_refused"),
        ({"Origin": BASE}, "csrf_invalid"),
        ({"Origin": BASE, CSRF_HEADER: "1.2.3"}, "csrf_invalid"),
        ({"Origin": BASE, CSRF_HEADER: "not-a-value"}, "csrf_invalid"),
    ],
    ids=["no-origin", "other-origin", "cross-site-fetch", "no-csrf", "forged-csrf", "garbage"],
)
async def test_the_pages_requests_must_come_from_the_page(
    app: App, client: httpx.AsyncClient, route: str, headers: dict[str, str], code: str
) -> None:
    token = await app.mint()
    response = await client.post(route, json={"token": token, "answer": YES}, headers=headers)
    assert_problem(response, 403, code)
    assert await app.tokens.status(token, scope=ACME) is TokenStatus.ACTIVE


async def test_a_value_from_another_router_or_past_its_lifetime_is_refused(app: App) -> None:
    token = await app.mint()
    other = app.router(page_secret=bytes(range(32)))  # a router with a secret of its own
    transport = httpx.ASGITransport(app=other)
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=AUTH) as client:
        foreign = await page_csrf(client)
    transport = httpx.ASGITransport(app=app.router(page_lifetime=60))
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=AUTH) as client:
        own = await page_csrf(client)
        headers = {"Origin": BASE, CSRF_HEADER: foreign}
        response = await client.post("/approve/describe", json={"token": token}, headers=headers)
        assert_problem(response, 403, "csrf_invalid")
        issued, nonce, mac = own.split(".")
        old = f"{int(issued) - 120}.{nonce}.{mac}"
        response = await client.post(
            "/approve/describe", json={"token": token}, headers={"Origin": BASE, CSRF_HEADER: old}
        )
        assert_problem(response, 403, "csrf_invalid")


async def test_a_shared_page_secret_lets_every_worker_accept_the_page(app: App) -> None:
    secret = b"s" * 32
    token = await app.mint()
    first = httpx.ASGITransport(app=app.router(page_secret=secret))
    async with httpx.AsyncClient(transport=first, base_url=BASE, headers=AUTH) as client:
        csrf = await page_csrf(client)
    second = httpx.ASGITransport(app=app.router(page_secret=secret))
    async with httpx.AsyncClient(transport=second, base_url=BASE, headers=AUTH) as client:
        response = await client.post(
            "/approve/describe", json={"token": token}, headers={"Origin": BASE, CSRF_HEADER: csrf}
        )
        assert response.status_code == 200


async def test_allowed_origins_replace_the_requests_own(app: App) -> None:
    token = await app.mint()
    router = app.router(allowed_origins=["https://app.example"])
    transport = httpx.ASGITransport(app=router)
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=AUTH) as client:
        csrf = await page_csrf(client)
        own = await client.post(
            "/approve/describe", json={"token": token}, headers={"Origin": BASE, CSRF_HEADER: csrf}
        )
        assert_problem(own, 403, "origin_refused")
        proxied = await client.post(
            "/approve/describe",
            json={"token": token},
            headers={"Origin": "https://app.example", CSRF_HEADER: csrf},
        )
        assert proxied.status_code == 200


async def test_describe_takes_only_a_token(app: App, client: httpx.AsyncClient) -> None:
    token = await app.mint()
    headers = {CSRF_HEADER: await page_csrf(client), "Origin": BASE}
    response = await client.post(
        "/approve/describe", json={"token": token, "answer": YES}, headers=headers
    )
    assert_problem(response, 400, "request_invalid")


async def test_describe_refuses_a_kind_the_service_does_not_register(
    app: App, client: httpx.AsyncClient
) -> None:
    other = PauseTokens(
        signer=app.tokens.signer, store=app.tokens.store, checkpoints=app.checkpoints
    )
    unknown = other.register(Interrupt("unregistered", payload=dict[str, Any], response=bool))
    event = await other.mint(unknown, {"x": 1}, scope=ACME, thread_id="t-9", run_id="r")
    headers = {CSRF_HEADER: await page_csrf(client), "Origin": BASE}
    response = await client.post("/approve/describe", json={"token": event.token}, headers=headers)
    assert_problem(response, 400, "unknown_interrupt")
    # Another tenant learns nothing of the kind: the scope is checked first.
    foreign = await other.mint(unknown, {"x": 1}, scope=GLOBEX, thread_id="t-8", run_id="r")
    response = await client.post(
        "/approve/describe", json={"token": foreign.token}, headers=headers
    )
    assert_problem(response, 403, "scope_mismatch")


async def test_describe_after_the_run_moved_on_is_stale(
    app: App, client: httpx.AsyncClient
) -> None:
    token = await app.mint("t-moved")
    app.checkpoints.advance("t-moved")
    headers = {CSRF_HEADER: await page_csrf(client), "Origin": BASE}
    response = await client.post("/approve/describe", json={"token": token}, headers=headers)
    assert_problem(response, 409, "stale_token")
