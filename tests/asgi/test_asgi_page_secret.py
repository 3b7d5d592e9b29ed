"""The approval page's anti-forgery secret: shared by every worker that shares the keys.

Each worker process builds its own router. The page's signed values must verify at any of
them, so the secret comes from the configuration: ``page_secret``, or derived from the
service's signing key (HKDF with a label of its own, so it is never the signing key
itself). A service that holds no secret key to derive it from refuses to build the page
without ``page_secret``. The uvicorn test with several workers is in test_asgi_workers.py.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import httpx
import pytest
from asgi_support import ACME, AUTH, REFUND, Refund, authenticate

from pausetoken import (
    JoseSigner,
    KeyRing,
    MemoryCheckpoints,
    MemoryStore,
    MemoryStoreWarning,
    PauseTokens,
    SealedSigner,
)
from pausetoken.asgi import CSRF_HEADER, ResumeRequest, ResumeResult, resume_router
from pausetoken.exceptions import ConfigurationError

BASE = "http://testserver"


def _service(signer: Any, store: MemoryStore, checkpoints: MemoryCheckpoints) -> PauseTokens:
    tokens = PauseTokens(signer=signer, store=store, checkpoints=checkpoints)
    tokens.register(REFUND)
    return tokens


def _router(tokens: PauseTokens, **options: Any) -> Any:
    async def resume(request: ResumeRequest) -> ResumeResult:
        done = await tokens.consume(request.token, request.answer, scope=request.scope)
        return ResumeResult({"ok": True}, replayed=done.replayed)

    return resume_router(tokens, authenticate=authenticate, resume=resume, **options)


@pytest.fixture
def shared() -> tuple[MemoryStore, MemoryCheckpoints]:
    """What two workers share: their store and their runs (here, in one process)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryStoreWarning)
        return MemoryStore(), MemoryCheckpoints()


async def _csrf(router: Any) -> str:
    transport = httpx.ASGITransport(app=router)
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=AUTH) as client:
        page = await client.get("/approve")
    found = re.search(r'name="pausetoken-csrf" content="([^"]+)"', page.text)
    assert found is not None
    return found[1]


async def _describe(router: Any, token: str, csrf: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=router)
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=AUTH) as client:
        headers = {"Origin": BASE, CSRF_HEADER: csrf}
        return await client.post("/approve/describe", json={"token": token}, headers=headers)


@pytest.mark.parametrize(
    "keys",
    [
        KeyRing.generate(),
        KeyRing.generate("EdDSA"),
        KeyRing.generate("ES256"),
    ],
    ids=["HS256", "EdDSA", "ES256"],
)
async def test_workers_loading_the_same_keys_accept_each_others_pages(
    keys: KeyRing, shared: tuple[MemoryStore, MemoryCheckpoints]
) -> None:
    jwks = keys.to_jwks(private=True)
    # Two processes: each loads the key file and builds its own service and router.
    first = _service(JoseSigner(KeyRing.from_jwks(jwks)), *shared)
    second = _service(JoseSigner(KeyRing.from_jwks(jwks)), *shared)
    token = (
        await first.mint(REFUND, Refund("o-1", 100), scope=ACME, thread_id="t", run_id="r")
    ).token

    response = await _describe(_router(second), token, await _csrf(_router(first)))

    assert response.status_code == 200, response.text


async def test_sealed_tokens_derive_the_secret_too(
    shared: tuple[MemoryStore, MemoryCheckpoints],
) -> None:
    jwks = KeyRing.generate("dir").to_jwks(private=True)
    first = _service(SealedSigner(KeyRing.from_jwks(jwks)), *shared)
    second = _service(SealedSigner(KeyRing.from_jwks(jwks)), *shared)
    token = (
        await first.mint(REFUND, Refund("o-1", 100), scope=ACME, thread_id="t", run_id="r")
    ).token
    response = await _describe(_router(second), token, await _csrf(_router(first)))
    assert response.status_code == 200, response.text


async def test_a_service_with_other_keys_refuses_the_pages_value(
    shared: tuple[MemoryStore, MemoryCheckpoints],
) -> None:
    ours = _service(JoseSigner(KeyRing.generate()), *shared)
    theirs = _service(JoseSigner(KeyRing.generate()), *shared)
    token = (
        await ours.mint(REFUND, Refund("o-1", 100), scope=ACME, thread_id="t", run_id="r")
    ).token
    response = await _describe(_router(ours), token, await _csrf(_router(theirs)))
    assert (response.status_code, response.json()["code"]) == (403, "csrf_invalid")


async def test_the_derived_secret_is_not_the_signing_key(
    shared: tuple[MemoryStore, MemoryCheckpoints],
) -> None:
    secret = b"k" * 7 + b"ey-material-of-32-bytes-or-more!"
    keys = KeyRing.from_secret(secret, kid="k1")
    tokens = _service(JoseSigner(keys), *shared)
    token = (
        await tokens.mint(REFUND, Refund("o-1", 100), scope=ACME, thread_id="t", run_id="r")
    ).token
    # A page value signed with the signing key itself is refused by the derived secret.
    forged_with_key = await _csrf(_router(tokens, page_secret=secret))
    response = await _describe(_router(tokens), token, forged_with_key)
    assert (response.status_code, response.json()["code"]) == (403, "csrf_invalid")


async def test_an_explicit_page_secret_is_shared_as_given(
    shared: tuple[MemoryStore, MemoryCheckpoints],
) -> None:
    secret = bytes(range(32))
    first = _service(JoseSigner(KeyRing.generate()), *shared)
    second = _service(JoseSigner(KeyRing.generate()), *shared)
    token = (
        await first.mint(REFUND, Refund("o-1", 100), scope=ACME, thread_id="t", run_id="r")
    ).token
    csrf = await _csrf(_router(second, page_secret=secret))
    # Verified by the service that minted it; the page's value by either router.
    response = await _describe(_router(first, page_secret=secret), token, csrf)
    assert response.status_code == 200, response.text


def test_a_verify_only_service_needs_a_page_secret_to_serve_the_page(
    shared: tuple[MemoryStore, MemoryCheckpoints],
) -> None:
    verifier = _service(JoseSigner(KeyRing.generate("EdDSA").verify_only()), *shared)

    with pytest.raises(ConfigurationError) as caught:
        _router(verifier)

    assert caught.value.code == "settings_missing"
    assert "page_secret" in caught.value.detail
    _router(verifier, page_secret=bytes(range(32)))
    _router(verifier, approval_page=False)


def test_a_signer_without_a_key_ring_needs_a_page_secret(
    shared: tuple[MemoryStore, MemoryCheckpoints],
) -> None:
    class OwnSigner:
        """A third-party signer: the router cannot see its keys."""

        def sign(self, claims: Any) -> str:
            raise NotImplementedError

        def verify(self, token: str, *, now: float) -> dict[str, Any]:
            raise NotImplementedError

    tokens = _service(OwnSigner(), *shared)
    with pytest.raises(ConfigurationError) as caught:
        _router(tokens)
    assert caught.value.code == "settings_missing"
    _router(tokens, page_secret=bytes(range(32)))
