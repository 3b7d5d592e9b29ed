"""Mint, verify and consume on MemoryStore, each next to a baseline run in the same process.

    python benchmarks/redeem.py            # 5 repeats x 5,000 operations
    python benchmarks/redeem.py --quick    # 3 repeats x 1,000

Baselines: joserfc `jwt.encode` (mint), joserfc `jwt.decode` + `JWTClaimsRegistry.validate`
(verify), and for consume both a bare dict-based single-use check and the naive redemption
(joserfc decode + claims validation + adding the jti to a set under an `asyncio.Lock`; target
ratio >= 0.6). Ratios are ours / baseline: above 1.0 means pausetoken is faster. Medians of
the repeats (consume's and the naive check's taken in turns); the machine is noisy,
compare ratios. Each step of a consume (verify, the answer
typed and hashed, the checkpoint read with the payload hashed and typed, the pause key, the
claim and the commit) is also timed alone: their sum is the floor no consume can go under
without leaving a step out.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import time
import warnings
from typing import TYPE_CHECKING

import attrs
from joserfc import jwt
from joserfc.jwk import OctKey

from _claims import fresh_claim
from _results import record
from pausetoken import (
    Interrupt,
    JoseSigner,
    KeyRing,
    MemoryCheckpoints,
    MemoryStore,
    MemoryStoreWarning,
    PauseTokens,
    Scope,
    hash_payload,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

SCOPE = Scope("acme", namespace="billing")
# A random key per run, as the key checks require; joserfc's baseline verifies with the same.
SECRET = secrets.token_bytes(32)


@attrs.frozen
class Refund:
    order_id: str
    amount_cents: int
    reason: str


@attrs.frozen
class Decision:
    approved: bool
    note: str = ""


PAYLOAD = {"order_id": "order-0000042", "amount_cents": 1999, "reason": "damaged on arrival"}


def rate(run: Callable[[int], float], n: int, repeats: int) -> float:
    return statistics.median(n / run(n) for _ in range(repeats))


def arate(run: Callable[[int], Awaitable[float]], n: int, repeats: int) -> float:
    async def all_runs() -> list[float]:
        return [n / await run(n) for _ in range(repeats)]

    return statistics.median(asyncio.run(all_runs()))


def arates_in_turn(
    ours: Callable[[int], Awaitable[float]],
    baseline: Callable[[int], Awaitable[float]],
    n: int,
    repeats: int,
) -> tuple[float, float]:
    """`arate()` of both, their repeats taken in turns (ours first, then the baseline first)."""

    async def all_runs() -> tuple[list[float], list[float]]:
        our_rates: list[float] = []
        baseline_rates: list[float] = []
        for i in range(repeats):
            pair = (ours, baseline) if i % 2 == 0 else (baseline, ours)
            for run in pair:
                (our_rates if run is ours else baseline_rates).append(n / await run(n))
        return our_rates, baseline_rates

    our_rates, baseline_rates = asyncio.run(all_runs())
    return statistics.median(our_rates), statistics.median(baseline_rates)


def build() -> PauseTokens:
    warnings.simplefilter("ignore", MemoryStoreWarning)
    keys = KeyRing.from_secret(SECRET, kid="bench")
    tokens = PauseTokens(
        signer=JoseSigner(keys), store=MemoryStore(), checkpoints=MemoryCheckpoints()
    )
    tokens.register(Interrupt("refund", payload=Refund, response=Decision))
    return tokens


async def mint_many(tokens: PauseTokens, n: int, offset: int = 0) -> list[str]:
    return [
        (
            await tokens.mint(
                "refund", PAYLOAD, scope=SCOPE, thread_id=f"t-{offset + i}", run_id="run"
            )
        ).token
        for i in range(n)
    ]


def report(
    label: str,
    ours: float,
    baseline_label: str,
    baseline: float,
    target: float | None = None,
    *,
    judged: bool = True,
) -> None:
    print(
        f"{label:<9} {ours:>10,.0f} ops/s   {baseline_label:<44} {baseline:>10,.0f} ops/s"
        f"   ratio {ours / baseline:.2f}"
    )
    if not judged:  # shown for scale only
        return
    record(
        f"{label} / {baseline_label}",
        ours / baseline,
        detail=f"{ours:,.0f} ops/s / {baseline:,.0f} ops/s",
        target=target,
    )


OCT_KEY = OctKey.import_key(SECRET)
REGISTRY = jwt.JWTClaimsRegistry(
    iss={"essential": True, "value": "pausetoken"},
    aud={"essential": True, "value": "pausetoken"},
    exp={"essential": True},
    iat={"essential": True},
    jti={"essential": True},
)


def bench_mint(tokens: PauseTokens, n: int, repeats: int) -> None:
    counter = iter(range(10**9))

    async def ours_mint(count: int) -> float:
        start = time.perf_counter()
        await mint_many(tokens, count, offset=next(counter) * count)
        return time.perf_counter() - start

    sample = tokens.verify(asyncio.run(mint_many(tokens, 1, offset=-1))[0]).to_dict()

    def joserfc_mint(count: int) -> float:
        start = time.perf_counter()
        for _ in range(count):
            jwt.encode({"alg": "HS256", "typ": "pause+jwt", "kid": "bench"}, sample, OCT_KEY)
        return time.perf_counter() - start

    report(
        "mint", arate(ours_mint, n, repeats), "joserfc jwt.encode", rate(joserfc_mint, n, repeats)
    )


def bench_verify(tokens: PauseTokens, n: int, repeats: int) -> float:
    token = asyncio.run(mint_many(tokens, 1, offset=-2))[0]

    def ours_verify(count: int) -> float:
        start = time.perf_counter()
        for _ in range(count):
            tokens.verify(token)
        return time.perf_counter() - start

    def joserfc_verify(count: int) -> float:
        start = time.perf_counter()
        for _ in range(count):
            REGISTRY.validate(jwt.decode(token, OCT_KEY, algorithms=["HS256"]).claims)
        return time.perf_counter() - start

    ours = rate(ours_verify, n, repeats)
    baseline = rate(joserfc_verify, n, repeats)
    report("verify", ours, "joserfc jwt.decode + JWTClaimsRegistry", baseline)
    return ours


def bench_consume(tokens: PauseTokens, n: int, repeats: int, verify_rate: float) -> None:
    batches = [asyncio.run(mint_many(tokens, n, offset=(r + 10) * n)) for r in range(repeats)]
    answer = {"approved": True}

    async def ours_consume(count: int) -> float:
        batch = batches.pop()
        start = time.perf_counter()
        for each in batch[:count]:
            await tokens.consume(each, answer, scope=SCOPE)
        return time.perf_counter() - start

    jtis = [f"jti-{i}" for i in range(n * repeats)]
    used: dict[str, str] = {}

    def dict_check(count: int) -> float:
        todo = [jtis.pop() for _ in range(count)]
        start = time.perf_counter()
        for jti in todo:
            if jti in used:
                raise RuntimeError
            used[jti] = "redeemed"
        return time.perf_counter() - start

    naive_batches = [asyncio.run(mint_many(tokens, n, offset=(r + 90) * n)) for r in range(repeats)]
    seen: set[str] = set()

    async def naive_consume(count: int) -> float:
        # The single-use check most systems do: decode, validate the claims, remember the jti.
        batch = naive_batches.pop()
        lock = asyncio.Lock()
        start = time.perf_counter()
        for each in batch[:count]:
            claims = jwt.decode(each, OCT_KEY, algorithms=["HS256"]).claims
            REGISTRY.validate(claims)
            async with lock:
                if claims["jti"] in seen:
                    raise RuntimeError
                seen.add(claims["jti"])
        return time.perf_counter() - start

    # Taken in turns, so that a machine that speeds up or slows down meanwhile weighs on both.
    ours, naive = arates_in_turn(ours_consume, naive_consume, n, repeats)
    bare = rate(dict_check, n, repeats)
    report("consume", ours, "bare dict single-use check", bare, judged=False)
    report("consume", ours, "joserfc decode + claims + jti set under a lock", naive, target=0.6)
    # Where a consume's time goes: the verification, and everything after it (the checkpoint
    # check, hashing and typing the payload and the answer, the claim, the commit).
    per, verifying = 1e6 / ours, 1e6 / verify_rate
    print(
        f"          {per:.1f} µs per consume: verify {verifying:.1f} µs, the rest"
        f" {per - verifying:.1f} µs; the naive check takes {1e6 / naive:.1f} µs in all"
    )
    parts = asyncio.run(consume_steps(tokens, n))
    steps = sum(parts.values())
    print(
        "          a consume's steps, each alone (µs): "
        + ", ".join(f"{name} {value:.1f}" for name, value in parts.items())
    )
    print(
        f"          floor: the steps add up to {steps:.1f} µs, ratio {1e6 / naive / steps:.2f}"
        " against the naive check with no time between them"
    )
    record(
        "floor of consume (its steps alone, added) / joserfc decode + claims + jti set",
        1e6 / naive / steps,
        detail=f"{steps:.1f} µs / {1e6 / naive:.1f} µs",
    )


async def consume_steps(tokens: PauseTokens, n: int) -> dict[str, float]:
    """Median µs of each step a consume takes, each timed alone on one token."""
    [token] = await mint_many(tokens, 1, offset=-3)
    claims = tokens.verify(token)
    refund = tokens.interrupt("refund")
    answer = {"approved": True}
    store = MemoryStore()

    async def verify() -> None:
        tokens.verify(token)

    async def check_answer() -> None:
        hash_payload(refund.structure_response(answer), converter=refund.converter)

    async def check_pause() -> None:
        pending = await tokens.checkpoints.pending(
            thread_id=claims.thread_id,
            checkpoint_id=claims.checkpoint_id,
            interrupt_id=claims.interrupt_id,
        )
        hash_payload(pending.value)
        refund.structure_payload(pending.value)

    async def pause_key() -> None:
        _ = claims.pause_key

    async def claim_and_commit() -> None:
        request = fresh_claim(claims)
        await store.claim(request)
        await store.commit(request.pause_key, request.lease_id, request.expires_at)

    steps = {
        "verify": verify,
        "answer typed and hashed": check_answer,
        "checkpoint read, payload hashed and typed": check_pause,
        "pause key": pause_key,
        "claim and commit": claim_and_commit,
    }
    out: dict[str, float] = {}
    for name, step in steps.items():
        samples = []
        for _ in range(n):
            start = time.perf_counter()
            await step()
            samples.append(time.perf_counter() - start)
        out[name] = statistics.median(samples) * 1e6
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    args = parser.parse_args()
    n, repeats = (1_000, 3) if args.quick else (5_000, 5)
    tokens = build()
    bench_mint(tokens, n, repeats)
    verify_rate = bench_verify(tokens, n, repeats)
    bench_consume(tokens, n, repeats, verify_rate)


if __name__ == "__main__":
    main()
