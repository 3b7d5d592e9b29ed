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

from typing import TYPE_CHECKING, Any, ClassVar, Self, cast

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "AlreadyRedeemed",
    "AmbiguousBackend",
    "BackendNotInstalled",
    "CheckpointLost",
    "CheckpointNotFound",
    "Code",
    "CommandLineError",
    "CommitUnconfirmed",
    "ConfigurationError",
    "InvalidInterrupt",
    "InvalidKeys",
    "InvalidMintRequest",
    "InvalidRequest",
    "InvalidResponse",
    "InvalidSettings",
    "InvalidToken",
    "LangGraphMisconfigured",
    "LeaseLost",
    "NotAuthenticated",
    "PauseTokenError",
    "PayloadMismatch",
    "PluginError",
    "PrincipalMismatch",
    "RedemptionInProgress",
    "RequestForbidden",
    "RequestTooLarge",
    "ResumeFailed",
    "ScopeMismatch",
    "StaleToken",
    "StoreCheckFailed",
    "StoreMisconfigured",
    "StoreUnavailable",
    "TokenExpired",
    "TokenRevoked",
    "UnknownBackend",
    "UnknownInterrupt",
    "UnsupportedMediaType",
    "UnsupportedPayload",
]

_PROBLEM_TYPE_BASE = "urn:pausetoken:error:"


class Code:
    """A stable error code, declared as a constant on the error class that carries it.

    The constant's name, lower-cased, is the code: ``TokenExpired.TOKEN_EXPIRED`` is
    ``"token_expired"``, and it equals that string. ``meaning`` says in one line when the
    code is raised; ``action`` what a caller should do about it, when that differs from the
    class's ``action``. The documentation's code tables are generated from these.

    Examples:
        >>> from pausetoken.exceptions import InvalidKeys
        >>> InvalidKeys.KEY_TOO_SHORT == "key_too_short"
        True
        >>> InvalidKeys("the key is 16 bytes long", code=InvalidKeys.KEY_TOO_SHORT).code
        'key_too_short'
    """

    __slots__ = ("action", "meaning", "name")

    def __init__(self, meaning: str, *, action: str | None = None) -> None:
        """Declare a code; its name is the constant's it is assigned to."""
        self.meaning = meaning
        self.action = action
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        # The class declaring the code names it; a class that only refers to it does not.
        if not self.name:
            self.name = name.lower()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Code):
            return self.name == other.name
        return isinstance(other, str) and self.name == other

    def __hash__(self) -> int:
        return hash(self.name)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Code({self.name!r})"


def _declaring_subclass(cls: type[PauseTokenError], name: str) -> type[PauseTokenError] | None:
    for subclass in cls.__subclasses__():
        if name in vars(subclass).get("codes", ()):
            return subclass
        if (found := _declaring_subclass(subclass, name)) is not None:
            return found
    return None


def _declare_codes(cls: type[PauseTokenError]) -> None:
    """Gather the class's own ``Code`` constants: ``default_code``, ``codes``, ``actions``."""
    declared = [value for value in vars(cls).values() if isinstance(value, Code)]
    if not declared:  # a subclass declaring ``codes`` as a mapping, the earlier way
        if "codes" in vars(cls) and "actions" not in vars(cls):
            cls.actions = dict.fromkeys(cls.codes, cls.action)
        return
    cls.default_code = declared[0].name
    cls.codes = {code.name: code.meaning for code in declared}
    cls.actions = {code.name: code.action or cls.action for code in declared}


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

    # Filled from the class's Code constants when the class is defined (_declare_codes).
    default_code: ClassVar[str]
    codes: ClassVar[Mapping[str, str]]
    actions: ClassVar[Mapping[str, str]]

    PAUSETOKEN_ERROR = Code("An error without a more specific class.")
    action: ClassVar[str] = (
        "Log it with its code and answer 500; an error without a more specific class is a failure "
        "to report if it repeats."
    )
    default_detail: ClassVar[str] = "The request could not be processed."
    http_status: ClassVar[int] = 500
    title: ClassVar[str] = "pausetoken error"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _declare_codes(cls)

    def __new__(cls, *args: Any, code: Code | str | None = None, **_: Any) -> Self:
        """Make the error, of the subclass that declares ``code`` when this class does not.

        ``ConfigurationError(code="key_too_short")`` is an ``InvalidKeys``: a code names one
        class, however the raise site spells it.
        """
        name = code.name if isinstance(code, Code) else code
        if name is not None and name not in cls.codes:
            made = _declaring_subclass(cls, name)
            if made is not None:
                return cast("Self", super().__new__(made, *args))
        return super().__new__(cls, *args)

    def __init__(self, detail: str | None = None, *, code: Code | str | None = None) -> None:
        """Create the error.

        Args:
            detail: What went wrong, for humans. Must not contain tokens or user data.
            code: A more specific stable code than the class default: one of the class's
                ``Code`` constants (its name as a string is accepted too).

        Raises:
            ValueError: ``code`` is not declared on the class (a programming error: declare
                the code and its meaning on the class first).
        """
        name = code.name if isinstance(code, Code) else code
        if name is not None and name not in self.codes:
            msg = f"{type(self).__name__} does not declare the code {name!r}"
            raise ValueError(msg)
        self.code: str = name or self.default_code
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


_declare_codes(PauseTokenError)


# -- configuration (raised at start-up, never while serving a token) ---------------------


class ConfigurationError(PauseTokenError):
    """pausetoken is configured wrongly: missing or weak keys, bad settings, bad URLs."""

    CONFIGURATION_ERROR = Code("pausetoken is configured wrongly (no more specific code).")
    action = (
        "Fix what the message names and restart: retrying does not help. A server answers 500 and "
        "keeps the detail in its log."
    )
    default_detail = "pausetoken is not configured correctly."
    http_status = 500
    title = "Configuration error"


class InvalidSettings(ConfigurationError):
    """A setting or a policy value is missing, unknown, conflicting or invalid."""

    SETTINGS_INVALID = Code("A setting has the wrong type or value.")
    SETTINGS_MISSING = Code(
        "A required setting (store URL, key set) is not given.",
        action=(
            "Set PAUSETOKEN_STORE_URL and PAUSETOKEN_KEYS_FILE (or the store_url and keys "
            "settings); pausetoken keygen -o FILE makes a key set."
        ),
    )
    SETTINGS_UNKNOWN = Code(
        "A setting name is not known (a misspelling).",
        action="Correct or unset the setting named (the message suggests the closest name).",
    )
    SETTINGS_CONFLICT = Code(
        "Two settings that exclude each other are both given.",
        action="Keep one of the two settings named.",
    )
    SETTINGS_FILE_UNREADABLE = Code(
        "The settings file or the key file cannot be read.",
        action="Check the path, and that this user may read the file.",
    )
    POLICY_INVALID = Code(
        "A TokenPolicy value is out of range.",
        action=(
            "Correct the duration, issuer or audience named: ttl within max_lifetime, lease at "
            "least 1 second."
        ),
    )
    MAX_TOKEN_BYTES_INVALID = Code(
        "max_token_bytes is not an integer from 256 to 65536.",
        action="Set max_token_bytes to an integer from 256 to 65536.",
    )
    NAIVE_DATETIME = Code(
        "A datetime without a time zone was given.",
        action="Pass an aware datetime, such as datetime.now(UTC).",
    )
    action = "Correct the value of the setting named; durations are seconds or 15m, 24h, 7d."
    default_detail = "A setting is missing or invalid."
    title = "Invalid settings"


class InvalidKeys(ConfigurationError):
    """The key set or a key is unusable: malformed, weak, of the wrong type, or unsafe to use."""

    KEY_INVALID = Code(
        "Key material cannot be imported, or a private key's public half is not its own."
    )
    KEYS_INVALID = Code(
        "A signer was given something other than a KeyRing.",
        action="Pass the signer a KeyRing, for example KeyRing.from_jwks(text).",
    )
    ALG_NOT_ALLOWED = Code(
        "An algorithm outside HS256, EdDSA, ES256 and dir, or one the signer does not use.",
        action="Use HS256, EdDSA or ES256 keys with the jose signer, and dir keys with sealed.",
    )
    EMPTY_KEYRING = Code("The key set holds no key; there is no default key.")
    DUPLICATE_KID = Code(
        "Two keys share one kid.",
        action="Give every key its own kid (pausetoken keygen --kid KID).",
    )
    NO_ACTIVE_KEY = Code(
        "No key, or more than one, is marked as the signing key.",
        action=(
            "Name the signing key in the key set's active member; give every other key a retire_at."
        ),
    )
    KID_INVALID = Code(
        "A kid is not 1 to 64 letters, digits and '_.:-'.",
        action="Use a kid of 1 to 64 letters, digits and '_.:-'.",
    )
    JWKS_INVALID = Code("The key set is not a JWK Set in the documented format.")
    KEY_ALG_MISMATCH = Code("A key's type, curve or use does not fit its algorithm.")
    KEY_OPS_INVALID = Code("A key's key_ops contradict how pausetoken uses it.")
    KEY_TOO_SHORT = Code("A symmetric key is shorter than 32 bytes.")
    KEY_SIZE_INVALID = Code("A sealed-token key is not exactly 32 bytes.")
    KEY_IS_PEM = Code("PEM, OpenSSH or PuTTY material was given where a key or JWK Set belongs.")
    KEY_WHITESPACE = Code("A text key has whitespace or control characters at an end.")
    KEY_NOT_ASCII = Code("A text key is not ASCII: typed text, not generated.")
    KEY_PLACEHOLDER = Code("A text key contains a space or a placeholder word.")
    KEY_LOW_ENTROPY = Code("A key carries too little estimated entropy or repeats a pattern.")
    KEY_FILE_INSECURE = Code(
        "The key file may be written by other users.",
        action="chmod 600 the key file, and find out who else could have changed it.",
    )
    KEY_CANNOT_SIGN = Code(
        "The ring holds no private half of its signing key.",
        action="Mint with the ring that holds the private signing key.",
    )
    KEY_NO_PUBLIC_HALF = Code(
        "Symmetric keys have no public half to export or verify with.",
        action="Use EdDSA or ES256 keys where verifiers must not mint; HS256 and dir are shared.",
    )
    GRACE_INVALID = Code(
        "A rotation's grace period is not a non-negative timedelta.",
        action="Pass a grace of at least the longest token lifetime plus the leeway.",
    )
    action = "Make a key set with pausetoken keygen -o FILE and point PAUSETOKEN_KEYS_FILE at it."
    default_detail = "The key set cannot be used."
    title = "Invalid keys"


class PluginError(ConfigurationError):
    """A plugin (a backend or a command) cannot be chosen or loaded.

    Its subclasses say why a name finds no plugin, or two.
    """

    BACKEND_IMPORT_FAILED = Code("An installed backend failed to import.")
    BACKEND_API_VERSION = Code(
        "A backend implements another plugin API version.",
        action="Upgrade the backend's distribution to a release made for this pausetoken.",
    )
    COMMAND_IMPORT_FAILED = Code(
        "An installed command fails to import.",
        action=(
            "Run the command again with --debug to see why it fails; reinstall or upgrade the "
            "distribution the message names."
        ),
    )
    COMMAND_INVALID = Code(
        "An installed command's entry point names no command (help, arguments and run).",
        action=(
            "Upgrade the distribution the message names to a release made for this pausetoken, or "
            "uninstall it."
        ),
    )
    action = (
        "Run pausetoken backends, or the command again with --debug, to see why it fails; reinstall"
        " the backend."
    )
    default_detail = "A plugin cannot be loaded."
    title = "Plugin error"


class InvalidInterrupt(ConfigurationError):
    """An interrupt kind cannot be registered: a name taken twice, or types JSON cannot carry."""

    DUPLICATE_INTERRUPT = Code("Two interrupt kinds are registered under one name.")
    INTERRUPT_TYPE_UNSUPPORTED = Code(
        "An interrupt's payload or response type cannot be read from JSON.",
        action="Use attrs classes, dataclasses, TypedDicts, pydantic models or JSON types.",
    )
    action = "Register each interrupt name once per service."
    default_detail = "The interrupt kind cannot be registered."
    title = "Invalid interrupt"


class StoreMisconfigured(ConfigurationError):
    """The token store refuses permanently, or its table is missing or of another version.

    Raised at start-up: waiting will not help. While serving, a store that cannot be
    reached is [`StoreUnavailable`][pausetoken.exceptions.StoreUnavailable].
    """

    STORE_MISCONFIGURED = Code(
        "The store refuses permanently (credentials, database, permissions)."
    )
    STORE_TABLE_MISSING = Code(
        "The store's table is missing at start-up.",
        action=(
            "Restore the table from a backup: its rows refuse replays. Delete its row in "
            "pausetoken_schema only to start afresh on purpose."
        ),
    )
    STORE_SCHEMA_TOO_NEW = Code(
        "The store's table was created by a newer version.",
        action="Upgrade pausetoken-sqlalchemy to the release that created the table.",
    )
    STORE_SCHEMA_MISMATCH = Code(
        "The store's table lacks columns this version uses.",
        action=(
            "Migrate the table as the message says (it names the columns), keeping its rows: they "
            "refuse replays."
        ),
    )
    action = (
        "Correct the store URL (user, password, database, path) or the database's permissions; "
        "waiting will not help."
    )
    default_detail = "The token store is misconfigured."
    title = "Store misconfigured"


class CommandLineError(ConfigurationError):
    """The `pausetoken` command was called wrongly, or what it needs is missing."""

    CLI_USAGE = Code("A command-line argument is missing or out of range.")
    CLI_RICH_MISSING = Code(
        "The command draws tables and rich (the cli extra) is not installed.",
        action="Install the cli extra, or pass --json.",
    )
    CLI_OUTPUT_EXISTS = Code(
        "keygen -o names a path that exists; it is never overwritten.",
        action="Choose another path; remove the file first only to replace its key set on purpose.",
    )
    CLI_OUTPUT_UNWRITABLE = Code(
        "keygen -o cannot create its file.",
        action="Check that the directory exists and that you may write to it.",
    )
    CLI_BENCHMARKS_MISSING = Code(
        "pausetoken bench finds no benchmark scripts (they are in a checkout, not the wheel).",
        action="Run it in a clone of the repository, or pass --dir DIR.",
    )
    action = "Run pausetoken COMMAND --help for the arguments."
    default_detail = "The command line is not valid."
    title = "Command-line error"


class LangGraphMisconfigured(ConfigurationError):
    """The LangGraph integration is used with a graph, checkpointer or config it cannot serve."""

    LANGGRAPH_NO_CHECKPOINTER = Code("The LangGraph graph was compiled without a checkpointer.")
    LANGGRAPH_SYNC_CHECKPOINTER = Code(
        "The LangGraph graph's checkpointer is synchronous; the helpers need an async one.",
        action=(
            "Use AsyncSqliteSaver or AsyncPostgresSaver instead of SqliteSaver or PostgresSaver."
        ),
    )
    LANGGRAPH_NEEDS_GRAPH = Code(
        "The LangGraph checkpoint reader needs the compiled graph.",
        action="Build LangGraphCheckpoints(graph) in code and pass it as checkpoints=.",
    )
    LANGGRAPH_INTERRUPT_ID_REQUIRED = Code(
        "LangGraph assigns interrupt ids; the pending one must be named.",
        action="Pass the pending interrupt's id, or mint with mint_pending().",
    )
    LANGGRAPH_READER_MISMATCH = Code(
        "The service reads another graph than the one being resumed.",
        action="Resume with the service built with LangGraphCheckpoints(graph) for this graph.",
    )
    LANGGRAPH_THREAD_REQUIRED = Code(
        "The LangGraph config has no configurable.thread_id.",
        action="Put the thread id in config['configurable']['thread_id'].",
    )
    LANGGRAPH_SUBGRAPH_CONFIG = Code(
        "A subgraph's config was given where the root graph's is needed.",
        action="Pass the thread's config, not a subgraph's.",
    )
    LANGGRAPH_RESUME_ADDRESSED = Code(
        "The resume config names a checkpoint; the token gives the thread.",
        action="Remove thread_id, checkpoint_id and checkpoint_ns from the resume config.",
    )
    DEMO_CHECKPOINTER_FAILED = Code(
        "The demo cannot open its LangGraph checkpointer.",
        action="Check that the checkpointer's database runs and that the URL names it.",
    )
    action = "Compile the graph with an async checkpointer (AsyncSqliteSaver, AsyncPostgresSaver)."
    default_detail = "The LangGraph integration is not set up correctly."
    title = "LangGraph misconfigured"


class BackendNotInstalled(PluginError):
    """A known backend was chosen but the distribution that provides it is not installed."""

    BACKEND_NOT_INSTALLED = Code(
        "A known backend was chosen but its distribution is not installed."
    )
    COMMAND_NOT_INSTALLED = Code(
        "A known command was chosen but the distribution that provides it is not installed."
    )
    action = (
        "Install what the message names, in the same command as the core; pausetoken backends lists"
        " what is installed."
    )
    default_detail = "The chosen backend is not installed."
    title = "Backend not installed"


class UnknownBackend(PluginError):
    """No installed distribution provides the chosen backend."""

    UNKNOWN_BACKEND = Code("No installed distribution provides the chosen backend.")
    action = (
        "Check the URL's scheme or the name (postgresql+asyncpg://, not postgres://); pausetoken "
        "backends lists the installed ones."
    )
    default_detail = "No installed backend has that name."
    title = "Unknown backend"


class AmbiguousBackend(PluginError):
    """Two installed distributions register the same backend name."""

    AMBIGUOUS_BACKEND = Code("Two installed distributions register one backend name.")
    AMBIGUOUS_COMMAND = Code(
        "Two installed distributions (or one and pausetoken) register one command name.",
        action="Uninstall one of the two distributions the message names.",
    )
    action = "Uninstall one of the two distributions that register the name (pausetoken backends)."
    default_detail = "Two installed distributions register the same backend name."
    title = "Ambiguous backend"


class UnsupportedPayload(PauseTokenError, ValueError):
    """A payload cannot be represented exactly as JSON, so it cannot be hashed stably.

    Raised at mint time for NaN, infinities, bytes, sets, integers beyond 2**53 and objects
    pausetoken does not know how to unstructure.
    """

    UNSUPPORTED_PAYLOAD = Code("A payload cannot be represented exactly as JSON.")
    INVALID_PAYLOAD = Code("A payload does not fit its interrupt's registered type.")
    CLAIMS_NOT_JSON = Code(
        "The claims to sign are not a JSON object.",
        action="Fix the signer or code that signs: claims are a JSON object.",
    )
    TOKEN_TOO_LARGE = Code(
        "The token to mint would be longer than max_token_bytes.",
        action="Mint with shorter ids, or raise max_token_bytes on every service that verifies.",
    )
    action = (
        "Fix the mint call: give a payload of JSON types that fits the registered type. No token "
        "was minted."
    )
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

    TOKEN_INVALID = Code("The token is not valid (no more specific code).")
    TOKEN_TOO_LARGE = Code(
        "The token is longer than max_token_bytes.",
        action=(
            "Answer 401; the token was cut, wrapped or decorated on its way (Bearer, quotes, line "
            "breaks): send it whole in a header or a body."
        ),
    )
    TOKEN_MALFORMED = Code(
        "Not a string of compact segments of canonical base64url, or no signature.",
        action=(
            "Answer 401; the token was cut, wrapped or decorated on its way (Bearer, quotes, line "
            "breaks): send it whole in a header or a body."
        ),
    )
    TOKEN_HEADER_INVALID = Code(
        "The header is oversized, not strict JSON, or its kid is malformed.",
        action=(
            "Answer 401; the token was cut, wrapped or decorated on its way (Bearer, quotes, line "
            "breaks): send it whole in a header or a body."
        ),
    )
    TOKEN_ALGORITHM_NOT_ALLOWED = Code(
        "alg (or enc) is missing, not a string or not allowed, or wraps a key.",
        action=(
            "Answer 401 and count it: pausetoken never mints such a token (a probe, another "
            "system's token, or a sealed token sent to a jose signer)."
        ),
    )
    TOKEN_HEADER_FORBIDDEN = Code(
        "The header names a member outside the whitelist (crit, b64, jwk, x5c...).",
        action=(
            "Answer 401 and count it: pausetoken never mints such a token (a probe, another "
            "system's token, or a sealed token sent to a jose signer)."
        ),
    )
    TOKEN_TYPE_INVALID = Code(
        "typ is not pause+jwt.",
        action=(
            "Answer 401 and count it: pausetoken never mints such a token (a probe, another "
            "system's token, or a sealed token sent to a jose signer)."
        ),
    )
    TOKEN_KEY_UNKNOWN = Code(
        "No key in the ring has the token's kid.",
        action=(
            "Give every verifying service the minting service's keys (stage a new key before it "
            "signs); otherwise the token is forged."
        ),
    )
    TOKEN_KEY_RETIRED = Code(
        "The token's key is past its retirement deadline.",
        action=(
            "Mint a new token for the pause; rotate with a grace of at least the longest lifetime "
            "plus the leeway."
        ),
    )
    TOKEN_SIGNATURE_INVALID = Code(
        "The signature, or a sealed token's authentication tag, does not verify.",
        action=(
            "Answer 401: the token was altered, or minted with another key set (compare the "
            "services' keys)."
        ),
    )
    TOKEN_PAYLOAD_INVALID = Code(
        "The verified payload is not strict JSON or is nested too deeply.",
        action=(
            "Answer 401; the token was cut, wrapped or decorated on its way (Bearer, quotes, line "
            "breaks): send it whole in a header or a body."
        ),
    )
    TOKEN_CLAIMS_INVALID = Code(
        "A claim is missing, unknown or of the wrong type or format.",
        action="Answer 401: the token was not minted by this pausetoken.",
    )
    TOKEN_LIFETIME_TOO_LONG = Code(
        "exp - iat is longer than max_lifetime.",
        action="Give the minting and verifying services the same max_lifetime.",
    )
    TOKEN_NOT_YET_VALID = Code(
        "iat or nbf is in the future beyond the leeway.",
        action="Synchronise the clocks (NTP) of the hosts that mint and redeem.",
    )
    TOKEN_ISSUER_INVALID = Code(
        "iss is not the configured issuer.",
        action=(
            "Give the verifying service the minting service's issuer and audience, or send the "
            "token to the application that minted it."
        ),
    )
    TOKEN_AUDIENCE_INVALID = Code(
        "aud is not the configured audience.",
        action=(
            "Give the verifying service the minting service's issuer and audience, or send the "
            "token to the application that minted it."
        ),
    )
    TOKEN_NAMESPACE_MISMATCH = Code(
        "The token was minted for another runtime namespace (another graph).",
        action=(
            "Redeem with the service whose reader serves the token's graph (one service per graph)."
        ),
    )
    action = (
        "Answer 401 and do not retry with this token: it is damaged, forged or for another service."
        " Alert on bursts."
    )
    default_detail = "The token is not valid."
    http_status = 401
    title = "Invalid token"


class TokenExpired(PauseTokenError):
    """The token's ``exp`` is in the past (beyond the configured leeway)."""

    TOKEN_EXPIRED = Code("exp plus the leeway is in the past.")
    action = (
        "Answer 410: tell the person the link expired and, if the pause is still open, mint a new "
        "token for it."
    )
    default_detail = (
        "The token has expired. Its lifetime is set when it is minted: the ttl given to "
        "mint(), by default the ttl setting (PAUSETOKEN_TTL)."
    )
    http_status = 410
    title = "Token expired"


class TokenRevoked(PauseTokenError):
    """The token was revoked before it was redeemed."""

    TOKEN_REVOKED = Code("The token's pause was revoked before it was redeemed.")
    PAUSE_REVOKED = Code(
        "At mint: the pause was revoked; no token is minted for it.",
        action="Send no token: the pause was revoked; end or restart the run.",
    )
    action = "Answer 410: the pause was withdrawn; never resume it with this answer."
    default_detail = "The token has been revoked."
    http_status = 410
    title = "Token revoked"


class ScopeMismatch(PauseTokenError):
    """The token belongs to another tenant scope than the caller's."""

    SCOPE_MISMATCH = Code("The token belongs to another tenant scope.")
    action = (
        "Answer 403; take the scope from the caller's authenticated identity, never from the "
        "request."
    )
    default_detail = "The token does not belong to this scope."
    http_status = 403
    title = "Scope mismatch"


class PrincipalMismatch(PauseTokenError):
    """The token is bound to another principal than the one answering."""

    PRINCIPAL_MISMATCH = Code("The token is bound to another principal.")
    action = "Answer 403; pass the authenticated user's id as principal, the id given at mint."
    default_detail = "This principal may not answer this pause."
    http_status = 403
    title = "Principal mismatch"


class UnknownInterrupt(PauseTokenError):
    """No interrupt kind is registered under that name, or it is not the one expected.

    The default code says nothing is registered under the token's (or the caller's) name;
    ``interrupt_mismatch`` says the token is for another interrupt than the caller's
    ``expect=``.
    """

    UNKNOWN_INTERRUPT = Code("No interrupt kind is registered under that name.")
    FOREIGN_INTERRUPT = Code(
        "A pending LangGraph interrupt was not raised with ask().",
        action=(
            "Raise the graph's interrupts with ask(), or call mint_pending(..., foreign='skip')."
        ),
    )
    INTERRUPT_MISMATCH = Code(
        "The token (or a pending pause) is for another interrupt than the expect= one.",
        action=(
            "Answer 400: send the token where its interrupt is answered, or redeem without expect=;"
            " nothing was claimed or minted."
        ),
    )
    action = (
        "Register the interrupt on every service that redeems (a deployment dropped or renamed it);"
        " its tokens are refused until then."
    )
    default_detail = "No interrupt is registered under that name."
    http_status = 400
    title = "Unknown interrupt"


class InvalidResponse(PauseTokenError):
    """The answer does not fit the interrupt's response type or its validator refused it.

    Attributes:
        field: Dotted path of the offending field, when known.
    """

    INVALID_RESPONSE = Code("The answer does not fit the response type or its validator.")
    action = (
        "Answer 422 and let the person correct the answer (field names where); the token is not "
        "used up."
    )
    default_detail = "The response is not valid for this interrupt."
    http_status = 422
    title = "Invalid response"

    def __init__(
        self,
        detail: str | None = None,
        *,
        code: Code | str | None = None,
        field: str | None = None,
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

    PAYLOAD_MISMATCH = Code(
        "The payload at the checkpoint is not the one the token was minted for."
    )
    action = (
        "Answer 400 and investigate: the stored payload changed after minting (tampering, or code "
        "that rewrote the state)."
    )
    default_detail = "The pending payload does not match the token."
    http_status = 400
    title = "Payload mismatch"


class CheckpointNotFound(PauseTokenError):
    """The token's thread or checkpoint no longer exists."""

    CHECKPOINT_NOT_FOUND = Code("The token's thread or checkpoint no longer exists.")
    action = (
        "Answer 404: the thread or checkpoint was deleted, so the pause cannot be answered; "
        "withdraw the request."
    )
    default_detail = "The checkpoint this token refers to does not exist."
    http_status = 404
    title = "Checkpoint not found"


class CheckpointLost(PauseTokenError):
    """The checkpoint is gone because the checkpointer does not persist state."""

    CHECKPOINT_LOST = Code("The checkpointer does not persist state and lost the checkpoint.")
    action = (
        "Use a persistent checkpointer shared by every process that mints and redeems; start the "
        "run again."
    )
    default_detail = "The checkpoint was lost; the checkpointer does not persist state."
    http_status = 424
    title = "Checkpoint lost"


class StaleToken(PauseTokenError):
    """The run moved on: the checkpoint is not current or the interrupt was answered."""

    STALE_TOKEN = Code("The run moved on since the token was minted.")
    action = (
        "Answer 409: the run moved on (answered another way, or resumed elsewhere); tell the "
        "person, do not retry."
    )
    default_detail = "The run has moved on since this token was issued."
    http_status = 409
    title = "Stale token"


class AlreadyRedeemed(PauseTokenError):
    """The token was already redeemed with another answer."""

    ALREADY_REDEEMED = Code("The pause was already answered with another answer (a replay).")
    PAUSE_ALREADY_REDEEMED = Code(
        "At mint: the pause was already answered; no token is minted for it.",
        action="Send no token: the pause was already answered.",
    )
    action = (
        "Answer 409: the pause was answered otherwise; never resume it again. Alert on repeats: "
        "replay attempts."
    )
    default_detail = "The token has already been redeemed with another answer."
    http_status = 409
    title = "Already redeemed"


class RedemptionInProgress(PauseTokenError):
    """Another worker holds a live claim on the token.

    Attributes:
        retry_after: Seconds after which a retry may succeed (the lease's remaining time).
    """

    REDEMPTION_IN_PROGRESS = Code("Another worker holds a live claim on the pause.")
    action = (
        "Answer 409 with Retry-After from retry_after; a retry then learns how the other redemption"
        " ended."
    )
    default_detail = "The token is being redeemed by another request; retry later."
    http_status = 409
    title = "Redemption in progress"

    def __init__(
        self,
        detail: str | None = None,
        *,
        code: Code | str | None = None,
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

    LEASE_LOST = Code("The claim lapsed before commit and another redeemer took it over.")
    LEASE_REVOKED = Code(
        "The claim lapsed before commit and the pause was then revoked.",
        action=(
            "Stop acting on the answer: the pause was revoked; undo what the body did if you can."
        ),
    )
    action = (
        "Stop acting on the answer and reconcile what the body did; find why renewals failed (store"
        " outage, blocked event loop)."
    )
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

    COMMIT_UNCONFIRMED = Code("The body ran but the store could not confirm the commit.")
    action = (
        "Answer 500; do not answer the pause again blindly: call status() once the store is back "
        "(REDEEMED: it landed)."
    )
    default_detail = "The answer was acted on but its redemption could not be confirmed."
    http_status = 500
    title = "Commit unconfirmed"


class StoreUnavailable(PauseTokenError):
    """The consumption store cannot be reached; pausetoken fails closed.

    With a store that consumes in one call (``consume_unconfirmed``) the answer may have
    been recorded by the failed call: see that code's action.
    """

    STORE_UNAVAILABLE = Code("The store cannot be reached; nothing is redeemed (fail closed).")
    CONSUME_UNCONFIRMED = Code(
        "consume() claims and commits in one store call, and that call failed: the store may "
        "have recorded the answer before its connection broke. Nothing was acted on.",
        action=(
            "Answer 503. Call status() once the store is back: REDEEMED means the answer was "
            "recorded (a retry then comes back replayed), so treat its action as due; ACTIVE "
            "means nothing was recorded and the answer may be sent again."
        ),
    )
    STORE_TABLE_MISSING = Code(
        "The store's table was dropped while serving.",
        action=(
            "Restore the table from a backup: its rows refuse replays, and it is not recreated "
            "while serving."
        ),
    )
    action = (
        "Answer 503 and retry later: nothing was acted on. Alert if it lasts; pausetoken store "
        "check URL names the cause."
    )
    default_detail = "The token store is unavailable."
    http_status = 503
    title = "Store unavailable"


class InvalidMintRequest(PauseTokenError, ValueError):
    """``mint()`` was asked for a token that could never be redeemed.

    No scope, an empty or overlong id or principal, or a ttl outside
    ``(leeway, max_lifetime]``. Raised before anything is recorded.
    """

    MINT_REQUEST_INVALID = Code("mint() was asked for a token that could never be redeemed.")
    action = (
        "Fix the mint call: a Scope, ids of 1 to 512 characters, a ttl above the leeway and within "
        "max_lifetime."
    )
    default_detail = "The mint request cannot produce a token that verifies."
    http_status = 400
    title = "Invalid mint request"


# -- HTTP requests (pausetoken.asgi), refused before any token is looked at -------------


class InvalidRequest(PauseTokenError):
    """An HTTP request to the resume router is not in the documented shape.

    Raised by ``pausetoken.asgi`` before the token is verified: the body is not a JSON
    object with the documented members, is not strict JSON, or a token came in the URL.
    """

    REQUEST_INVALID = Code("The request body is not a JSON object with the documented members.")
    REQUEST_JSON_INVALID = Code(
        "The request body is not UTF-8 JSON without duplicate members, with finite numbers and "
        "bounded nesting."
    )
    TOKEN_IN_URL = Code(
        "A token was sent in the query string, which servers and proxies log.",
        action=(
            "Send the token in the Pause-Token header or the JSON body; treat a token that was in a"
            " URL as disclosed and revoke it."
        ),
    )
    action = "Send the request as the OpenAPI description documents it."
    default_detail = "The request is not in the documented shape."
    http_status = 400
    title = "Invalid request"


class RequestTooLarge(PauseTokenError):
    """An HTTP request body is longer than the router accepts; it was not parsed."""

    REQUEST_TOO_LARGE = Code("The request body exceeds the router's max_body_bytes.")
    action = "Send a smaller answer, or raise max_body_bytes where the router is built."
    default_detail = "The request body is too large."
    http_status = 413
    title = "Request too large"


class UnsupportedMediaType(PauseTokenError):
    """An HTTP request body is not ``application/json``.

    Requiring JSON also keeps cross-site HTML forms out: a browser sends JSON to another
    origin only after a CORS preflight the router never grants.
    """

    MEDIA_TYPE_UNSUPPORTED = Code("The request's Content-Type is not application/json.")
    action = "Send the body as JSON with Content-Type: application/json."
    default_detail = "The request body must be application/json."
    http_status = 415
    title = "Unsupported media type"


class NotAuthenticated(PauseTokenError):
    """The application could not tell who sent an HTTP request.

    The application's ``authenticate`` function raises it; the router answers 401 with a
    ``WWW-Authenticate`` challenge.
    """

    NOT_AUTHENTICATED = Code("The request carries no credentials the application accepts.")
    action = "Sign in, or send the application's credentials, and retry."
    default_detail = "The request is not authenticated."
    http_status = 401
    title = "Not authenticated"


class RequestForbidden(PauseTokenError):
    """A request to the approval page's endpoints failed its cross-site request checks.

    The page's requests must come from the page itself: the same origin, and the signed
    per-page value the page was served with. Nothing was read from the body.
    """

    REQUEST_FORBIDDEN = Code("The request failed the approval page's cross-site checks.")
    CSRF_INVALID = Code(
        "The page's anti-forgery value is missing, forged or older than the page's lifetime."
    )
    ORIGIN_REFUSED = Code("The request's Origin is missing or is not the router's own.")
    action = "Reload the approval page and answer from it; another site cannot answer for it."
    default_detail = "The request did not come from the approval page."
    http_status = 403
    title = "Forbidden"


class ResumeFailed(PauseTokenError):
    """The HTTP router's resume function failed, or returned what JSON cannot carry.

    Only the error's type is logged: its message may quote the answer.
    """

    RESUME_FAILED = Code(
        "The HTTP router's resume function raised an error that is not a pausetoken error."
    )
    RESUME_RESULT_INVALID = Code(
        "The HTTP router's resume function returned a result JSON cannot carry exactly.",
        action=(
            "The run resumed and the answer is committed: return JSON values (dicts, lists, str, "
            "finite numbers, bool, None) from the resume function."
        ),
    )
    action = (
        "The claim was released: fix the resume function (the log names its error type); the same "
        "answer can be sent again."
    )
    default_detail = "The resume function failed."
    http_status = 500
    title = "Resume failed"


class StoreCheckFailed(PauseTokenError):
    """`pausetoken store check` could not complete: a process of its race check failed."""

    RACE_WORKER_FAILED = Code(
        "A process of the store race check failed; only its error type is reported."
    )
    action = (
        "Run pausetoken store check URL --debug to see the failed process's traceback; do not use a"
        " store that fails under concurrent claims."
    )
    default_detail = "The store check failed."
    http_status = 500
    title = "Store check failed"
