"""The test matrix: backends x Python versions, doctests, coverage, lint, typing, docs.

`nox` runs every default session. `tests` runs each backend on the newest installed Python
(`nox -s "tests(backend='sqlite')"`), `compat` on the other installed Pythons of 3.11-3.13
(by default on the oldest only, to keep CI short; `nox -s compat` runs every one of them);
`doctests` runs the docstring examples; `coverage` combines the branch coverage `tests` and
`doctests` measured and fails under the threshold in pyproject.toml; `nox -l` lists them all.
Every session but `compat` runs the tests marked slow, which a plain `pytest` deselects
(`compat` checks the other Pythons; the slow tests' behaviour does not depend on them).

Database backends read their server URLs from the environment
(PAUSETOKEN_TEST_POSTGRESQL_URL, PAUSETOKEN_TEST_MYSQL_URL, PAUSETOKEN_TEST_REDIS_URL).
Without one, the session skips with the reason, except under CI (CI=true) where a missing
server fails the run.
The mongodb session uses PAUSETOKEN_TEST_MONGODB_URL when it is set, else starts
nx-27017 itself.

`race` races 8 processes for the same tokens on every engine (300 tokens each;
PAUSETOKEN_TEST_RACE_TOKENS=5000 is the full run); `faults` restarts, cuts off, fills up and
drops private servers it starts under load (docs/operations.md, "What the fault tests prove").
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import nox

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "uv"

ROOT = Path(__file__).parent
PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")
SUPPORTED = nox.project.python_versions(nox.project.load_toml(ROOT / "sdk" / "pyproject.toml"))
ON_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}

# Interpreters are found on this machine, never downloaded.
os.environ.setdefault("UV_PYTHON_DOWNLOADS", "never")


def _installed(version: str) -> bool:
    found = subprocess.run(  # noqa: S603 - fixed arguments
        ["uv", "python", "find", "--no-project", version],  # noqa: S607
        capture_output=True,
        check=False,
    )
    return found.returncode == 0


PYTHONS = [version for version in SUPPORTED if _installed(version)] or SUPPORTED[:1]
NEWEST, OLDER = PYTHONS[-1], PYTHONS[:-1]
nox.options.sessions = [
    "tests",
    # The oldest Python only: the versions between it and the newest are run on request.
    *([f"compat-{OLDER[0]}"] if OLDER else []),
    "doctests",
    "coverage",
    "lint",
    "typing",
    "docs",
    "demo",
    "bench-quick",
    "race",
    "faults",
    "fuzz",
]

# The pyproject's addopts deselect slow tests for the inner loop (-m "not slow"); an empty
# -m replaces that, so that every session, and CI, runs them.
EVERY_TEST = ("-m", "")

SERVER_VARIABLES = {
    "postgresql": "PAUSETOKEN_TEST_POSTGRESQL_URL",
    "mysql": "PAUSETOKEN_TEST_MYSQL_URL",
    "redis": "PAUSETOKEN_TEST_REDIS_URL",
    # Optional: without it the tests start nx-27017 (the mongo-server dependency group).
    "mongodb": "PAUSETOKEN_TEST_MONGODB_URL",
}

# backend -> the dependency group its tests need besides "test": the server they start
# themselves (nx-27017), or the HTTP surface's client, server, fuzzer and browser driver
SERVER_GROUPS = {"mongodb": "mongo-server", "http": "http"}

# backend -> (what to install, test paths, environment variable naming a server URL)
BACKENDS: dict[str, tuple[list[str], list[str], str | None]] = {
    "memory": (
        ["./sdk[testing,cli]", "./tests/plugins/pausetoken-inhouse"],
        ["tests/sdk", "tests/plugins"],
        None,
    ),
    "sqlite": (
        ["./sdk[testing,cli]", "./backends/sqlalchemy[sqlite,postgresql,mysql]"],
        ["tests/backends/sqlalchemy"],
        None,
    ),
    "postgresql": (
        ["./sdk[testing,cli]", "./backends/sqlalchemy[sqlite,postgresql,mysql]"],
        ["tests/backends/sqlalchemy"],
        SERVER_VARIABLES["postgresql"],
    ),
    "mysql": (
        ["./sdk[testing,cli]", "./backends/sqlalchemy[sqlite,postgresql,mysql]"],
        ["tests/backends/sqlalchemy"],
        SERVER_VARIABLES["mysql"],
    ),
    "redis": (
        ["./sdk[testing,cli]", "./backends/redis"],
        ["tests/backends/redis"],
        SERVER_VARIABLES["redis"],
    ),
    # Starts its own 3-master cluster (with replicas) on free loopback ports.
    "redis-cluster": (
        ["./sdk[testing,cli]", "./backends/redis"],
        ["tests/backends/redis"],
        None,
    ),
    # AsyncPostgresSaver tests use PAUSETOKEN_TEST_POSTGRESQL_URL when it is set, else skip.
    "langgraph": (
        [
            "./sdk[testing,cli]",
            # PostgreSQL too: the LangGraph tests run on AsyncPostgresSaver and the demo's
            # --store is tested against a refused PostgreSQL server.
            "./backends/sqlalchemy[sqlite,postgresql]",
            "./backends/langgraph[sqlite,postgresql,langchain]",
        ],
        ["tests/backends/langgraph"],
        None,
    ),
    # Against PAUSETOKEN_TEST_MONGODB_URL when it is set, else an nx-27017 the tests start.
    "mongodb": (
        ["./sdk[testing,cli]", "./backends/mongo"],
        ["tests/backends/mongo"],
        None,
    ),
    # Pydantic AI's conversation stores in memory; the token store on SQLite, and on
    # PostgreSQL when PAUSETOKEN_TEST_POSTGRESQL_URL is set (those cases fail on CI without it).
    "pydantic-ai": (
        [
            "./sdk[testing,cli]",
            "./backends/sqlalchemy[sqlite,postgresql]",
            "./backends/pydantic-ai",
        ],
        ["tests/backends/pydantic_ai"],
        None,
    ),
    # The token store and the run states on SQLite, and on PostgreSQL as above.
    "openai-agents": (
        [
            "./sdk[testing,cli]",
            "./backends/sqlalchemy[sqlite,postgresql]",
            "./backends/openai-agents[sqlite,postgresql]",
        ],
        ["tests/backends/openai_agents"],
        None,
    ),
    # Tool calls and tokens on SQLite, and on PostgreSQL as above; the approval page in-process
    # (httpx drives it in the example, as a browser would).
    "mcp": (
        [
            "./sdk[testing,cli,http]",
            "./backends/sqlalchemy[sqlite,postgresql]",
            "./backends/mcp[sqlite,postgresql]",
            "httpx",
        ],
        ["tests/backends/mcp"],
        None,
    ),
    # Thread states and tokens on SQLite, and on PostgreSQL as above.
    "agui": (
        [
            "./sdk[testing,cli]",
            "./backends/sqlalchemy[sqlite,postgresql]",
            "./backends/agui[sqlite,postgresql]",
        ],
        ["tests/backends/agui"],
        None,
    ),
    # The HTTP router (in-process, behind uvicorn, fuzzed), the approval page in Debian's
    # Chromium, `pausetoken demo --serve` and the HTTP pages' code blocks.
    "http": (
        [
            "./sdk[testing,cli,http]",
            "./backends/sqlalchemy[sqlite]",
            "./backends/langgraph[sqlite,serve]",
        ],
        ["tests/asgi"],
        None,
    ),
}

# On the other Pythons, the http session leaves out its slow tests (Chromium, the fuzzer and
# the demo's server, each a minute or so): the newest Python runs them.
# Sessions sharing test paths split them by marker (slow tests still run: -m replaces addopts).
MARKERS = {"redis": "not redis_cluster", "redis-cluster": "redis_cluster"}


def _backend_distributions() -> list[Path]:
    return sorted(path.parent for path in (ROOT / "backends").glob("*/pyproject.toml"))


def _with_all_extras(distribution: Path) -> str:
    project = nox.project.load_toml(distribution / "pyproject.toml")["project"]
    extras = ",".join(sorted(project.get("optional-dependencies", {})))
    where = f"./{distribution.relative_to(ROOT)}"
    return f"{where}[{extras}]" if extras else where


def _existing(paths: list[str]) -> list[str]:
    return [path for path in paths if (ROOT / path).exists()]


# Branch coverage: the tests sessions (newest Python) and the doctests each leave data files
# named after the session in COVERAGE; the coverage session combines the latest of each.
MEASURED = [*(f"tests(backend={backend!r})" for backend in BACKENDS), "doctests"]
COVERAGE = ROOT / ".nox" / ".coverage-data"  # beside the sessions' environments


def _coverage_prefix(session_name: str) -> str:
    return ".coverage." + re.sub(r"[^A-Za-z0-9]+", "-", session_name).strip("-")


def _coverage_data(session_name: str) -> list[Path]:
    return sorted(COVERAGE.glob(_coverage_prefix(session_name) + ".*"))


def _pytest(session: nox.Session, *args: str, env: dict[str, str], measure: bool) -> None:
    """Run pytest, under coverage when ``measure`` (its data replaces the session's last)."""
    if not measure:
        session.run("pytest", *args, env=env)
        return
    COVERAGE.mkdir(parents=True, exist_ok=True)
    data = str(COVERAGE / _coverage_prefix(session.name))
    session.run("coverage", "run", "-m", "pytest", *args, env={**env, "COVERAGE_FILE": data})


@nox.session(python=NEWEST)
@nox.parametrize("backend", list(BACKENDS))
def tests(session: nox.Session, backend: str) -> None:
    """Run one backend's tests against the built distributions on the newest Python."""
    _run_tests(session, backend, measure=True)


if OLDER:

    @nox.session(python=OLDER)
    @nox.parametrize("backend", list(BACKENDS))
    def compat(session: nox.Session, backend: str) -> None:
        """Run one backend's tests on an older installed Python (by default the oldest)."""
        _run_tests(session, backend, measure=False)


def _run_tests(session: nox.Session, backend: str, *, measure: bool) -> None:
    install, paths, url_variable = BACKENDS[backend]
    # Before a skip too: a session that did not run leaves no data.
    for stale in _coverage_data(session.name) if measure else []:
        stale.unlink()
    env = {"PAUSETOKEN_TEST_BACKEND": backend}
    if backend in {"sqlite", "postgresql", "mysql"}:
        # A database session tests its own server only (SQLite needs none).
        env.update(dict.fromkeys(SERVER_VARIABLES.values(), ""))
    if url_variable is not None:
        url = os.environ.get(url_variable)
        if not url:
            reason = f"{url_variable} is not set: no {backend} server to test against"
            if ON_CI:
                session.error(reason)
            session.skip(reason)
        env[url_variable] = url
    session.install(*nox.project.dependency_groups(PYPROJECT, "test"))
    session.install(*install)
    if backend in SERVER_GROUPS:
        session.install(*nox.project.dependency_groups(PYPROJECT, SERVER_GROUPS[backend]))
    if ON_CI:
        env["HYPOTHESIS_PROFILE"] = "ci"
    if backend != "memory":
        marker = MARKERS.get(backend)
        if not measure:  # compat, on the other Pythons: slow tests run on the newest only
            marker = f"({marker}) and not slow" if marker else "not slow"
        select = ("-m", marker) if marker else EVERY_TEST
        _pytest(session, *select, *_existing(paths), *session.posargs, env=env, measure=measure)
        return
    # An explicit -m replaces the pyproject's "not slow": slow tests run here too.
    first_marker = "not rival_plugin" if measure else "not rival_plugin and not slow"
    first = ["-m", first_marker, *_existing(paths), *session.posargs]
    _pytest(session, *first, env=env, measure=measure)
    # A second distribution claiming the same store name must make selection fail loudly.
    session.install("./tests/plugins/pausetoken-inhouse-rival")
    rival = ["-m", "rival_plugin", "tests/plugins", *session.posargs]
    _pytest(session, *rival, env=env, measure=measure)


def _packages(distribution: Path) -> list[str]:
    return sorted(p.name for p in (distribution / "src").iterdir() if (p / "__init__.py").is_file())


@nox.session(python=NEWEST)
def doctests(session: nox.Session) -> None:
    """Run the docstring examples of every distribution, as built and installed."""
    session.install(*nox.project.dependency_groups(PYPROJECT, "test"))
    distributions = _backend_distributions()
    session.install("./sdk[testing,cli,http]", *(_with_all_extras(d) for d in distributions))
    packages = [name for d in [ROOT / "sdk", *distributions] for name in _packages(d)]
    for stale in _coverage_data(session.name):
        stale.unlink()
    args = [*EVERY_TEST, "--doctest-modules", "--pyargs", *packages, *session.posargs]
    _pytest(session, *args, env={}, measure=True)


@nox.session(python=NEWEST)
def coverage(session: nox.Session) -> None:
    """Combine the measured sessions' branch coverage; fail under the pyproject's threshold.

    The threshold holds for the data of every measured session. Locally, a database
    session skipped for want of a server leaves none: then the figure is reported but not
    enforced (under CI every session must have run).
    """
    session.install(*nox.project.dependency_groups(PYPROJECT, "coverage"))
    missing = [name for name in MEASURED if not _coverage_data(name)]
    if len(missing) == len(MEASURED):
        session.error(f"no coverage data: run the sessions first ({', '.join(MEASURED)})")
    if missing and ON_CI:
        session.error(f"no coverage data from {', '.join(missing)}")
    # Not a sibling of the sessions' files: reporting would combine (and delete) them.
    env = {"COVERAGE_FILE": str(COVERAGE / "combined")}
    data = [str(path) for name in MEASURED for path in _coverage_data(name)]
    session.run("coverage", "combine", "--keep", "--quiet", *data, env=env)
    if missing:
        session.warn(f"not enforcing the threshold: no data from {', '.join(missing)}")
        session.run("coverage", "report", "--fail-under=0", env=env)
        return
    session.run("coverage", "report", env=env)


def _integration(session: nox.Session, *paths: str, env: dict[str, str]) -> None:
    """Install every store and the servers' tools, then run ``paths`` (the shared servers'
    URLs must be set under CI; elsewhere the engines without one skip)."""
    session.install(*nox.project.dependency_groups(PYPROJECT, "test"))
    session.install(*nox.project.dependency_groups(PYPROJECT, "mongo-server"))
    session.install("./sdk[testing,cli]", *(_with_all_extras(d) for d in _backend_distributions()))
    if ON_CI:
        env["HYPOTHESIS_PROFILE"] = "ci"
    session.run("pytest", *EVERY_TEST, "-p", "no:cacheprovider", *paths, *session.posargs, env=env)


@nox.session(python=NEWEST)
def race(session: nox.Session) -> None:
    """Exactly once at scale: 8 processes redeem the same tokens on every engine.

    300 tokens per engine by default; ``PAUSETOKEN_TEST_RACE_TOKENS=5000`` is the full run
    (``PAUSETOKEN_TEST_RACE_PROCESSES`` changes the 8). Prints bodies run, double runs and
    lost tokens per engine; any double run or lost token fails.
    """
    env = {"PAUSETOKEN_TEST_RACE_TOKENS": os.environ.get("PAUSETOKEN_TEST_RACE_TOKENS", "300")}
    _integration(session, "tests/integration/test_race.py", env=env)


@nox.session(python=NEWEST)
def faults(session: nox.Session) -> None:
    """Fault tests: private servers restarted, killed, cut off, filled up, dropped under load."""
    _integration(session, "tests/integration", "--ignore=tests/integration/test_race.py", env={})


@nox.session(python=NEWEST)
def lint(session: nox.Session) -> None:
    """Ruff's linter and formatter check over the whole tree."""
    session.install(*nox.project.dependency_groups(PYPROJECT, "lint"))
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(python=NEWEST)
def typing(session: nox.Session) -> None:
    """mypy --strict over every distribution, the benchmarks and user code; pyright on user code."""
    session.install(*nox.project.dependency_groups(PYPROJECT, "typing"))
    session.install(*nox.project.dependency_groups(PYPROJECT, "bench"))
    session.install("-e", "./sdk[testing,cli,http]")
    distributions = _backend_distributions()
    for distribution in distributions:
        session.install("-e", _with_all_extras(distribution))
    sources = ["sdk/src", *(str((d / "src").relative_to(ROOT)) for d in distributions)]
    session.run("mypy", "--strict", *sources)
    # Benchmarks call the store protocol directly: a changed signature must fail here.
    session.run("mypy", "--strict", "benchmarks")
    # tests/typing is user code: assert_type on what users rely on, and mistakes that must be
    # reported. pyright's strict mode is switched on in each file's first line.
    session.run("mypy", "--strict", "tests/typing")
    python = Path(session.bin) / "python"
    session.run("pyright", "--pythonpath", str(python), "tests/typing")


@nox.session(python=NEWEST)
def docs(session: nox.Session) -> None:
    """Build the documentation site in strict mode."""
    session.install(*nox.project.dependency_groups(PYPROJECT, "docs"))
    session.install("-e", "./sdk[testing,cli,http]")
    for distribution in _backend_distributions():
        session.install("-e", _with_all_extras(distribution))
    site = Path(session.create_tmp()) / "site"
    session.run("mkdocs", "build", "--strict", "--site-dir", str(site))
    # What a reader sees in the built HTML: no raw Sphinx roles, examples as code.
    session.install(*nox.project.dependency_groups(PYPROJECT, "test"))
    session.run("pytest", *EVERY_TEST, "tests/docs_site", env={"PAUSETOKEN_SITE_DIR": str(site)})


def _bench(session: nox.Session, *args: str) -> None:
    session.install(*nox.project.dependency_groups(PYPROJECT, "bench"))
    session.install(*nox.project.dependency_groups(PYPROJECT, "mongo-server"))
    session.install("-e", "./sdk[testing,cli]")
    for distribution in _backend_distributions():
        session.install("-e", _with_all_extras(distribution))
    session.run("python", "benchmarks/report.py", *args, *session.posargs)


@nox.session(python=NEWEST)
def bench(session: nox.Session) -> None:
    """Run every benchmark in full and write docs/benchmarks.md (minutes; not run by CI)."""
    _bench(session)


@nox.session(python=NEWEST, name="bench-quick")
def bench_quick(session: nox.Session) -> None:
    """Run every benchmark's quick variant, so that none can rot; the page goes to a temp file."""
    _bench(session, "--quick", "--output", str(Path(session.create_tmp()) / "benchmarks.md"))
    # The comparison of two revisions, on the smallest run it can make.
    session.run(
        "python", "benchmarks/compare.py", "HEAD", "redeem.py", "--rounds", "1", "--", "--quick"
    )
    # A prototype the page does not show (the cost section of docs/langgraph.md quotes it).
    session.run("python", "benchmarks/langgraph_resume.py", "--quick", "--fold-commit")


@nox.session(python=NEWEST)
def demo(session: nox.Session) -> None:
    """Run `pausetoken demo` (LangGraph on SQLite) against the built distributions."""
    session.install(*BACKENDS["langgraph"][0])
    session.run("pausetoken", "demo", *session.posargs)


@nox.session(python=NEWEST)
def fuzz(session: nox.Session) -> None:
    """Fuzz the verifier with atheris for a bounded time, from the test suite's tokens.

    ``nox -s fuzz -- -max_total_time=600`` fuzzes longer (arguments go to libFuzzer).
    """
    session.install(*nox.project.dependency_groups(PYPROJECT, "test"))
    session.install("./sdk[testing,cli]", "atheris>=2.3")
    corpus = Path(session.create_tmp()) / "corpus"
    for stale in corpus.glob("*"):
        stale.unlink()
    seeds = ["tests/sdk/test_verify.py", "tests/sdk/test_service.py", "tests/sdk/test_fuzz.py"]
    session.run("pytest", "-q", *seeds, env={"PAUSETOKEN_FUZZ_CORPUS": str(corpus)})
    limits = ["-max_total_time=60", "-max_len=8192", "-rss_limit_mb=2048", "-timeout=10"]
    session.run("python", "tests/fuzz/verify_target.py", str(corpus), *limits, *session.posargs)
