"""Errors: stable codes, HTTP statuses, RFC 9457 problem details."""

from __future__ import annotations

import pytest

from pausetoken import exceptions
from pausetoken.exceptions import InvalidResponse, PauseTokenError, RedemptionInProgress

ERRORS = [getattr(exceptions, name) for name in exceptions.__all__]


def test_every_error_is_exported_and_derives_from_the_base() -> None:
    defined = {
        obj
        for obj in vars(exceptions).values()
        if isinstance(obj, type) and issubclass(obj, PauseTokenError)
    }
    assert defined == set(ERRORS)


def test_codes_are_unique_snake_case_and_statuses_are_http_errors() -> None:
    codes = [error.default_code for error in ERRORS]
    assert len(codes) == len(set(codes))
    for error in ERRORS:
        assert error.default_code.replace("_", "").isalpha()
        assert error.default_code == error.default_code.lower()
        assert 400 <= error.http_status < 600


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (exceptions.InvalidToken, 401),
        (exceptions.TokenExpired, 410),
        (exceptions.ScopeMismatch, 403),
        (exceptions.PrincipalMismatch, 403),
        (exceptions.UnknownInterrupt, 400),
        (exceptions.InvalidResponse, 422),
        (exceptions.PayloadMismatch, 400),
        (exceptions.CheckpointNotFound, 404),
        (exceptions.CheckpointLost, 424),
        (exceptions.StaleToken, 409),
        (exceptions.AlreadyRedeemed, 409),
        (exceptions.RedemptionInProgress, 409),
        (exceptions.TokenRevoked, 410),
        (exceptions.StoreUnavailable, 503),
    ],
)
def test_statuses_follow_the_design(error: type[PauseTokenError], status: int) -> None:
    assert error.http_status == status


@pytest.mark.parametrize("error", ERRORS)
def test_problem_details_follow_rfc_9457(error: type[PauseTokenError]) -> None:
    problem = error().to_problem()
    assert problem["type"] == f"urn:pausetoken:error:{error.default_code}"
    assert problem["status"] == error.http_status
    assert problem["code"] == error.default_code
    assert problem["title"]
    assert problem["detail"]


def test_a_specific_code_overrides_the_family_default() -> None:
    err = exceptions.InvalidToken("bad signature", code="token_signature_invalid")
    assert err.code == "token_signature_invalid"
    assert err.to_problem()["type"].endswith("token_signature_invalid")
    assert str(err) == "[token_signature_invalid] bad signature"


def test_extra_members_appear_in_problem_details() -> None:
    assert InvalidResponse("no", field="$.approved").to_problem()["field"] == "$.approved"
    assert RedemptionInProgress(retry_after=2.5).to_problem()["retry_after"] == 2.5
    assert "field" not in InvalidResponse().to_problem()
