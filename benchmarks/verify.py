"""Token verification speed: pausetoken's strict verifier against joserfc and PyJWT.

All three verify the same HS256 token with the same key in one process, so the ratios are
comparable even on a noisy machine. Each figure is the median of 5 repeats.

    python benchmarks/verify.py            # 20,000 verifications per repeat
    python benchmarks/verify.py --quick    # 2,000
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import time
import uuid
from typing import TYPE_CHECKING

import jwt as pyjwt
from joserfc import jwt as jose_jwt
from joserfc.jwt import JWTClaimsRegistry

from pausetoken import JoseSigner, KeyRing, TokenPolicy, hash_payload, verify_token
from pausetoken._claims import CLAIMS_VERSION, new_jti

if TYPE_CHECKING:
    from collections.abc import Callable

REPEATS = 5


def realistic_claims(now: int) -> dict[str, object]:
    return {
        "iss": "pausetoken",
        "aud": "pausetoken",
        "iat": now,
        "exp": now + 3600,
        "jti": new_jti(),
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer operations per repeat")
    n = 2_000 if parser.parse_args().quick else 20_000

    secret = secrets.token_bytes(32)
    ring = KeyRing.from_secret(secret, kid="bench")
    signer = JoseSigner(ring)
    policy = TokenPolicy()
    key = ring.signing_key()[1]
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
    print(f"ratio ours / PyJWT:   {ours_rate / pyjwt_rate:.2f}")


if __name__ == "__main__":
    main()
