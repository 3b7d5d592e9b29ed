"""Fuzzing the router over real HTTP: schemathesis against its own OpenAPI description.

Every operation is fed valid and invalid requests drawn from the description (positive and
negative modes); no response may be a server error or stray from what the description
declares. A second property sends any JSON answer with a valid token: the router answers
200 or 422, never 500.
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Any, Final

import httpx
import pytest
import schemathesis
from asgi_support import AUTH, App, make_app, serve_in_thread
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from pausetoken.asgi import CSRF_HEADER, TOKEN_HEADER, openapi_document
from pausetoken.testing.strategies import payloads

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.slow

SCHEMA: Final = schemathesis.openapi.from_dict(openapi_document())
OPERATIONS: Final = {result.ok().label: result.ok() for result in SCHEMA.get_all_operations()}
CHECKS: Final = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
# Bounded: a few hundred requests in all, a few seconds on loopback.
FUZZ: Final = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, App]]:
    def build() -> tuple[Any, App]:
        app = make_app()
        app.loop = asyncio.get_running_loop()
        return app.router(), app

    with serve_in_thread(build) as found:
        yield found


def _page_headers(url: str) -> dict[str, str]:
    page = httpx.get(f"{url}/approve", headers=AUTH)
    csrf = re.search(r'name="pausetoken-csrf" content="([^"]+)"', page.text)
    assert csrf is not None
    return {CSRF_HEADER: csrf[1], "Origin": url}


# A GET without parameters has no invalid form: it is fuzzed in positive mode only.
CASES: Final = [
    (label, mode)
    for label in sorted(OPERATIONS)
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    if mode is GenerationMode.POSITIVE or label.startswith("POST")
]


@pytest.mark.parametrize(
    ("label", "mode"), CASES, ids=[f"{label}-{mode.value}" for label, mode in CASES]
)
def test_no_request_the_description_allows_or_forbids_is_a_server_error(
    served: tuple[str, App], label: str, mode: GenerationMode
) -> None:
    url, _ = served
    operation = OPERATIONS[label]
    # Past authentication (and, for the page's requests, its cross-site checks), so that
    # the fuzzed bodies reach the parsing and the service.
    headers = {**AUTH, **(_page_headers(url) if label.startswith("POST /approve") else {})}
    statuses: set[int] = set()

    @FUZZ
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case: Any) -> None:
        response = case.call(base_url=url, headers=headers)
        statuses.add(response.status_code)
        case.validate_response(response, checks=CHECKS)

    run()
    assert statuses, "no request was sent"


@FUZZ
@given(answer=payloads())
def test_any_json_answer_with_a_valid_token_is_accepted_or_422(
    served: tuple[str, App], answer: Any
) -> None:
    url, app = served
    token = app.call(app.mint(thread_id=f"fuzz-{id(answer)}-{len(app.resumed)}"))
    response = httpx.post(
        f"{url}/resume", json={"answer": answer}, headers={**AUTH, TOKEN_HEADER: token}
    )
    assert response.status_code in {200, 422}, response.text
    if response.status_code == 422:
        assert response.json()["code"] == "invalid_response"


@FUZZ
@given(body=st.binary(max_size=512))
def test_any_bytes_as_a_body_are_answered_with_a_problem_not_a_500(
    served: tuple[str, App], body: bytes
) -> None:
    url, _ = served
    response = httpx.post(
        f"{url}/resume", content=body, headers={**AUTH, "Content-Type": "application/json"}
    )
    assert 400 <= response.status_code < 500
    assert response.headers["content-type"] == "application/problem+json"
