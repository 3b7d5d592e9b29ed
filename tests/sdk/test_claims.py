"""Value types: the claims' store key."""

from __future__ import annotations

import base64
import hashlib
import json

from hypothesis import given
from hypothesis import strategies as st

from pausetoken import Claims

_text = st.text(max_size=12) | st.text(
    st.characters(min_codepoint=0xD7F0, max_codepoint=0x1F680), max_size=4
)


@given(names=st.tuples(_text, _text, st.none() | _text, _text, _text, _text))
def test_the_pause_key_is_the_sha256_of_the_json_array_of_what_names_the_pause(
    names: tuple[str, str, str | None, str, str, str],
) -> None:
    iss, aud, ns, thread_id, checkpoint_id, interrupt_id = names
    claims = Claims(
        iss=iss,
        aud=aud,
        iat=0,
        exp=1,
        jti="j" * 22,
        name="refund",
        interrupt_id=interrupt_id,
        run_id="run",
        session_id="",
        thread_id=thread_id,
        checkpoint_id=checkpoint_id,
        scope_hash="0" * 64,
        request_hash="0" * 64,
        ns=ns,
    )
    bound = ["pausetoken.pause.v2", iss, aud, ns, thread_id, checkpoint_id, interrupt_id]
    encoded = json.dumps(bound, ensure_ascii=False).encode("utf-8", "surrogatepass")
    digest = base64.urlsafe_b64encode(hashlib.sha256(encoded).digest()).rstrip(b"=")
    assert claims.pause_key == digest.decode("ascii")
