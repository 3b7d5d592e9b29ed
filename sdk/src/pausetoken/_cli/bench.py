"""``pausetoken bench``: run the benchmark scripts of a checkout and tabulate their ratios.

The benchmarks are scripts in the repository (``benchmarks/``), not part of the installed
package. Each prints ratios against baselines measured in the same run; this command runs
them one after another behind a progress bar and gathers those ratios in one table.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final

import attrs

from pausetoken._cli.command import EXIT_OK, EXIT_REFUSED, FunctionCommand
from pausetoken._cli.output import console, require_rich, say
from pausetoken.exceptions import ConfigurationError

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterator, Mapping, Sequence

__all__ = ["BENCH"]

# Lines with a ratio, as the benchmarks print them: a label ending in "ratio ..." and a
# number, then maybe "(target >= 1.0)"; a "mint 5,993 ops/s joserfc 25,876 ops/s ratio 0.23"
# row names its rates before the word.
_RATIO = re.compile(r"^(?P<before>.*?)\bratio\b(?P<after>.*?):?\s+(?P<value>\d+\.\d+)(?P<rest>.*)$")
_TARGET = re.compile(r"target\s*(?P<op>[<>]=?)\s*(?P<bound>\d+(?:\.\d+)?)")
_RATE = re.compile(r"\s+[\d,.]+\s*(?:ops/s|µs|ms)\b")
_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '(?P<name>[\w.]+)'")
#: Longest line of a running benchmark shown beside the progress bar.
_PROGRESS_LINE: Final = 60


@attrs.frozen
class _Ratio:
    benchmark: str
    name: str
    value: float
    target: str | None
    met: bool | None


@attrs.frozen
class _BenchRun:
    name: str
    status: int
    lines: tuple[str, ...]


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


def _run(args: argparse.Namespace) -> int:
    require_rich("bench", "rich.progress", "rich.markup")
    scripts = _bench_scripts(_bench_dir(args.dir), args.names)
    runs = _run_benchmarks(scripts, quick=args.quick)
    ratios = [ratio for run in runs for ratio in _ratios(run)]
    _render_ratios(ratios)
    failed = [run for run in runs if run.status != 0]
    for run in failed:
        command = f"python {scripts[run.name]}{' --quick' if args.quick else ''}"
        say(f"pausetoken bench: {run.name} failed (exit status {run.status})")
        missing = next(
            (m for line in run.lines if (m := _MISSING_MODULE.search(line)) is not None), None
        )
        if missing is not None:
            say(f"cause: it needs the module {missing['name']!r}, which is not installed")
        say(f"hint: `{command}` shows its whole output")
    if not ratios and not failed:
        say("pausetoken bench: the benchmarks printed no ratio")
    return EXIT_REFUSED if failed else EXIT_OK


def _bench_dir(given: str | None) -> Path:
    if given is not None:
        directory = Path(given)
        if not directory.is_dir():
            msg = f"--dir {given} is not a directory"
            raise ConfigurationError(msg, code="cli_benchmarks_missing")
        return directory
    for root in _checkouts():
        if (root / "benchmarks").is_dir():
            return root / "benchmarks"
    msg = (
        "the benchmarks are scripts in a checkout of the pausetoken repository "
        "(benchmarks/), not part of the installed package, and no checkout was found: "
        "neither this installation nor the working directory is one"
    )
    raise ConfigurationError(msg, code="cli_benchmarks_missing")


def _checkouts() -> Iterator[Path]:
    """Checkouts of the repository: the one this code runs from, then the working directory."""
    # An editable install runs from sdk/src/pausetoken/ of a checkout, two levels below it.
    package = Path(__file__).resolve().parents[1]
    for root in (*package.parents[2:3], Path.cwd()):
        if (root / "sdk" / "src" / "pausetoken").is_dir():
            yield root


def _bench_scripts(directory: Path, names: Sequence[str]) -> dict[str, Path]:
    found = {p.stem: p for p in sorted(directory.glob("*.py")) if not p.name.startswith("_")}
    if not found:
        msg = f"no benchmark scripts (*.py) in {directory}"
        raise ConfigurationError(msg, code="cli_benchmarks_missing")
    unknown = [name for name in names if name not in found]
    if unknown:
        msg = f"no benchmark named {', '.join(unknown)}; there are {', '.join(found)}"
        raise ConfigurationError(msg, code="cli_usage")
    return {name: found[name] for name in (names or found)}


def _run_benchmarks(scripts: Mapping[str, Path], *, quick: bool) -> list[_BenchRun]:
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
        task = progress.add_task("", total=len(scripts))
        for name, path in scripts.items():

            def show(line: str, name: str = name) -> None:
                text = line.strip()[:_PROGRESS_LINE]
                progress.update(task, description=escape(f"{name}: {text}"))

            show("starting")
            runs.append(_run_benchmark(name, path, quick=quick, on_line=show))
            progress.advance(task)
        progress.update(task, description="done")
    return runs


def _run_benchmark(
    name: str, path: Path, *, quick: bool, on_line: Callable[[str], None]
) -> _BenchRun:
    import subprocess  # noqa: PLC0415 - only bench starts processes

    command = [sys.executable, str(path), *(["--quick"] if quick else [])]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    lines: list[str] = []
    with subprocess.Popen(  # noqa: S603 - our own interpreter on the repository's scripts
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        errors="replace",
        env=env,
        cwd=path.parent.parent,
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
    return _BenchRun(name, status, tuple(lines))


def _ratios(run: _BenchRun) -> Iterator[_Ratio]:
    """The ratios a benchmark printed, in lines and in the ``ratio`` column of tables.

    A line is ``... ratio NAME: VALUE (target OP BOUND)``; a table has a header row of
    words with ``ratio`` among them, and rows of numbers.
    """
    section = ""
    columns: list[str] | None = None
    for line in run.lines:
        words = line.split()
        if line.startswith("== "):
            section = line[3:].split(":", 1)[0].strip() + ": "
            continue
        if "ratio" in words and not any(_number(word) is not None for word in words):
            columns = words
            continue
        if columns is not None and len(words) == len(columns) and _number(words[0]) is not None:
            at = columns.index("ratio")
            value = _number(words[at])
            if value is not None and at >= 2:  # noqa: PLR2004 - the two rates it divides
                label = f"{columns[at - 2]} / {columns[at - 1]} at {columns[0]} {words[0]}"
                yield _Ratio(run.name, section + label, value, None, None)
            continue
        columns = None
        match = _RATIO.match(line)
        if match is None:
            continue
        before = " vs ".join(p.strip() for p in _RATE.split(match["before"]) if p.strip())
        label = " ".join(f"{before} {match['after']}".split()) or "ratio"
        value = float(match["value"])
        target = _TARGET.search(match["rest"])
        bound = None if target is None else float(target["bound"])
        met = None
        if target is not None and bound is not None:
            met = value >= bound if target["op"].startswith(">") else value <= bound
        shown = None if target is None else f"{target['op']} {target['bound']}"
        yield _Ratio(run.name, section + label, value, shown, met)


def _number(word: str) -> float | None:
    try:
        return float(word.replace(",", ""))
    except ValueError:
        return None


def _render_ratios(ratios: list[_Ratio]) -> None:
    from rich.table import Table  # noqa: PLC0415 - rich is an optional extra
    from rich.text import Text  # noqa: PLC0415

    table = Table(title="pausetoken benchmarks: ratios")
    for column in ("benchmark", "ratio", "value", "target"):
        table.add_column(column, overflow="fold")
    table.columns[2].justify = "right"
    for ratio in ratios:
        style = {True: "green", False: "bold red", None: ""}[ratio.met]
        target = ratio.target or "-"
        if ratio.met is False:
            target += " (missed)"
        table.add_row(
            ratio.benchmark,
            Text(ratio.name),
            Text(f"{ratio.value:.2f}", style=style),
            Text(target, style=style),
        )
    console().print(table)


BENCH: Final = FunctionCommand(
    "run the benchmarks of a checkout and print their ratios", _arguments, _run
)
