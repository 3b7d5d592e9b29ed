"""How to install a distribution or extra, said one way everywhere (errors, CLI, docs).

Until pausetoken's distributions are published, ``pip install "pausetoken[sqlite]"`` does
not resolve, so hints name what works from a checkout of the repository instead. Flipping
`PUBLISHED` switches every hint to the published form.
"""

from __future__ import annotations

from typing import Final

__all__ = ["PUBLISHED", "install_hint"]

#: Whether the distributions are on the package index. One switch for every hint.
PUBLISHED: Final = False

# Where each distribution lives in a checkout.
_CHECKOUT_PATHS: Final = {
    "pausetoken": "./sdk",
    "pausetoken-sqlalchemy": "./backends/sqlalchemy",
    "pausetoken-langgraph": "./backends/langgraph",
    "pausetoken-redis": "./backends/redis",
    "pausetoken-mongo": "./backends/mongo",
    "pausetoken-pydantic-ai": "./backends/pydantic-ai",
    "pausetoken-openai-agents": "./backends/openai-agents",
    "pausetoken-mcp": "./backends/mcp",
    "pausetoken-agui": "./backends/agui",
}
# Core extras that only pull in a backend distribution: from a checkout, name the backend.
_BACKEND_EXTRAS: Final = {
    "sqlalchemy": ("pausetoken-sqlalchemy", ""),
    "sqlite": ("pausetoken-sqlalchemy", "sqlite"),
    "postgresql": ("pausetoken-sqlalchemy", "postgresql"),
    "mysql": ("pausetoken-sqlalchemy", "mysql"),
    "langgraph": ("pausetoken-langgraph", ""),
    "redis": ("pausetoken-redis", ""),
    "mongo": ("pausetoken-mongo", ""),
    "pydantic-ai": ("pausetoken-pydantic-ai", ""),
    "openai-agents": ("pausetoken-openai-agents", ""),
    "mcp": ("pausetoken-mcp", ""),
    "agui": ("pausetoken-agui", ""),
}


def install_hint(*requirements: str, published: bool = PUBLISHED) -> str:
    """The ``pip install`` line for ``requirements`` such as ``"pausetoken[cli]"``.

    Examples:
        >>> install_hint("pausetoken[cli]", published=True)
        'pip install "pausetoken[cli]"'
        >>> install_hint("pausetoken[cli]", "pausetoken-sqlalchemy[sqlite]", published=False)
        'pip install "./sdk[cli]" "./backends/sqlalchemy[sqlite]" (from a checkout of pausetoken)'
        >>> install_hint("pausetoken[sqlite]", published=False)
        'pip install "./sdk" "./backends/sqlalchemy[sqlite]" (from a checkout of pausetoken)'

    Args:
        *requirements: Distributions with optional extras, in their published names.
        published: Use the published form (default: `PUBLISHED`).

    Returns:
        One line, ready to show a user.
    """
    if published:
        return "pip install " + " ".join(f'"{r}"' for r in requirements)
    # distribution -> its extras, in the order first named; the backends depend on the core,
    # which pip finds only when its path is given in the same command.
    wanted: dict[str, list[str]] = {"pausetoken": []}
    for requirement in requirements:
        for dist, extra in _checkout_parts(requirement):
            extras = wanted.setdefault(dist, [])
            if extra and extra not in extras:
                extras.append(extra)
    shown = [
        _CHECKOUT_PATHS.get(dist, dist) + (f"[{','.join(extras)}]" if extras else "")
        for dist, extras in wanted.items()
    ]
    return "pip install " + " ".join(f'"{s}"' for s in shown) + " (from a checkout of pausetoken)"


def _checkout_parts(requirement: str) -> list[tuple[str, str]]:
    """``(distribution, extra)`` pairs; an empty extra names the distribution alone."""
    name, _, rest = requirement.partition("[")
    extras = [e.strip() for e in rest.rstrip("]").split(",") if e.strip()]
    if name != "pausetoken":
        return [(name, extra) for extra in extras] or [(name, "")]
    parts: list[tuple[str, str]] = []
    own = [extra for extra in extras if extra not in _BACKEND_EXTRAS]
    if own or len(own) == len(extras):
        parts.extend([("pausetoken", extra) for extra in own] or [("pausetoken", "")])
    parts.extend(_BACKEND_EXTRAS[extra] for extra in extras if extra in _BACKEND_EXTRAS)
    return parts
