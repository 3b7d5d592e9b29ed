"""``pausetoken bench``: run the benchmarks of a checkout and tabulate their ratios.

The benchmarks are scripts in the repository (``benchmarks/``), not part of the installed
package. ``benchmarks/report.py`` lists them (its ``commands()``; the other scripts there,
such as ``compare.py``, are helpers) and renders docs/benchmarks.md from the ratios each
records. This command runs that list, or the benchmarks named, one after another behind a
progress bar, and prints the recorded ratios as one table. It writes a file only when asked:
``--output FILE`` writes the page to FILE, ``--write-page`` to the checkout's page.

A benchmark that stops because a module it imports is not installed (the LangGraph
integration, a database driver, PyJWT for a baseline) is skipped with a one-line note, and
so is each engine a benchmark skipped for the same reason, so that the command runs from the
``cli`` extra alone.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs

from pausetoken._cli.command import EXIT_OK, EXIT_REFUSED, FunctionCommand
from pausetoken._cli.output import console, require_rich, say
from pausetoken.exceptions import CommandLineError

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterator, Mapping, Sequence

__all__ = ["BENCH"]

_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '(?P<name>[\w.]+)'")
#: The line a benchmark prints for a part it skipped: ``== sqlite: skipped (why)``.
_SKIPPED = re.compile(r"^== (?P<what>[^:]+): skipped \((?P<why>.*)\)\s*$")
#: Longest line of a running benchmark shown beside the progress bar.
_PROGRESS_LINE: Final = 60


@attrs.frozen
class _Benchmark:
    """One command line of ``report.commands()``, ``--quick`` added when asked."""

    name: str
    argv: tuple[str, ...]
    shown: str


@attrs.frozen
class _BenchRun:
    benchmark: _Benchmark
    status: int
    seconds: float
    lines: tuple[str, ...]
    results: tuple[Mapping[str, Any], ...]

    @property
    def missing(self) -> str | None:
        """The module that is not installed and stopped the benchmark, if that is why."""
        if self.status == 0:
            return None
        found = [m["name"] for line in self.lines if (m := _MISSING_MODULE.search(line))]
        if not found or importlib.util.find_spec(found[-1].partition(".")[0]) is not None:
            return None  # a module of an installed distribution is missing: a failure
        return found[-1]


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="benchmarks to run, by script name without .py (default: all)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="pass --quick to each benchmark (fewer repeats)"
    )
    parser.add_argument(
        "--dir",
        metavar="DIR",
        help="the benchmarks directory (default: benchmarks/ of this pausetoken checkout)",
    )
    page = parser.add_mutually_exclusive_group()
    page.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="also write the results as the benchmarks page (docs/benchmarks.md's form) to FILE",
    )
    page.add_argument(
        "--write-page",
        action="store_true",
        help="also write the results to docs/benchmarks.md of the checkout (a tracked file)",
    )


def _run(args: argparse.Namespace) -> int:
    require_rich("bench", "rich.progress", "rich.markup")
    directory = _bench_dir(args.dir)
    report = _report(directory)
    benchmarks = _benchmarks(report, directory, args.names, quick=args.quick)
    runs = _run_benchmarks(benchmarks, directory.parent, report)
    ran = [run for run in runs if run.missing is None]
    _render_ratios(ran)
    for run in runs:
        if run.missing is not None:
            say(
                f"pausetoken bench: skipped {run.benchmark.name}: it needs the module "
                f"{run.missing!r}, which is not installed"
            )
            continue
        for line in run.lines:
            if (skipped := _SKIPPED.match(line)) is not None:
                say(
                    f"pausetoken bench: {run.benchmark.name}: skipped {skipped['what']} "
                    f"({skipped['why']})"
                )
    failed = [run for run in ran if run.status != 0]
    for run in failed:
        say(f"pausetoken bench: {run.benchmark.name} failed (exit status {run.status})")
        missing = next(
            (m for line in run.lines if (m := _MISSING_MODULE.search(line)) is not None), None
        )
        if missing is not None:
            say(f"cause: it needs the module {missing['name']!r}, which cannot be imported")
        say(f"hint: `{run.benchmark.shown}` in {directory.parent} shows its whole output")
    if not any(run.results for run in ran) and not failed:
        say("pausetoken bench: the benchmarks recorded no ratio")
    page = Path(args.output) if args.output else report.PAGE if args.write_page else None
    if page is not None:
        _write_page(page, report, ran, quick=args.quick)
        left_out = [run.benchmark.name for run in runs if run.missing is not None]
        if left_out:
            say(f"pausetoken bench: the page leaves out the skipped {', '.join(left_out)}")
    return EXIT_REFUSED if failed else EXIT_OK


def _bench_dir(given: str | None) -> Path:
    if given is not None:
        directory = Path(given)
        if not directory.is_dir():
            msg = f"--dir {given} is not a directory"
            raise CommandLineError(msg, code=CommandLineError.CLI_BENCHMARKS_MISSING)
        return directory.resolve()
    for root in _checkouts():
        if (root / "benchmarks").is_dir():
            return root / "benchmarks"
    msg = (
        "the benchmarks are scripts in a checkout of the pausetoken repository "
        "(benchmarks/), not part of the installed package, and no checkout was found: "
        "neither this installation nor the working directory is one"
    )
    raise CommandLineError(msg, code=CommandLineError.CLI_BENCHMARKS_MISSING)


def _checkouts() -> Iterator[Path]:
    """Checkouts of the repository: the one this code runs from, then the working directory."""
    # An editable install runs from sdk/src/pausetoken/ of a checkout, two levels below it.
    package = Path(__file__).resolve().parents[1]
    for root in (*package.parents[2:3], Path.cwd()):
        if (root / "sdk" / "src" / "pausetoken").is_dir():
            yield root


def _report(directory: Path) -> Any:
    """Load ``report.py`` of ``directory``: its list of benchmarks and its page."""
    path = directory / "report.py"
    if not path.is_file():
        msg = f"{directory} has no report.py, the script that lists the benchmarks"
        raise CommandLineError(msg, code=CommandLineError.CLI_BENCHMARKS_MISSING)
    spec = importlib.util.spec_from_file_location("pausetoken_bench_report", path)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has one
        msg = f"cannot load {path}"
        raise CommandLineError(msg, code=CommandLineError.CLI_BENCHMARKS_MISSING)
    module = importlib.util.module_from_spec(spec)
    before = set(sys.modules)
    sys.path.insert(0, str(directory))  # report.py imports its siblings (_results.py)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(directory))
        # Its siblings leave with it: another directory's report.py imports its own.
        for name in set(sys.modules) - before:
            if Path(getattr(sys.modules[name], "__file__", None) or "/").parent == directory:
                del sys.modules[name]
    return module


def _benchmarks(
    report: Any, directory: Path, names: Sequence[str], *, quick: bool
) -> list[_Benchmark]:
    listed = [
        _Benchmark(
            name=Path(command[0]).stem,
            argv=(*command, *(["--quick"] if quick else [])),
            shown=report.shown([*command, *(["--quick"] if quick else [])]),
        )
        for command in report.commands()
    ]
    known = list(dict.fromkeys(b.name for b in listed))
    unknown = [name for name in names if name not in known]
    if unknown:
        msg = f"no benchmark named {', '.join(unknown)}; there are {', '.join(known)}"
        raise CommandLineError(msg, code=CommandLineError.CLI_USAGE)
    for benchmark in listed:
        if not (directory.parent / benchmark.argv[0]).is_file():
            msg = f"report.py lists {benchmark.argv[0]}, which is not in {directory.parent}"
            raise CommandLineError(msg, code=CommandLineError.CLI_BENCHMARKS_MISSING)
    return [b for b in listed if not names or b.name in names]


def _run_benchmarks(benchmarks: Sequence[_Benchmark], root: Path, report: Any) -> list[_BenchRun]:
    from rich.markup import escape  # noqa: PLC0415 - rich is an optional extra
    from rich.progress import (  # noqa: PLC0415
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    runs = []
    columns = (
        SpinnerColumn(),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
    )
    # The bar goes to standard error; the ratio table alone goes to standard output.
    with Progress(*columns, console=console(stderr=True)) as progress:
        task = progress.add_task("", total=len(benchmarks))
        for benchmark in benchmarks:

            def show(line: str, name: str = benchmark.name) -> None:
                text = line.strip()[:_PROGRESS_LINE]
                progress.update(task, description=escape(f"{name}: {text}"))

            show("starting")
            runs.append(_run_benchmark(benchmark, root, report, on_line=show))
            progress.advance(task)
        progress.update(task, description="done")
    return runs


def _run_benchmark(
    benchmark: _Benchmark, root: Path, report: Any, *, on_line: Callable[[str], None]
) -> _BenchRun:
    import subprocess  # noqa: PLC0415 - only bench starts processes

    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="pausetoken-bench-") as tmp:
        results = Path(tmp) / "results.jsonl"
        env = {**os.environ, "PYTHONUNBUFFERED": "1", report.RESULTS_VARIABLE: str(results)}
        started = time.monotonic()
        with subprocess.Popen(  # noqa: S603 - our own interpreter on the repository's scripts
            [sys.executable, *benchmark.argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
            errors="replace",
            env=env,
            cwd=root,
        ) as process:
            try:
                assert process.stdout is not None  # noqa: S101 - stdout=PIPE
                for line in process.stdout:
                    lines.append(line.rstrip("\n"))
                    if line.strip():
                        on_line(line)
            except BaseException:
                process.kill()
                raise
            status = process.wait()
        seconds = time.monotonic() - started
        recorded = tuple(report.recorded(results))
    return _BenchRun(benchmark, status, seconds, tuple(lines), recorded)


def _write_page(page: Path, report: Any, runs: Sequence[_BenchRun], *, quick: bool) -> None:
    data = report.page_data(
        [
            {
                "command": run.benchmark.shown,
                "seconds": round(run.seconds),
                "returncode": run.status,
                "results": list(run.results),
            }
            for run in runs
        ],
        quick=quick,
    )
    try:
        page.write_text(report.render(data), encoding="utf-8")
    except OSError as exc:
        msg = f"cannot write {page}: {exc.strerror or type(exc).__name__}"
        raise CommandLineError(msg, code=CommandLineError.CLI_OUTPUT_UNWRITABLE) from exc
    say(f"pausetoken bench: wrote {page}")


def _target(result: Mapping[str, Any]) -> tuple[str, bool | None]:
    """The target as shown (``>= 0.8``) and whether the ratio met it."""
    target = result.get("target")
    if target is None:
        return "-", None
    higher = result.get("better", "higher") == "higher"
    met = result["ratio"] >= target if higher else result["ratio"] <= target
    return f"{'>=' if higher else '<='} {target:g}", met


def _render_ratios(runs: Sequence[_BenchRun]) -> None:
    from rich.table import Table  # noqa: PLC0415 - rich is an optional extra
    from rich.text import Text  # noqa: PLC0415

    table = Table(title="pausetoken benchmarks: ratios")
    for column in ("benchmark", "ratio", "value", "target"):
        table.add_column(column, overflow="fold")
    table.columns[2].justify = "right"
    for run in runs:
        for result in run.results:
            target, met = _target(result)
            style = {True: "green", False: "bold red", None: ""}[met]
            if met is False:
                target += " (missed)"
            table.add_row(
                run.benchmark.name,
                Text(str(result["measure"])),
                Text(f"{result['ratio']:.2f}", style=style),
                Text(target, style=style),
            )
    console().print(table)


BENCH: Final = FunctionCommand(
    "run the benchmarks of a checkout and print their ratios", _arguments, _run
)
