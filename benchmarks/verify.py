"""Token verification speed: pausetoken's strict verifier against joserfc and PyJWT.

All three verify the same HS256 token with the same key in one process, so the ratios are
comparable even on a noisy machine. Each figure is the median of 5 repeats.

Then the cost of refusing: a normal rejection (a forged signature) against rejections of
4 KB tokens whose unauthenticated header is crafted to be expensive to parse (deep nesting,
3,000-digit numbers, hundreds of duplicate members). The worst ratio hostile / normal should
stay at or under 2: an attacker gains nothing by sending headers that are costly to parse.

    python benchmarks/verify.py            # 20,000 verifications per repeat
    python benchmarks/verify.py --quick    # 2,000
"""

from __future__ import annotations

import argparse
import base64
import json
import secrets
import statistics
import time
import uuid
from typing import TYPE_CHECKING

import jwt as pyjwt
from joserfc import jwt as jose_jwt
from joserfc.jwk import OctKey
from joserfc.jwt import JWTClaimsRegistry

from _results import record
from pausetoken import JoseSigner, KeyRing, TokenPolicy, hash_payload, verify_token
from pausetoken.exceptions import InvalidToken
from pausetoken.plugins import CLAIMS_VERSION

if TYPE_CHECKING:
    from collections.abc import Callable

REPEATS = 5
#: The worst hostile / normal rejection ratio accepted.
REJECTION_RATIO_TARGET = 2.0


def realistic_claims(now: int) -> dict[str, object]:
    return {
        "iss": "pausetoken",
        "aud": "pausetoken",
        "iat": now,
        "exp": now + 3600,
        "jti": secrets.token_urlsafe(16),
        "name": "refund-approval",
        "interrupt_id": uuid.uuid4().hex,
        "run_id": str(uuid.uuid4()),
        "session_id": str(uuid.uuid4()),
        "thread_id": str(uuid.uuid4()),
        "checkpoint_id": str(uuid.uuid1()),
        "scope_hash": hash_payload({"tenant_id": "acme", "namespace": "billing"}),
        "request_hash": hash_payload({"amount_cents": 1999, "order": "A-1042"}),
        "ver": CLAIMS_VERSION,
    }


def ops_per_second(candidates: dict[str, Callable[[], object]], n: int) -> dict[str, float]:
    """Median ops/s of each candidate; repeats take turns so load spikes hit all alike."""
    rates: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(REPEATS):
        for name, fn in candidates.items():
            start = time.perf_counter()
            for _ in range(n):
                fn()
            rates[name].append(n / (time.perf_counter() - start))
    return {name: statistics.median(values) for name, values in rates.items()}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def hostile_tokens(size: int = 4000) -> dict[str, str]:
    """Tokens of about ``size`` characters whose header is crafted to be costly to parse."""
    header_bytes = (size - 60) * 3 // 4
    base = b'{"alg":"HS256","typ":"pause+jwt","kid":"bench","x":'
    depth = (header_bytes - len(base)) // 2
    headers = {
        "deep nesting": base + b"[" * depth + b"]" * depth + b"}",
        "3,000-digit number": base + b"9" * min(3000, header_bytes - len(base) - 1) + b"}",
        "duplicate members": b"{"
        + b'"alg":"HS256",' * ((header_bytes - 40) // 14)
        + b'"typ":"pause+jwt"}',
        "embedded key (jwk)": base[:-5]
        + b'"jwk":{"kty":"RSA","e":"AQAB","n":"'
        + b"A" * (header_bytes - len(base) - 40)
        + b'"}}',
    }
    tail = f".{_b64(b'{}')}.{_b64(bytes(32))}"
    return {name: _b64(header) + tail for name, header in headers.items()}


def rejection_ratios(signer: JoseSigner, forged: str, n: int) -> None:
    """Print the cost of hostile rejections relative to a normal one (a forged signature)."""

    def refuse(token: str) -> Callable[[], object]:
        def run() -> object:
            try:
                signer.verify(token, now=time.time())
            except InvalidToken as exc:
                return exc.code
            msg = "the token was accepted"
            raise AssertionError(msg)

        return run

    hostile = hostile_tokens()
    candidates = {"normal: forged signature": refuse(forged)}
    candidates |= {f"hostile: {name}": refuse(token) for name, token in hostile.items()}
    codes = {name: run() for name, run in candidates.items()}
    sizes = {"normal: forged signature": len(forged)}
    sizes |= {f"hostile: {name}": len(token) for name, token in hostile.items()}
    labels = {name: f"{name} ({sizes[name]} chars, {codes[name]})" for name in candidates}
    rates = ops_per_second(candidates, n)
    normal = rates["normal: forged signature"]
    width = max(map(len, labels.values()))
    print()
    print(f"rejections, {n} per repeat, median of {REPEATS} repeats")
    worst = 0.0
    for name, rate in rates.items():
        ratio = normal / rate
        if name.startswith("hostile"):
            worst = max(worst, ratio)
        print(f"  {labels[name]:<{width}}  {1e6 / rate:>7.2f} µs  x{ratio:.2f}")
    verdict = "ok" if worst <= REJECTION_RATIO_TARGET else "OVER TARGET"
    record(
        "rejection time, worst hostile token / forged signature",
        worst,
        detail=f"normal rejection {1e6 / normal:.2f} µs",
        target=REJECTION_RATIO_TARGET,
        better="lower",
    )
    print(
        f"ratio hostile reject / normal reject (worst): {worst:.2f}  "
        f"(target <= {REJECTION_RATIO_TARGET:g}, {verdict})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer operations per repeat")
    n = 2_000 if parser.parse_args().quick else 20_000

    # A generated key: one the key checks accept, as every key given to pausetoken must be.
    ring = KeyRing.generate("HS256", kid="bench")
    signer = JoseSigner(ring)
    policy = TokenPolicy()
    key = ring.signing_key()[1]
    assert isinstance(key, OctKey)
    secret = key.raw_value
    now = int(time.time())
    claims = realistic_claims(now)
    token = signer.sign(claims)
    registry = JWTClaimsRegistry(
        iss={"essential": True, "value": "pausetoken"},
        aud={"essential": True, "value": "pausetoken"},
        exp={"essential": True},
        iat={"essential": True},
    )

    def ours() -> object:
        return verify_token(token, signer=signer, policy=policy, now=time.time())

    def joserfc() -> object:
        decoded = jose_jwt.decode(token, key, algorithms=["HS256"])
        registry.validate(decoded.claims)
        return decoded

    def pyjwt_decode() -> object:
        return pyjwt.decode(
            token, secret, algorithms=["HS256"], audience="pausetoken", issuer="pausetoken"
        )

    # Same answer from all three before timing anything.
    assert ours().to_dict() == claims  # type: ignore[attr-defined]
    assert joserfc().claims == claims  # type: ignore[attr-defined]
    assert pyjwt_decode() == claims

    payload_bytes = len(json.dumps(claims, separators=(",", ":")))
    print(f"HS256, {len(claims)} claims, {payload_bytes}-byte JSON, {len(token)}-char token")
    print(f"{n} verifications per repeat, median of {REPEATS} repeats")
    results = ops_per_second(
        {
            "pausetoken verify_token(JoseSigner)": ours,
            "joserfc jwt.decode + JWTClaimsRegistry.validate": joserfc,
            "PyJWT jwt.decode (key, alg, aud, iss)": pyjwt_decode,
        },
        n,
    )
    width = max(map(len, results))
    for name, rate in results.items():
        print(f"  {name:<{width}}  {rate:>10,.0f} ops/s")
    ours_rate, joserfc_rate, pyjwt_rate = results.values()
    print(f"ratio ours / joserfc: {ours_rate / joserfc_rate:.2f}  (target >= 1.0)")
    record(
        "verify, pausetoken / joserfc decode + claims",
        ours_rate / joserfc_rate,
        detail=f"{ours_rate:,.0f} ops/s / {joserfc_rate:,.0f} ops/s",
        target=1.0,
    )
    record(
        "verify, pausetoken / PyJWT decode",
        ours_rate / pyjwt_rate,
        detail=f"{ours_rate:,.0f} ops/s / {pyjwt_rate:,.0f} ops/s",
    )
    print(f"ratio ours / PyJWT:   {ours_rate / pyjwt_rate:.2f}")

    forged = JoseSigner(KeyRing.generate("HS256", kid="bench")).sign(claims)
    rejection_ratios(signer, forged, n)


if __name__ == "__main__":
    main()
