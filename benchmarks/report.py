"""Run every benchmark and write the one page that reports them: docs/benchmarks.md.

    python benchmarks/report.py                    # full runs, writes docs/benchmarks.md
    python benchmarks/report.py --quick -o FILE    # short runs (CI: the scripts cannot rot)

``nox -s bench`` runs the first, ``nox -s bench-quick`` the second; ``pausetoken bench`` runs
the list of `commands()` too, and writes the page only when asked (``--write-page``). Each
script runs in its own interpreter and appends the ratios it judges to a JSON-lines file
(`_results.record`); the page is rendered from those results, the machine and the versions,
and carries them in a comment at its end, so `render()` of that data gives the page back
byte for byte (the docs tests check it: the page is generated, never edited by hand). A
script that fails is reported as failed and makes the run exit 1.

Server URLs come from the environment, as for the tests: ``PAUSETOKEN_TEST_POSTGRESQL_URL``
(also runs the LangGraph benchmark on AsyncPostgresSaver), ``PAUSETOKEN_TEST_MYSQL_URL``,
``PAUSETOKEN_TEST_REDIS_URL``, ``PAUSETOKEN_TEST_MONGODB_URL`` (else nx-27017).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from _results import RESULTS_VARIABLE, recorded
from pausetoken.plugins import redact_url

HERE = Path(__file__).parent
ROOT = HERE.parent
PAGE = ROOT / "docs" / "benchmarks.md"
DATA_MARK = "<!-- benchmark-data "
DISTRIBUTIONS = (
    "pausetoken",
    "pausetoken-sqlalchemy",
    "pausetoken-langgraph",
    "pausetoken-redis",
    "pausetoken-mongo",
    "joserfc",
    "PyJWT",
    "cattrs",
    "SQLAlchemy",
    "aiosqlite",
    "asyncpg",
    "asyncmy",
    "redis",
    "pymongo",
    "nx-27017",
    "langgraph",
    "langgraph-checkpoint-sqlite",
    "langgraph-checkpoint-postgres",
)
SERVERS = {
    "PostgreSQL": ["postgres", "--version"],
    "MariaDB": ["mariadbd", "--version"],
    "Redis": ["redis-server", "--version"],
}


def commands() -> list[list[str]]:
    """The benchmark command lines, as a reader would type them (without ``--quick``)."""
    runs = [
        ["benchmarks/imports.py"],
        ["benchmarks/verify.py"],
        ["benchmarks/redeem.py"],
        ["benchmarks/langgraph_resume.py"],
    ]
    postgresql = os.environ.get("PAUSETOKEN_TEST_POSTGRESQL_URL")
    if postgresql:
        plain = re.sub(r"^postgresql\+\w+://", "postgresql://", postgresql)
        runs.append(
            ["benchmarks/langgraph_resume.py", "--checkpointer", plain, "--store", postgresql]
        )
    runs.append(["benchmarks/stores.py"])
    runs.append(["benchmarks/consume.py"])
    return runs


def machine() -> dict[str, str]:
    """What the figures were measured on."""
    found = {
        "platform": platform.platform(),
        "cpus": str(os.cpu_count()),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        # Other work on the machine slows both sides of each ratio, but not always alike.
        "load average (1, 5, 15 min) at the start": ", ".join(
            f"{load:.1f}" for load in os.getloadavg()
        ),
    }
    cpuinfo, meminfo = Path("/proc/cpuinfo"), Path("/proc/meminfo")
    if cpuinfo.exists():
        model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(), flags=re.MULTILINE)
        if model:
            found["cpu"] = model.group(1).strip()
    if meminfo.exists():
        total = re.search(r"^MemTotal:\s*(\d+) kB", meminfo.read_text(), flags=re.MULTILINE)
        if total:
            found["memory"] = f"{int(total.group(1)) / 1024**2:.0f} GiB"
    return found


def versions() -> dict[str, str]:
    """Versions of the libraries and servers measured."""
    found: dict[str, str] = {}
    for name in DISTRIBUTIONS:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    for name, command in SERVERS.items():
        if shutil.which(command[0]) is None:
            continue
        out = subprocess.run(command, capture_output=True, text=True, check=False).stdout
        number = re.search(r"\d+\.\d+(\.\d+)?", out)
        if number:
            found[name] = number.group(0)
    return found


def shown(argv: list[str]) -> str:
    """A benchmark's command line as the page shows it, passwords in URLs hidden."""
    return "python " + " ".join(redact_url(arg) if "://" in arg else arg for arg in argv)


def page_data(runs: list[dict[str, Any]], *, quick: bool) -> dict[str, Any]:
    """The data `render()` takes, for ``runs`` (``command``, ``seconds``, ``returncode``,
    ``results``) measured now on this machine.
    """
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "quick": quick,
        "machine": machine(),
        "versions": versions(),
        "runs": runs,
    }


def run_all(*, quick: bool) -> dict[str, Any]:
    """Run every benchmark; the data the page is rendered from."""
    runs: list[dict[str, Any]] = []
    for command in commands():
        argv = [*command, "--quick"] if quick else command
        print(f"\n$ {shown(argv)}", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            results = Path(tmp) / "results.jsonl"
            env = {**os.environ, RESULTS_VARIABLE: str(results)}
            started = time.monotonic()
            done = subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, check=False)
            took = time.monotonic() - started
            found = recorded(results)
        runs.append(
            {
                "command": shown(argv),
                "seconds": round(took),
                "returncode": done.returncode,
                "results": found,
            }
        )
    return page_data(runs, quick=quick)


def _met(result: dict[str, Any]) -> str:
    target = result["target"]
    if target is None:
        return "no target"
    ok = result["ratio"] >= target if result["better"] == "higher" else result["ratio"] <= target
    return "met" if ok else "**missed**"


def _target(result: dict[str, Any]) -> str:
    if result["target"] is None:
        return "none"
    return f"{'≥' if result['better'] == 'higher' else '≤'} {result['target']:g}"


def render(data: dict[str, Any]) -> str:
    """The page for ``data`` (what `run_all()` returns)."""
    kind = "quick runs (fewer operations: figures are rough)" if data["quick"] else "full runs"
    lines = [
        "# Benchmarks",
        "",
        (
            f"Generated by `nox -s bench` (`python benchmarks/report.py`) on {data['date']}, "
            f"{kind}. Do not edit this page: run the command again."
        ),
        "",
        (
            "Each ratio compares pausetoken with a baseline measured in the same process and "
            "run (medians), so a busy machine slows both alike; absolute figures vary more "
            "than ratios. What each script measures is in its docstring, in `benchmarks/`."
        ),
        "",
        (
            "One run cannot show a change of a few percent on a noisy machine: "
            "`python benchmarks/compare.py BASE SCRIPT` runs one script on the libraries of "
            "revision `BASE` and on the working tree's, in alternating rounds, and reports "
            "each side's medians."
        ),
        "",
        "## Machine",
        "",
        "| | |",
        "|---|---|",
        *(f"| {name} | {value} |" for name, value in data["machine"].items()),
        "",
        "## Versions",
        "",
        "| | |",
        "|---|---|",
        *(f"| {name} | {value} |" for name, value in data["versions"].items()),
        "",
        "## Results",
    ]
    for run in data["runs"]:
        status = "" if run["returncode"] == 0 else f", **failed** (exit {run['returncode']})"
        lines += ["", "```", run["command"], "```", "", f"{run['seconds']} s{status}.", ""]
        if not run["results"]:
            lines.append("No ratios recorded.")
            continue
        lines += ["| Measure | Ratio | Target | | Medians |", "|---|---:|---|---|---|"]
        lines += [
            f"| {r['measure']} | {r['ratio']:.3f} | {_target(r)} | {_met(r)} | {r['detail']} |"
            for r in run["results"]
        ]
    payload = json.dumps(data, ensure_ascii=False).replace("--", "\\u002d-")
    lines += ["", f"{DATA_MARK}{payload} -->", ""]
    return "\n".join(lines)


def data_of(page: str) -> dict[str, Any]:
    """The data a generated page carries."""
    start = page.rindex(DATA_MARK) + len(DATA_MARK)
    found: dict[str, Any] = json.loads(page[start : page.rindex(" -->")])
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="each script's --quick variant")
    parser.add_argument("-o", "--output", type=Path, default=PAGE, help="the page to write")
    args = parser.parse_args()
    data = run_all(quick=args.quick)
    args.output.write_text(render(data), encoding="utf-8")
    print(f"\nwrote {args.output}")
    failed = [run["command"] for run in data["runs"] if run["returncode"] != 0]
    for command in failed:
        print(f"FAILED: {command}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
