"""Reading an HTTP request's JSON body: media type, size limit before parsing, strict JSON."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Final, NoReturn

from pausetoken._compact import DuplicateMember, no_duplicates
from pausetoken.exceptions import InvalidRequest, RequestTooLarge, UnsupportedMediaType

if TYPE_CHECKING:
    from starlette.requests import Request

__all__ = ["DEFAULT_MAX_BODY_BYTES", "MAX_BODY_DEPTH", "read_json_object", "refuse_token_in_url"]

#: The default limit of a request body: a token is at most 4 KiB, an answer a few forms' worth.
DEFAULT_MAX_BODY_BYTES: Final = 64 * 1024
#: How deeply a body's JSON may nest (arrays and objects).
MAX_BODY_DEPTH: Final = 32

#: Query parameters that would carry a token: refused, so a token is never used from a URL.
_TOKEN_PARAMETERS: Final = frozenset({"token", "pause_token", "pause-token", "access_token"})
#: A Content-Length as RFC 9110 spells it: ASCII digits only (``str.isdigit`` would also take
#: ``²`` or Arabic-Indic digits, which ``int`` then refuses or reads).
_CONTENT_LENGTH: Final = re.compile(r"[0-9]+", re.ASCII)


def _no_constants(_name: str) -> NoReturn:
    msg = "NaN and Infinity are not JSON"
    raise ValueError(msg)


_DECODER: Final = json.JSONDecoder(object_pairs_hook=no_duplicates, parse_constant=_no_constants)


def refuse_token_in_url(request: Request) -> None:
    """Refuse a request whose query string names a token parameter.

    Raises:
        InvalidRequest: ``token_in_url``.
    """
    if any(key.lower() in _TOKEN_PARAMETERS for key in request.query_params):
        msg = "tokens travel in the Pause-Token header or the body, never in the URL"
        raise InvalidRequest(msg, code=InvalidRequest.TOKEN_IN_URL)


def _check_media_type(request: Request) -> None:
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise UnsupportedMediaType


async def _read_limited(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        declared = declared.strip(" \t")
        if not _CONTENT_LENGTH.fullmatch(declared):
            msg = "the Content-Length header is not a number of bytes"
            raise InvalidRequest(msg)
        # Compared as text first: int() refuses more than 4300 digits.
        digits = declared.lstrip("0")
        if len(digits) > len(str(limit)) or int(digits or "0") > limit:
            msg = f"the request body is longer than {limit} bytes"
            raise RequestTooLarge(msg)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            msg = f"the request body is longer than {limit} bytes"
            raise RequestTooLarge(msg)
    return bytes(body)


def _too_deep(value: Any, budget: int) -> bool:
    if budget < 0:
        return True
    if type(value) is dict:
        return any(_too_deep(item, budget - 1) for item in value.values())
    if type(value) is list:
        return any(_too_deep(item, budget - 1) for item in value)
    return False


async def read_json_object(request: Request, *, max_body_bytes: int) -> dict[str, Any]:
    """The request's body as a JSON object, checked in order: type, size, then parsing.

    The size is checked before anything is parsed (the declared ``Content-Length`` first,
    then the bytes as they arrive); the text must be UTF-8 JSON without duplicate members,
    NaN or Infinity, nested at most `MAX_BODY_DEPTH` levels.

    Raises:
        UnsupportedMediaType: the Content-Type is not ``application/json``.
        RequestTooLarge: the body is longer than ``max_body_bytes``.
        InvalidRequest: ``request_json_invalid`` (not strict JSON) or ``request_invalid``
            (not an object, or a ``Content-Length`` that is not ASCII digits).
    """
    _check_media_type(request)
    raw = await _read_limited(request, max_body_bytes)
    try:
        # Decoded first: json.loads on bytes would also accept UTF-16 and UTF-32.
        value = _DECODER.decode(raw.decode("utf-8"))
    except DuplicateMember as exc:
        msg = "the request body has duplicate members"
        raise InvalidRequest(msg, code=InvalidRequest.REQUEST_JSON_INVALID) from exc
    except (ValueError, RecursionError) as exc:
        msg = "the request body is not UTF-8 JSON with finite numbers"
        raise InvalidRequest(msg, code=InvalidRequest.REQUEST_JSON_INVALID) from exc
    if _too_deep(value, MAX_BODY_DEPTH):
        msg = f"the request body nests deeper than {MAX_BODY_DEPTH} levels"
        raise InvalidRequest(msg, code=InvalidRequest.REQUEST_JSON_INVALID)
    if type(value) is not dict:
        msg = "the request body is not a JSON object"
        raise InvalidRequest(msg)
    return value
