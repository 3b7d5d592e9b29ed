"""Errors: stable codes, HTTP statuses, RFC 9457 problem details."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pausetoken import exceptions
from pausetoken._policy import TokenPolicy
from pausetoken.exceptions import InvalidResponse, PauseTokenError, RedemptionInProgress

ERRORS = [
    error
    for name in exceptions.__all__
    if isinstance(error := getattr(exceptions, name), type) and issubclass(error, PauseTokenError)
]


def test_every_error_is_exported_and_derives_from_the_base() -> None:
    defined = {
        obj
        for obj in vars(exceptions).values()
        if isinstance(obj, type) and issubclass(obj, PauseTokenError)
    }
    assert defined == set(ERRORS)
    assert set(exceptions.__all__) == {error.__name__ for error in ERRORS} | {"Code"}


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


# -- codes declared on the classes -----------------------------------------------------------


@pytest.mark.parametrize("error", ERRORS)
def test_every_class_declares_its_codes_with_a_one_line_meaning(
    error: type[PauseTokenError],
) -> None:
    codes = error.__dict__.get("codes")
    assert codes is not None, f"{error.__name__} declares no codes of its own"
    assert error.default_code in codes
    for code, meaning in codes.items():
        assert code.replace("_", "").isalnum()
        assert code == code.lower()
        assert meaning.strip()
        assert "\n" not in meaning
        assert "|" not in meaning  # the meaning is a cell of the docs table


def test_a_class_never_declares_another_class_default_code() -> None:
    defaults = {error.default_code: error for error in ERRORS}
    for error in ERRORS:
        for code in error.codes:
            assert defaults.get(code, error) is error, (code, error.__name__)


@pytest.mark.parametrize("error", ERRORS)
def test_every_declared_code_can_be_raised(error: type[PauseTokenError]) -> None:
    for code in error.codes:
        assert error("detail", code=code).code == code


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (exceptions.InvalidToken, "token_made_up"),
        (exceptions.InvalidToken, "configuration_error"),
        (exceptions.ConfigurationError, "token_malformed"),
        (exceptions.StoreUnavailable, "store_unavailble"),
    ],
)
def test_a_code_not_declared_on_the_class_is_refused(
    error: type[PauseTokenError], code: str
) -> None:
    with pytest.raises(ValueError, match=error.__name__):
        error("detail", code=code)


# Helpers that build an error from a code argument: (file, helper) -> (position, class built).
_HELPERS = {
    ("_signers.py", "_fail"): (0, "InvalidToken"),
    ("_compact.py", "_fail"): (0, "InvalidToken"),
    ("_compact.py", "_parse_json_text"): (1, "InvalidToken"),
    ("_compact.py", "_utf8"): (1, "InvalidToken"),
    ("_settings.py", "_error"): (0, "ConfigurationError"),
    ("_keys.py", "_config_error"): (1, "ConfigurationError"),
}
_ROOT = Path(__file__).resolve().parents[2]


def _strings(node: ast.expr, names: dict[str, set[str]]) -> set[str]:
    """The codes ``node`` may name: a literal, a named string, a class's ``Code`` constant
    (``InvalidKeys.KEY_TOO_SHORT``), either branch."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Attribute) and node.attr.isupper():
        return {node.attr.lower()}
    if isinstance(node, ast.Name):
        return names.get(node.id, set())
    if isinstance(node, ast.IfExp):
        return _strings(node.body, names) | _strings(node.orelse, names)
    return set()


def _named_strings(tree: ast.Module) -> dict[str, set[str]]:
    """Every ``NAME = "text"`` (or ``NAME: T = "text"``) of a module, local or global."""
    names: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target: ast.expr | None = node.targets[0]
        elif isinstance(node, ast.AnnAssign):
            target = node.target
        else:
            continue
        value = node.value
        if (
            isinstance(target, ast.Name)
            and isinstance(value, ast.Constant)
            and isinstance(value.value, str)
        ):
            names.setdefault(target.id, set()).add(value.value)
    return names


def _call_codes(
    call: ast.Call, file: str, names: dict[str, set[str]]
) -> tuple[str | None, set[str]]:
    """The class a call builds (when known) and the codes it may pass."""
    func = call.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    owner = name if name in exceptions.__all__ else None
    codes = set()
    for keyword in call.keywords:
        if keyword.arg == "code":
            codes |= _strings(keyword.value, names)
    if (file, name) in _HELPERS:
        index, owner = _HELPERS[file, name]
        if len(call.args) > index:
            codes |= _strings(call.args[index], names)
    return owner, codes


def _raised_codes() -> list[tuple[str, str | None, str]]:
    """(file, class or None, code) for every code spelled at a raise site in the sources."""
    found = []
    files = [*(_ROOT / "sdk" / "src").rglob("*.py"), *(_ROOT / "backends").glob("*/src/**/*.py")]
    for path in files:
        tree = ast.parse(path.read_text())
        names = _named_strings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                owner, codes = _call_codes(node, path.name, names)
                found += [(path.name, owner, code) for code in codes]
    return found


def test_every_code_spelled_in_the_sources_is_declared_on_the_class_raising_it() -> None:
    raised = _raised_codes()
    assert len(raised) > 50, "the scan no longer finds the raise sites"
    declared = {code for error in ERRORS for code in error.codes}
    wrong = [
        (path, owner, code)
        for path, owner, code in raised
        if code not in (_family_codes(getattr(exceptions, owner)) if owner else declared)
    ]
    assert wrong == []


def _family_codes(error: type[PauseTokenError]) -> set[str]:
    """The codes ``error`` may be raised with: its own, and its subclasses' (which make an
    error of the declaring subclass, as `test_a_family_makes_the_class_declaring_the_code`)."""
    return {code for cls in [error, *_subclasses(error)] for code in cls.codes}


def _subclasses(error: type[PauseTokenError]) -> list[type[PauseTokenError]]:
    return [sub for direct in error.__subclasses__() for sub in [direct, *_subclasses(direct)]]


@pytest.mark.parametrize(
    ("raised", "code", "made"),
    [
        (exceptions.ConfigurationError, "key_too_short", exceptions.InvalidKeys),
        (
            exceptions.ConfigurationError,
            exceptions.InvalidKeys.KEY_TOO_SHORT,
            exceptions.InvalidKeys,
        ),
        (exceptions.ConfigurationError, "backend_not_installed", exceptions.BackendNotInstalled),
        (exceptions.PluginError, "ambiguous_command", exceptions.AmbiguousBackend),
        (exceptions.PauseTokenError, "resume_failed", exceptions.ResumeFailed),
        (exceptions.InvalidSettings, "settings_missing", exceptions.InvalidSettings),
    ],
)
def test_a_family_makes_the_class_declaring_the_code(
    raised: type[PauseTokenError], code: exceptions.Code | str, made: type[PauseTokenError]
) -> None:
    # Code raising ConfigurationError(code="key_too_short") before the family was split, a
    # plugin's included, still raises what `except InvalidKeys` catches.
    err = raised("detail", code=code)
    assert type(err) is made
    assert isinstance(err, raised)
    assert err.code == code
    assert err.detail == "detail"


def test_a_code_is_a_constant_named_after_it_and_equal_to_its_text() -> None:
    code = exceptions.InvalidKeys.KEY_TOO_SHORT
    assert code == "key_too_short"
    assert code != "key_invalid"
    assert str(code) == code.name == "key_too_short"
    assert {code: 1}["key_too_short"] == 1
    assert code.meaning == exceptions.InvalidKeys.codes["key_too_short"]
    assert exceptions.InvalidKeys.actions["key_too_short"] == (
        code.action or exceptions.InvalidKeys.action
    )
    assert type(exceptions.InvalidKeys("x", code=code).code) is str
    # A class that only refers to a code (here a policy's refusing code) does not rename it.
    assert TokenPolicy._invalid_code.name == "policy_invalid"


def test_a_code_of_another_family_is_still_refused() -> None:
    with pytest.raises(ValueError, match="InvalidSettings"):
        exceptions.InvalidSettings("detail", code=exceptions.InvalidKeys.KEY_TOO_SHORT)


# -- what a caller should do, declared on the classes ------------------------------------------


@pytest.mark.parametrize("error", ERRORS)
def test_every_class_says_what_to_do_about_each_of_its_codes(
    error: type[PauseTokenError],
) -> None:
    assert "action" in error.__dict__, f"{error.__name__} declares no action of its own"
    assert "actions" in error.__dict__, f"{error.__name__} declares no actions of its own"
    assert set(error.actions) == set(error.codes)
    assert error.actions[error.default_code] == error.action
    for text in (error.action, *error.actions.values()):
        assert text.strip() == text
        assert text.endswith(".")
        assert "\n" not in text
        assert "|" not in text  # a cell of the Errors page's tables


def test_an_error_says_what_to_do_about_its_own_code() -> None:
    err = exceptions.LeaseLost("lapsed, then revoked", code="lease_revoked")
    assert err.actions[err.code] != err.action
    assert "revoked" in err.actions[err.code]
