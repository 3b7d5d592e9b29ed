"""Compare the libraries of another revision with the working tree's, on one benchmark.

    python benchmarks/compare.py cb5edd9 redeem.py                  # 4 rounds of 2 runs
    python benchmarks/compare.py main~3 verify.py --rounds 6 -- --quick

One run of a benchmark on a noisy machine cannot show a change below about 10%. This runs
the same script against the libraries of ``base`` (pausetoken and every backend, from
``git archive``) and against the working tree's, in alternating order (base first in one
round, the working tree first in the next), each run in its own interpreter; with
``--together`` both runs of a round run at the same time instead. For each ratio
the script records (`_results.record`) it prints the median of each side and, round by
round, whether the working tree did better. Only the libraries come from ``base``: the
script, its baselines and every other dependency are the working tree's in both runs, so
the script must work with both versions of the libraries.

Compare a revision with itself first (``HEAD``, with no change in the working tree): the
spread that shows is the machine's noise, which a real change must clearly exceed. Server
URLs come from the environment, as for ``report.py``.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from _results import RESULTS_VARIABLE, recorded

HERE = Path(__file__).parent
ROOT = HERE.parent
# What the libraries are: the SDK and every backend distribution, as source trees.
LIBRARIES = ("sdk/src", "backends")


def source_dirs(tree: Path) -> list[Path]:
    """The import roots of the SDK and of every backend under ``tree``."""
    return [tree / "sdk" / "src", *sorted((tree / "backends").glob("*/src"))]


def extract(revision: str, into: Path) -> Path:
    """Write the libraries of ``revision`` under ``into``, as ``git archive`` gives them."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", revision, *LIBRARIES],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        sys.exit(f"git archive {revision}: {archive.stderr.decode(errors='replace').strip()}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def environment(tree: Path, results: Path) -> dict[str, str]:
    """The environment of a run that imports the libraries under ``tree`` first."""
    env = dict(os.environ)
    paths = [str(path) for path in source_dirs(tree)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env[RESULTS_VARIABLE] = str(results)
    return env


def check_imports(tree: Path) -> None:
    """Exit unless a run with ``tree``'s environment imports pausetoken from ``tree``."""
    env = environment(tree, Path(os.devnull))
    found = subprocess.run(
        [sys.executable, "-c", "import pausetoken; print(pausetoken.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if not Path(found).is_relative_to(tree):
        sys.exit(f"a run meant to use {tree} imported pausetoken from {found or 'nowhere'}")


def start(
    script: str, args: list[str], tree: Path, workdir: Path
) -> tuple[subprocess.Popen[str], Path]:
    """Start one run of ``script`` on the libraries under ``tree``; where it records."""
    results = Path(tempfile.mkstemp(suffix=".jsonl", dir=workdir)[1])
    process = subprocess.Popen(
        [sys.executable, str(HERE / script), *args],
        cwd=ROOT,
        env=environment(tree, results),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return process, results


def finish(
    started: tuple[subprocess.Popen[str], Path], script: str, tree: Path
) -> dict[str, dict[str, Any]]:
    """Wait for a run: its records, by measure."""
    process, results = started
    output, _ = process.communicate()
    if process.returncode != 0:
        sys.stderr.write(output)
        sys.exit(f"{script} failed on the libraries under {tree} (exit {process.returncode})")
    return {record["measure"]: record for record in recorded(results)}


def report(rounds: list[dict[str, dict[str, dict[str, Any]]]]) -> None:
    """Print, per measure, each side's median and how often the working tree did better."""
    measures = list(dict.fromkeys(m for one in rounds for side in one.values() for m in side))
    print(f"{'base':>8} {'tree':>8} {'change':>8} {'tree better':>12}   measure")
    for measure in measures:
        pairs = [
            (one["base"][measure], one["tree"][measure])
            for one in rounds
            if measure in one["base"] and measure in one["tree"]
        ]
        if not pairs:
            continue
        higher = pairs[0][0]["better"] == "higher"
        base = statistics.median(b["ratio"] for b, _ in pairs)
        tree = statistics.median(t["ratio"] for _, t in pairs)
        better = sum(
            (t["ratio"] > b["ratio"]) == higher for b, t in pairs if t["ratio"] != b["ratio"]
        )
        change = (tree / base - 1) * 100 if base else float("nan")
        print(
            f"{base:>8.3f} {tree:>8.3f} {change:>+7.1f}% {better:>7}/{len(pairs):<4}   {measure}"
            f" ({'higher' if higher else 'lower'} is better)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", help="the revision to compare with (anything git accepts)")
    parser.add_argument("script", help="a benchmark in benchmarks/, e.g. redeem.py")
    parser.add_argument("--rounds", type=int, default=4, help="rounds of two runs (default 4)")
    parser.add_argument(
        "--together",
        action="store_true",
        help="start both runs of a round at once, so that the machine's load hits both alike "
        "(for scripts bound by one CPU, on a machine with two or more)",
    )
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    options = parser.parse_args(argv[:split])
    options.args = argv[split + 1 :]  # the script's own arguments, after "--"
    if not (HERE / options.script).is_file():
        parser.error(f"no benchmark {options.script!r} in {HERE}")
    if options.rounds < 1:
        parser.error("--rounds must be at least 1")
    with tempfile.TemporaryDirectory(prefix="pausetoken-compare-") as scratch:
        workdir = Path(scratch)
        sides = {"base": extract(options.base, workdir / "base"), "tree": ROOT}
        for tree in sides.values():
            check_imports(tree)
        rounds = []
        for number in range(options.rounds):
            order = ["base", "tree"] if number % 2 == 0 else ["tree", "base"]
            if options.together:
                started = {
                    side: start(options.script, options.args, sides[side], workdir)
                    for side in order
                }
                one = {side: finish(started[side], options.script, sides[side]) for side in order}
            else:  # each run ends before the next starts
                one = {
                    side: finish(
                        start(options.script, options.args, sides[side], workdir),
                        options.script,
                        sides[side],
                    )
                    for side in order
                }
            rounds.append(one)
            print(f"round {number + 1} of {options.rounds} done", file=sys.stderr)
    print(
        f"{options.script} {' '.join(options.args)}: base {options.base} against the working tree"
    )
    report(rounds)


if __name__ == "__main__":
    main()
