"""Every error pausetoken raises.

Each error carries a stable machine ``code`` (safe to branch on and to show to clients), a
human ``detail`` and the HTTP status a server should answer with. Messages never contain a
token, claim values or payloads: they name what was wrong, not what was sent.

Examples:
    >>> from pausetoken.exceptions import TokenExpired
    >>> err = TokenExpired()
    >>> err.code, err.http_status
    ('token_expired', 410)
    >>> err.actions[err.code] == TokenExpired.action
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "AlreadyRedeemed",
    "AmbiguousBackend",
    "BackendNotInstalled",
    "CheckpointLost",
    "CheckpointNotFound",
    "CommitUnconfirmed",
    "ConfigurationError",
    "InvalidMintRequest",
    "InvalidRequest",
    "InvalidResponse",
    "InvalidToken",
    "LeaseLost",
    "NotAuthenticated",
    "PauseTokenError",
    "PayloadMismatch",
    "PrincipalMismatch",
    "RedemptionInProgress",
    "RequestForbidden",
    "RequestTooLarge",
    "ScopeMismatch",
    "StaleToken",
    "StoreUnavailable",
    "TokenExpired",
    "TokenRevoked",
    "UnknownBackend",
    "UnknownInterrupt",
    "UnsupportedMediaType",
    "UnsupportedPayload",
]

_PROBLEM_TYPE_BASE = "urn:pausetoken:error:"


class PauseTokenError(Exception):
    """Base class of every pausetoken error.

    Attributes:
        code: A stable, machine-readable code such as ``"token_expired"``.
        detail: A human-readable explanation without secrets or user data.
        http_status: The HTTP status a server should answer with.
        codes: Every code the class may carry (its ``default_code`` among them), each with
            a one-line meaning. The documentation's code table is generated from these.
        action: What a caller should do about an error of the class, in one line.
        actions: What a caller should do about each of the class's ``codes`` (the same keys):
            ``action``, or a more specific step where a code needs one. The documentation's
            Errors page is generated from ``codes`` and ``actions``.
    """

    default_code: ClassVar[str] = "pausetoken_error"
    codes: ClassVar[Mapping[str, str]] = {
        "pausetoken_error": "An error without a more specific class.",
        "race_worker_failed": (
            "A process of the store race check failed; only its error type is reported."
        ),
        "resume_failed": (
            "The HTTP router's resume function raised an error that is not a pausetoken error."
        ),
        "resume_result_invalid": (
            "The HTTP router's resume function returned a result JSON cannot carry exactly."
        ),
    }
    action: ClassVar[str] = (
        "Log it with its code and answer 500; an error without a more specific class is a "
        "failure to report if it repeats."
    )
    actions: ClassVar[Mapping[str, str]] = {
        **dict.fromkeys(codes, action),
        "race_worker_failed": (
            "Run pausetoken store check URL --debug to see the failed process's traceback; "
            "do not use a store that fails under concurrent claims."
        ),
        "resume_failed": (
            "The claim was released: fix the resume function (the log names its error type); "
            "the same answer can be sent again."
        ),
        "resume_result_invalid": (
            "The run resumed and the answer is committed: return JSON values (dicts, lists, "
            "str, finite numbers, bool, None) from the resume function."
        ),
    }
    default_detail: ClassVar[str] = "The request could not be processed."
    http_status: ClassVar[int] = 500
    title: ClassVar[str] = "pausetoken error"

    def __init__(self, detail: str | None = None, *, code: str | None = None) -> None:
        """Create the error.

        Args:
            detail: What went wrong, for humans. Must not contain tokens or user data.
            code: A more specific stable code than the class default, declared in the
                class's ``codes``.

        Raises:
            ValueError: ``code`` is not declared in the class's ``codes`` (a programming
                error: declare the code and its meaning on the class first).
        """
        if code is not None and code not in self.codes:
            msg = f"{type(self).__name__} does not declare the code {code!r} in its 'codes'"
            raise ValueError(msg)
        self.code: str = code or self.default_code
        self.detail: str = detail or self.default_detail
        super().__init__(self.detail)

    def __str__(self) -> str:
        return f"[{self.code}] {self.detail}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, detail={self.detail!r})"

    def to_problem(self) -> dict[str, Any]:
        """Render the error as RFC 9457 problem details.

        Returns:
            A JSON-ready mapping with ``type``, ``title``, ``status``, ``detail`` and ``code``.
        """
        return {
            "type": _PROBLEM_TYPE_BASE + self.code,
            "title": self.title,
            "status": self.http_status,
            "detail": self.detail,
            "code": self.code,
        }


# -- configuration (raised at start-up, never while serving a token) ---------------------


class ConfigurationError(PauseTokenError):
    """pausetoken is configured wrongly: missing or weak keys, bad settings, bad URLs."""

    default_code = "configuration_error"
    codes: ClassVar[Mapping[str, str]] = {
        "configuration_error": "pausetoken is configured wrongly (no more specific code).",
        "settings_missing": "A required setting (store URL, key set) is not given.",
        "settings_unknown": "A setting name is not known (a misspelling).",
        "settings_conflict": "Two settings that exclude each other are both given.",
        "settings_invalid": "A setting has the wrong type or value.",
        "settings_file_unreadable": "The settings file or the key file cannot be read.",
        "policy_invalid": "A TokenPolicy value is out of range.",
        "max_token_bytes_invalid": "max_token_bytes is not an integer from 256 to 65536.",
        "keys_invalid": "A signer was given something other than a KeyRing.",
        "alg_not_allowed": (
            "An algorithm outside HS256, EdDSA, ES256 and dir, or one the signer does not use."
        ),
        "empty_keyring": "The key set holds no key; there is no default key.",
        "duplicate_kid": "Two keys share one kid.",
        "no_active_key": "No key, or more than one, is marked as the signing key.",
        "kid_invalid": "A kid is not 1 to 64 letters, digits and '_.:-'.",
        "jwks_invalid": "The key set is not a JWK Set in the documented format.",
        "key_invalid": (
            "Key material cannot be imported, or a private key's public half is not its own."
        ),
        "key_alg_mismatch": "A key's type, curve or use does not fit its algorithm.",
        "key_ops_invalid": "A key's key_ops contradict how pausetoken uses it.",
        "key_too_short": "A symmetric key is shorter than 32 bytes.",
        "key_size_invalid": "A sealed-token key is not exactly 32 bytes.",
        "key_is_pem": "PEM, OpenSSH or PuTTY material was given where a key or JWK Set belongs.",
        "key_whitespace": "A text key has whitespace or control characters at an end.",
        "key_not_ascii": "A text key is not ASCII: typed text, not generated.",
        "key_placeholder": "A text key contains a space or a placeholder word.",
        "key_low_entropy": "A key carries too little estimated entropy or repeats a pattern.",
        "key_file_insecure": "The key file may be written by other users.",
        "key_cannot_sign": "The ring holds no private half of its signing key.",
        "key_no_public_half": "Symmetric keys have no public half to export or verify with.",
        "grace_invalid": "A rotation's grace period is not a non-negative timedelta.",
        "naive_datetime": "A datetime without a time zone was given.",
        "backend_import_failed": "An installed backend failed to import.",
        "backend_api_version": "A backend implements another plugin API version.",
        "command_import_failed": "An installed command fails to import.",
        "command_invalid": (
            "An installed command's entry point names no command (help, arguments and run)."
        ),
        "duplicate_interrupt": "Two interrupt kinds are registered under one name.",
        "interrupt_type_unsupported": (
            "An interrupt's payload or response type cannot be read from JSON."
        ),
        "store_misconfigured": (
            "The store refuses permanently (credentials, database, permissions)."
        ),
        "store_table_missing": "The store's table is missing at start-up.",
        "store_schema_too_new": "The store's table was created by a newer version.",
        "store_schema_mismatch": "The store's table lacks columns this version uses.",
        "cli_usage": "A command-line argument is missing or out of range.",
        "cli_rich_missing": "The command draws tables and rich (the cli extra) is not installed.",
        "cli_output_exists": "keygen -o names a path that exists; it is never overwritten.",
        "cli_output_unwritable": "keygen -o cannot create its file.",
        "cli_benchmarks_missing": (
            "pausetoken bench finds no benchmark scripts (they are in a checkout, not the wheel)."
        ),
        "demo_checkpointer_failed": "The demo cannot open its LangGraph checkpointer.",
        "langgraph_no_checkpointer": "The LangGraph graph was compiled without a checkpointer.",
        "langgraph_sync_checkpointer": (
            "The LangGraph graph's checkpointer is synchronous; the helpers need an async one."
        ),
        "langgraph_needs_graph": "The LangGraph checkpoint reader needs the compiled graph.",
        "langgraph_interrupt_id_required": (
            "LangGraph assigns interrupt ids; the pending one must be named."
        ),
        "langgraph_reader_mismatch": "The service reads another graph than the one being resumed.",
        "langgraph_thread_required": "The LangGraph config has no configurable.thread_id.",
        "langgraph_subgraph_config": (
            "A subgraph's config was given where the root graph's is needed."
        ),
        "langgraph_resume_addressed": (
            "The resume config names a checkpoint; the token gives the thread."
        ),
    }
    action: ClassVar[str] = (
        "Fix what the message names and restart: retrying does not help. A server answers 500 "
        "and keeps the detail in its log."
    )
    actions: ClassVar[Mapping[str, str]] = {
        **dict.fromkeys(codes, action),
        "settings_missing": (
            "Set PAUSETOKEN_STORE_URL and PAUSETOKEN_KEYS_FILE (or the store_url and keys "
            "settings); pausetoken keygen -o FILE makes a key set."
        ),
        "settings_unknown": (
            "Correct or unset the setting named (the message suggests the closest name)."
        ),
        "settings_conflict": "Keep one of the two settings named.",
        "settings_invalid": (
            "Correct the value of the setting named; durations are seconds or 15m, 24h, 7d."
        ),
        "settings_file_unreadable": "Check the path, and that this user may read the file.",
        "policy_invalid": (
            "Correct the duration, issuer or audience named: ttl within max_lifetime, lease at "
            "least 1 second."
        ),
        "max_token_bytes_invalid": "Set max_token_bytes to an integer from 256 to 65536.",
        "keys_invalid": "Pass the signer a KeyRing, for example KeyRing.from_jwks(text).",
        "alg_not_allowed": (
            "Use HS256, EdDSA or ES256 keys with the jose signer, and dir keys with sealed."
        ),
        **dict.fromkeys(
            (
                "empty_keyring",
                "jwks_invalid",
                "key_invalid",
                "key_alg_mismatch",
                "key_ops_invalid",
                "key_too_short",
                "key_size_invalid",
                "key_is_pem",
                "key_whitespace",
                "key_not_ascii",
                "key_placeholder",
                "key_low_entropy",
            ),
            "Make a key set with pausetoken keygen -o FILE and point PAUSETOKEN_KEYS_FILE at it.",
        ),
        "duplicate_kid": "Give every key its own kid (pausetoken keygen --kid KID).",
        "no_active_key": (
            "Name the signing key in the key set's active member; give every other key a retire_at."
        ),
        "kid_invalid": "Use a kid of 1 to 64 letters, digits and '_.:-'.",
        "key_file_insecure": (
            "chmod 600 the key file, and find out who else could have changed it."
        ),
        "key_cannot_sign": "Mint with the ring that holds the private signing key.",
        "key_no_public_half": (
            "Use EdDSA or ES256 keys where verifiers must not mint; HS256 and dir are shared."
        ),
        "grace_invalid": ("Pass a grace of at least the longest token lifetime plus the leeway."),
        "naive_datetime": "Pass an aware datetime, such as datetime.now(UTC).",
        "backend_import_failed": (
            "Run pausetoken backends, or the command again with --debug, to see why it fails; "
            "reinstall the backend."
        ),
        "backend_api_version": (
            "Upgrade the backend's distribution to a release made for this pausetoken."
        ),
        "command_import_failed": (
            "Run the command again with --debug to see why it fails; reinstall or upgrade the "
            "distribution the message names."
        ),
        "command_invalid": (
            "Upgrade the distribution the message names to a release made for this pausetoken, "
            "or uninstall it."
        ),
        "duplicate_interrupt": "Register each interrupt name once per service.",
        "interrupt_type_unsupported": (
            "Use attrs classes, dataclasses, TypedDicts, pydantic models or JSON types."
        ),
        "store_misconfigured": (
            "Correct the store URL (user, password, database, path) or the database's "
            "permissions; waiting will not help."
        ),
        "store_table_missing": (
            "Restore the table from a backup: its rows refuse replays. Delete its row in "
            "pausetoken_schema only to start afresh on purpose."
        ),
        "store_schema_too_new": (
            "Upgrade pausetoken-sqlalchemy to the release that created the table."
        ),
        "store_schema_mismatch": (
            "Migrate the table as the message says (it names the columns), keeping its rows: "
            "they refuse replays."
        ),
        "cli_usage": "Run pausetoken COMMAND --help for the arguments.",
        "cli_rich_missing": "Install the cli extra, or pass --json.",
        "cli_output_exists": (
            "Choose another path; remove the file first only to replace its key set on purpose."
        ),
        "cli_output_unwritable": "Check that the directory exists and that you may write to it.",
        "cli_benchmarks_missing": "Run it in a clone of the repository, or pass --dir DIR.",
        "demo_checkpointer_failed": (
            "Check that the checkpointer's database runs and that the URL names it."
        ),
        "langgraph_no_checkpointer": (
            "Compile the graph with an async checkpointer (AsyncSqliteSaver, AsyncPostgresSaver)."
        ),
        "langgraph_sync_checkpointer": (
            "Use AsyncSqliteSaver or AsyncPostgresSaver instead of SqliteSaver or PostgresSaver."
        ),
        "langgraph_needs_graph": (
            "Build LangGraphCheckpoints(graph) in code and pass it as checkpoints=."
        ),
        "langgraph_interrupt_id_required": (
            "Pass the pending interrupt's id, or mint with mint_pending()."
        ),
        "langgraph_reader_mismatch": (
            "Resume with the service built with LangGraphCheckpoints(graph) for this graph."
        ),
        "langgraph_thread_required": "Put the thread id in config['configurable']['thread_id'].",
        "langgraph_subgraph_config": "Pass the thread's config, not a subgraph's.",
        "langgraph_resume_addressed": (
            "Remove thread_id, checkpoint_id and checkpoint_ns from the resume config."
        ),
    }
    default_detail = "pausetoken is not configured correctly."
    http_status = 500
    title = "Configuration error"


class BackendNotInstalled(ConfigurationError):
    """A known backend was chosen but the distribution that provides it is not installed."""

    default_code = "backend_not_installed"
    codes: ClassVar[Mapping[str, str]] = {
        "backend_not_installed": (
            "A known backend was chosen but its distribution is not installed."
        ),
        "command_not_installed": (
            "A known command was chosen but the distribution that provides it is not installed."
        ),
    }
    action: ClassVar[str] = (
        "Install what the message names, in the same command as the core; pausetoken backends "
        "lists what is installed."
    )
    actions: ClassVar[Mapping[str, str]] = dict.fromkeys(codes, action)
    default_detail = "The chosen backend is not installed."
    title = "Backend not installed"


class UnknownBackend(ConfigurationError):
    """No installed distribution provides the chosen backend."""

    default_code = "unknown_backend"
    codes: ClassVar[Mapping[str, str]] = {
        "unknown_backend": "No installed distribution provides the chosen backend.",
    }
    action: ClassVar[str] = (
        "Check the URL's scheme or the name (postgresql+asyncpg://, not postgres://); "
        "pausetoken backends lists the installed ones."
    )
    actions: ClassVar[Mapping[str, str]] = dict.fromkeys(codes, action)
    default_detail = "No installed backend has that name."
    title = "Unknown backend"


class AmbiguousBackend(ConfigurationError):
    """Two installed distributions register the same backend name."""

    default_code = "ambiguous_backend"
    codes: ClassVar[Mapping[str, str]] = {
        "ambiguous_backend": "Two installed distributions register one backend name.",
        "ambiguous_command": (
            "Two installed distributions (or one and pausetoken) register one command name."
        ),
    }
    action: ClassVar[str] = (
        "Uninstall one of the two distributions that register the name (pausetoken backends)."
    )
    actions: ClassVar[Mapping[str, str]] = {
        **dict.fromkeys(codes, action),
        "ambiguous_command": "Uninstall one of the two distributions the message names.",
    }
    default_detail = "Two installed distributions register the same backend name."
    title = "Ambiguous backend"


class UnsupportedPayload(PauseTokenError, ValueError):
    """A payload cannot be represented exactly as JSON, so it cannot be hashed stably.

    Raised at mint time for NaN, infinities, bytes, sets, integers beyond 2**53 and objects
    pausetoken does not know how to unstructure.
    """

    default_code = "unsupported_payload"
    codes: ClassVar[Mapping[str, str]] = {
        "unsupported_payload": "A payload cannot be represented exactly as JSON.",
        "invalid_payload": "A payload does not fit its interrupt's registered type.",
        "claims_not_json": "The claims to sign are not a JSON object.",
        "token_too_large": "The token to mint would be longer than max_token_bytes.",
    }
    action: ClassVar[str] = (
        "Fix the mint call: give a payload of JSON types that fits the registered type. No "
        "token was minted."
    )
    actions: ClassVar[Mapping[str, str]] = {
        **dict.fromkeys(codes, action),
        "claims_not_json": "Fix the signer or code that signs: claims are a JSON object.",
        "token_too_large": (
            "Mint with shorter ids, or raise max_token_bytes on every service that verifies."
        ),
    }
    default_detail = "The payload cannot be represented exactly as JSON."
    http_status = 400
    title = "Unsupported payload"


# -- token problems -----------------------------------------------------------------------


class InvalidToken(PauseTokenError):
    """The token is malformed, forged, or its header or claims are not acceptable.

    The ``code`` says which check failed (for example ``token_malformed``,
    ``token_signature_invalid``, ``token_algorithm_not_allowed``, ``token_type_invalid``,
    ``token_key_unknown``, ``token_claims_invalid``).
    """

    default_code = "token_invalid"
    codes: ClassVar[Mapping[str, str]] = {
        "token_invalid": "The token is not valid (no more specific code).",
        "token_too_large": "The token is longer than max_token_bytes.",
        "token_malformed": (
            "Not a string of compact segments of canonical base64url, or no signature."
        ),
        "token_header_invalid": (
            "The header is oversized, not strict JSON, or its kid is malformed."
        ),
        "token_algorithm_not_allowed": (
            "alg (or enc) is missing, not a string or not allowed, or wraps a key."
        ),
        "token_header_forbidden": (
            "The header names a member outside the whitelist (crit, b64, jwk, x5c...)."
        ),
        "token_type_invalid": "typ is not pause+jwt.",
        "token_key_unknown": "No key in the ring has the token's kid.",
        "token_key_retired": "The token's key is past its retirement deadline.",
        "token_signature_invalid": (
            "The signature, or a sealed token's authentication tag, does not verify."
        ),
        "token_payload_invalid": (
            "The verified payload is not strict JSON or is nested too deeply."
        ),
        "token_claims_invalid": "A claim is missing, unknown or of the wrong type or format.",
        "token_lifetime_too_long": "exp - iat is longer than max_lifetime.",
        "token_not_yet_valid": "iat or nbf is in the future beyond the leeway.",
        "token_issuer_invalid": "iss is not the configured issuer.",
        "token_audience_invalid": "aud is not the configured audience.",
        "token_namespace_mismatch": (
            "The token was minted for another runtime namespace (another graph)."
        ),
    }
    action: ClassVar[str] = (
        "Answer 401 and do not retry with this token: it is damaged, forged or for another "
        "service. Alert on bursts."
    )
    actions: ClassVar[Mapping[str, str]] = {
        **dict.fromkeys(codes, action),
        **dict.fromkeys(
            ("token_too_large", "token_malformed", "token_header_invalid", "token_payload_invalid"),
            (
                "Answer 401; the token was cut, wrapped or decorated on its way (Bearer, "
                "quotes, line breaks): send it whole in a header or a body."
            ),
        ),
        **dict.fromkeys(
            ("token_algorithm_not_allowed", "token_header_forbidden", "token_type_invalid"),
            (
                "Answer 401 and count it: pausetoken never mints such a token (a probe, another "
                "system's token, or a sealed token sent to a jose signer)."
            ),
        ),
        "token_key_unknown": (
            "Give every verifying service the minting service's keys (stage a new key before "
            "it signs); otherwise the token is forged."
        ),
        "token_key_retired": (
            "Mint a new token for the pause; rotate with a grace of at least the longest "
            "lifetime plus the leeway."
        ),
        "token_signature_invalid": (
            "Answer 401: the token was altered, or minted with another key set (compare the "
            "services' keys)."
        ),
        "token_claims_invalid": "Answer 401: the token was not minted by this pausetoken.",
        "token_lifetime_too_long": (
            "Give the minting and verifying services the same max_lifetime."
        ),
        "token_not_yet_valid": ("Synchronise the clocks (NTP) of the hosts that mint and redeem."),
        **dict.fromkeys(
            ("token_issuer_invalid", "token_audience_invalid"),
            (
                "Give the verifying service the minting service's issuer and audience, or send "
                "the token to the application that minted it."
            ),
        ),
        "token_namespace_mismatch": (
            "Redeem with the service whose reader serves the token's graph (one service per graph)."
        ),
    }
    default_detail = "The token is not valid."
    http_status = 401
    title = "Invalid token"


class TokenExpired(PauseTokenError):
    """The token's ``exp`` is in the past (beyond the configured leeway)."""

    default_code = "token_expired"
    codes: ClassVar[Mapping[str, str]] = {
        "token_expired": "exp plus the leeway is in the past.",
    }
    action: ClassVar[str] = (
        "Answer 410: tell the person the link expired and, if the pause is still open, mint a "
        "new token for it."
    )
    actions: ClassVar[Mapping[str, str]] = dict.fromkeys(codes, action)
    default_detail = (
        "The token has expired. Its lifetime is set when it is minted: the ttl given to "
        "mint(), by default the ttl setting (PAUSETOKEN_TTL)."
    )
    http_status = 410
    title = "Token expired"


class TokenRevoked(PauseTokenError):
    """The token was revoked before it was redeemed."""

    default_code = "token_revoked"
    codes: ClassVar[Mapping[str, str]] = {
        "token_revoked": "The token's pause was revoked before it was redeemed.",
        "pause_revoked": "At mint: the pause was revoked; no token is minted for it.",
    }
    action: ClassVar[str] = "Answer 410: the pause was withdrawn; never resume it with this answer."
    actions: ClassVar[Mapping[str, str]] = {
        **dict.fromkeys(codes, action),
        "pause_revoked": "Send no token: the pause was revoked; end or restart the run.",
    }
    default_detail = "The token has been revoked."
    http_status = 410
    title = "Token revoked"


class ScopeMismatch(PauseTokenError):
    """The token belongs to another tenant scope than the caller's."""

    default_code = "scope_mismatch"
    codes: ClassVar[Mapping[str, str]] = {
        "scope_mismatch": "The token belongs to another tenant scope.",
    }
    action: ClassVar[str] = (
        "Answer 403; take the scope from the caller's authenticated identity, never from the "
        "request."
    )
    actions: ClassVar[Mapping[str, str]] = dict.fromkeys(codes, action)
    default_detail = "The token does not belong to this scope."
    http_status = 403
    title = "Scope mismatch"


class PrincipalMismatch(PauseTokenError):
    """The token is bound to another principal than the one answering."""

    default_code = "principal_mismatch"
    codes: ClassVar[Mapping[str, str]] = {
        "principal_mismatch": "The token is bound to another principal.",
    }
    action: ClassVar[str] = (
        "Answer 403; pass the authenticated user's id as principal, the id given at mint."
    )
    actions: ClassVar[Mapping[str, str]] = dict.fromkeys(codes, action)
    default_detail = "This principal may not answer this pause."
    http_status = 403
    title = "Principal mismatch"


class UnknownInterrupt(PauseTokenError):
    """No interrupt kind is registered under that name, or it is not the one expected.

    The default code says nothing is registered under the token's (or the caller's) name;
    ``interrupt_mismatch`` says the token is for another interrupt than the caller's
    ``expect=``.
    """

    default_code = "unknown_interrupt"
    codes: ClassVar[Mapping[str, str]] = {
        "unknown_interrupt": "No interrupt kind is registered under that name.",
        "foreign_interrupt": "A pending LangGraph interrupt was not raised with ask().",
        "interrupt_mismatch": (
            "The token (or a pending pause) is for another interrupt than the expect= one."
        ),
    }
    action: ClassVar[str] = (
        "Register the interrupt on every service that redeems (a deployment dropped or renamed "
        "it); its tokens are refused until then."
    )
    actions: ClassVar[Mapping[str, str]] = {
        **dict.fromkeys(codes, action),
        "foreign_interrupt": (
            "Raise the graph's interrupts with ask(), or call mint_pending(..., foreign='skip')."
        ),
        "interrupt_mismatch": (
            "Answer 400: send the token where its interrupt is answered, or redeem without "
            "expect=; nothing was claimed or minted."
        ),
    }
    default_detail = "No interrupt is registered under that name."
    http_status = 400
    title = "Unknown interrupt"


class InvalidResponse(PauseTokenError):
    """The answer does not fit the interrupt's response type or its validator refused it.

    Attributes:
        field: Dotted path of the offending field, when known.
    """

    default_code = "invalid_response"
    codes: ClassVar[Mapping[str, str]] = {
        "invalid_response": "The answer does not fit the response type or its validator.",
    }
    action: ClassVar[str] = (
        "Answer 422 and let the person correct the answer (field names where); the token is "
        "not used up."
    )
    actions: ClassVar[Mapping[str, str]] = dict.fromkeys(codes, action)
    default_detail = "The response is not valid for this interrupt."
    http_status = 422
    title = "Invalid response"

    def __init__(
        self, detail: str | None = None, *, code: str | None = None, field: str | None = None
    ) -> None:
        """Create the error; ``field`` names the offending field when known."""
        super().__init__(detail, code=code)
        self.field = field

    def to_problem(self) -> dict[str, Any]:
        """Render as RFC 9457 problem details, with ``field`` when known."""
        problem = super().to_problem()
        if self.field is not None:
            problem["field"] = self.field
        return problem


class PayloadMismatch(PauseTokenError):
    """The payload stored at the checkpoint is not the one the token was minted for."""

    default_code = "payload_mismatch"
    codes: ClassVar[Mapping[str, str]] = {
        "payload_mismatch": (
            "The payload at the checkpoint is not the one the token was minted for."
        ),
    }
    action: ClassVar[str] = (
        "Answer 400 and investigate: the stored payload changed after minting (tampering, or "
        "code that rewrote the state)."
    )
    actions: ClassVar[Mapping[str, str]] = dict.fromkeys(codes, action)
    default_detail = "The pending payload does not match the token."
    http_status = 400
    title = "Payload mismatch"


class CheckpointNotFound(PauseTokenError):
    """The token's thread or checkpoint no longer exists."""

    default_code = "checkpoint_not_found"
    codes: ClassVar[Mapping[str, str]] = {
        "checkpoint_not_found": "The token's thread or checkpoint no longer exists.",
    }
    action: ClassVar[str] = (
        "Answer 404: the thread or checkpoint was deleted, so the pause cannot be answered; "
        "withdraw the request."
    )
    actions: ClassVar[Mapping[str, str]] = dict.fromkeys(codes, action)
    default_detail = "The checkpoint this token refers to does not exist."
    http_status = 404
    title = "Checkpoint not found"


class CheckpointLost(PauseTokenError):
    """The checkpoint is gone because the checkpointer does not persist state."""

    default_code = "checkpoint_lost"
    codes: ClassVar[Mapping[str, str]] = {
        "checkpoint_lost": "The checkpointer does not persist state and lost the checkpoint.",
    }
    action: ClassVar[str] = (
        "Use a persistent checkpointer shared by every process that mints and redeems; start "
        "the run again."
    )
    actions: ClassVar[Mapping[str, str]] = dict.fromkeys(codes, action)
    default_detail = "The checkpoint was lost; the checkpointer does not persist state."
    http_status = 424
    title = "Checkpoint lost"


class StaleToken(PauseTokenError):
    """The run moved on: the checkpoint is not current or the interrupt was answered."""

    default_code = "stale_token"
    codes: ClassVar[Mapping[str, str]] = {
        "stale_token": "The run moved on since the token was minted.",
    }
    action: ClassVar[str] = (
        "Answer 409: the run moved on (answered another way, or resumed elsewhere); tell the "
        "person, do not retry."
    )
    actions: ClassVar[Mapping[str, str]] = dict.fromkeys(codes, action)
    default_detail = "The run has moved on since this token was issued."
    http_status = 409
    title = "Stale token"


class AlreadyRedeemed(PauseTokenError):
    """The token was already redeemed with another answer."""

    default_code = "already_redeemed"
    codes: ClassVar[Mapping[str, str]] = {
        "already_redeemed": "The pause was already answered with another answer (a replay).",
        "pause_already_redeemed": (
            "At mint: the pause was already answered; no token is minted for it."
        ),
    }
    action: ClassVar[str] = (
        "Answer 409: the pause was answered otherwise; never resume it again. Alert on "
        "repeats: replay attempts."
    )
    actions: ClassVar[Mapping[str, str]] = {
        **dict.fromkeys(codes, action),
        "pause_already_redeemed": "Send no token: the pause was already answered.",
    }
    default_detail = "The token has already been redeemed with another answer."
    http_status = 409
    title = "Already redeemed"


class RedemptionInProgress(PauseTokenError):
    """Another worker holds a live claim on the token.

    Attributes:
        retry_after: Seconds after which a retry may succeed (the lease's remaining time).
    """

    default_code = "redemption_in_progress"
    codes: ClassVar[Mapping[str, str]] = {
        "redemption_in_progress": "Another worker holds a live claim on the pause.",
    }
    action: ClassVar[str] = (
        "Answer 409 with Retry-After from retry_after; a retry then learns how the other "
        "redemption ended."
    )
    actions: ClassVar[Mapping[str, str]] = dict.fromkeys(codes, action)
    default_detail = "The token is being redeemed by another request; retry later."
    http_status = 409
    title = "Redemption in progress"

    def __init__(
        self,
        detail: str | None = None,
        *,
        code: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        """Create the error; ``retry_after`` is the lease's remaining time in seconds."""
        super().__init__(detail, code=code)
        self.retry_after = retry_after

    def to_problem(self) -> dict[str, Any]:
        """Render as RFC 9457 problem details, with ``retry_after`` when known."""
        problem = super().to_problem()
        if self.retry_after is not None:
            problem["retry_after"] = self.retry_after
        return problem


class LeaseLost(PauseTokenError):
    """The claim was lost while the body ran: it lapsed and was taken over, or revoked.

    The service renews the lease while the body runs, so this happens only when renewals
    failed for longer than the lease (the store was unreachable) or the worker stalled. The
    code says which: ``lease_lost`` (another redeemer took the claim over) or
    ``lease_revoked`` (the pause was revoked after the claim lapsed).
    """

    default_code = "lease_lost"
    codes: ClassVar[Mapping[str, str]] = {
        "lease_lost": "The claim lapsed before commit and another redeemer took it over.",
        "lease_revoked": "The claim lapsed before commit and the pause was then revoked.",
    }
    action: ClassVar[str] = (
        "Stop acting on the answer and reconcile what the body did; find why renewals failed "
        "(store outage, blocked event loop)."
    )
    actions: ClassVar[Mapping[str, str]] = {
        **dict.fromkeys(codes, action),
        "lease_revoked": (
            "Stop acting on the answer: the pause was revoked; undo what the body did if you can."
        ),
    }
    default_detail = "The claim lapsed before commit and another redeemer took it over."
    http_status = 409
    title = "Lease lost"


class CommitUnconfirmed(PauseTokenError):
    """The body ran but the store could not confirm the commit: the run may have resumed.

    Raised only after the body of [`redeem()`][pausetoken.PauseTokens.redeem] completed and every
    commit attempt within the lease failed to reach the store. It is never raised for a
    refusal before the body ran. Do not answer the pause again blindly: ask
    [`status()`][pausetoken.PauseTokens.status] once the store is back (``REDEEMED`` means the
    commit landed), and treat the action as possibly done.
    """

    default_code = "commit_unconfirmed"
    codes: ClassVar[Mapping[str, str]] = {
        "commit_unconfirmed": "The body ran but the store could not confirm the commit.",
    }
    action: ClassVar[str] = (
        "Answer 500; do not answer the pause again blindly: call status() once the store is "
        "back (REDEEMED: it landed)."
    )
    actions: ClassVar[Mapping[str, str]] = dict.fromkeys(codes, action)
    default_detail = "The answer was acted on but its redemption could not be confirmed."
    http_status = 500
    title = "Commit unconfirmed"


class StoreUnavailable(PauseTokenError):
    """The consumption store cannot be reached; pausetoken fails closed."""

    default_code = "store_unavailable"
    codes: ClassVar[Mapping[str, str]] = {
        "store_unavailable": "The store cannot be reached; nothing is redeemed (fail closed).",
        "store_table_missing": "The store's table was dropped while serving.",
    }
    action: ClassVar[str] = (
        "Answer 503 and retry later: nothing was acted on. Alert if it lasts; pausetoken store "
        "check URL names the cause."
    )
    actions: ClassVar[Mapping[str, str]] = {
        **dict.fromkeys(codes, action),
        "store_table_missing": (
            "Restore the table from a backup: its rows refuse replays, and it is not recreated "
            "while serving."
        ),
    }
    default_detail = "The token store is unavailable."
    http_status = 503
    title = "Store unavailable"


class InvalidMintRequest(PauseTokenError, ValueError):
    """``mint()`` was asked for a token that could never be redeemed.

    No scope, an empty or overlong id or principal, or a ttl outside
    ``(leeway, max_lifetime]``. Raised before anything is recorded.
    """

    default_code = "mint_request_invalid"
    codes: ClassVar[Mapping[str, str]] = {
        "mint_request_invalid": "mint() was asked for a token that could never be redeemed.",
    }
    action: ClassVar[str] = (
        "Fix the mint call: a Scope, ids of 1 to 512 characters, a ttl above the leeway and "
        "within max_lifetime."
    )
    actions: ClassVar[Mapping[str, str]] = dict.fromkeys(codes, action)
    default_detail = "The mint request cannot produce a token that verifies."
    http_status = 400
    title = "Invalid mint request"


# -- HTTP requests (pausetoken.asgi), refused before any token is looked at -------------


class InvalidRequest(PauseTokenError):
    """An HTTP request to the resume router is not in the documented shape.

    Raised by ``pausetoken.asgi`` before the token is verified: the body is not a JSON
    object with the documented members, is not strict JSON, or a token came in the URL.
    """

    default_code = "request_invalid"
    codes: ClassVar[Mapping[str, str]] = {
        "request_invalid": "The request body is not a JSON object with the documented members.",
        "request_json_invalid": (
            "The request body is not UTF-8 JSON without duplicate members, with finite numbers "
            "and bounded nesting."
        ),
        "token_in_url": "A token was sent in the query string, which servers and proxies log.",
    }
    action: ClassVar[str] = "Send the request as the OpenAPI description documents it."
    actions: ClassVar[Mapping[str, str]] = {
        **dict.fromkeys(codes, action),
        "token_in_url": (
            "Send the token in the Pause-Token header or the JSON body; treat a token that was "
            "in a URL as disclosed and revoke it."
        ),
    }
    default_detail = "The request is not in the documented shape."
    http_status = 400
    title = "Invalid request"


class RequestTooLarge(PauseTokenError):
    """An HTTP request body is longer than the router accepts; it was not parsed."""

    default_code = "request_too_large"
    codes: ClassVar[Mapping[str, str]] = {
        "request_too_large": "The request body exceeds the router's max_body_bytes.",
    }
    action: ClassVar[str] = (
        "Send a smaller answer, or raise max_body_bytes where the router is built."
    )
    actions: ClassVar[Mapping[str, str]] = dict.fromkeys(codes, action)
    default_detail = "The request body is too large."
    http_status = 413
    title = "Request too large"


class UnsupportedMediaType(PauseTokenError):
    """An HTTP request body is not ``application/json``.

    Requiring JSON also keeps cross-site HTML forms out: a browser sends JSON to another
    origin only after a CORS preflight the router never grants.
    """

    default_code = "media_type_unsupported"
    codes: ClassVar[Mapping[str, str]] = {
        "media_type_unsupported": "The request's Content-Type is not application/json.",
    }
    action: ClassVar[str] = "Send the body as JSON with Content-Type: application/json."
    actions: ClassVar[Mapping[str, str]] = dict.fromkeys(codes, action)
    default_detail = "The request body must be application/json."
    http_status = 415
    title = "Unsupported media type"


class NotAuthenticated(PauseTokenError):
    """The application could not tell who sent an HTTP request.

    The application's ``authenticate`` function raises it; the router answers 401 with a
    ``WWW-Authenticate`` challenge.
    """

    default_code = "not_authenticated"
    codes: ClassVar[Mapping[str, str]] = {
        "not_authenticated": "The request carries no credentials the application accepts.",
    }
    action: ClassVar[str] = "Sign in, or send the application's credentials, and retry."
    actions: ClassVar[Mapping[str, str]] = dict.fromkeys(codes, action)
    default_detail = "The request is not authenticated."
    http_status = 401
    title = "Not authenticated"


class RequestForbidden(PauseTokenError):
    """A request to the approval page's endpoints failed its cross-site request checks.

    The page's requests must come from the page itself: the same origin, and the signed
    per-page value the page was served with. Nothing was read from the body.
    """

    default_code = "request_forbidden"
    codes: ClassVar[Mapping[str, str]] = {
        "request_forbidden": "The request failed the approval page's cross-site checks.",
        "csrf_invalid": (
            "The page's anti-forgery value is missing, forged or older than the page's lifetime."
        ),
        "origin_refused": "The request's Origin is missing or is not the router's own.",
    }
    action: ClassVar[str] = (
        "Reload the approval page and answer from it; another site cannot answer for it."
    )
    actions: ClassVar[Mapping[str, str]] = dict.fromkeys(codes, action)
    default_detail = "The request did not come from the approval page."
    http_status = 403
    title = "Forbidden"
