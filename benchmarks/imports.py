"""Start-up cost: ``import pausetoken`` against ``import attrs``, and ``pausetoken --help``.

Each figure is the median wall time of fresh interpreters (the runs of the commands are
interleaved, so a busy moment of the machine hurts all of them alike). An import's cost is
its interpreter's time less that of ``python -c pass``; the ratio compares those costs.
``import pausetoken`` imports its names on first use, so it should cost little more than
attrs, which every part of pausetoken is built on.

    python benchmarks/imports.py            # 30 runs of each command
    python benchmarks/imports.py --quick    # 8
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _results import record

#: The largest import pausetoken / import attrs cost ratio accepted.
IMPORT_RATIO_TARGET = 1.5


def commands() -> dict[str, list[str]]:
    """The commands timed, by label."""
    python = sys.executable
    script = Path(python).with_name("pausetoken")
    cli = [str(script)] if script.exists() else [python, "-m", "pausetoken"]
    return {
        "python -c pass": [python, "-c", "pass"],
        "import attrs": [python, "-c", "import attrs"],
        "import pausetoken": [python, "-c", "import pausetoken"],
        "from pausetoken import PauseTokens": [python, "-c", "from pausetoken import PauseTokens"],
        "pausetoken --help": [*cli, "--help"],
    }


def time_runs(runs: int) -> dict[str, float]:
    """Median seconds of each command over ``runs`` interleaved fresh runs."""
    timed = commands()
    times: dict[str, list[float]] = {label: [] for label in timed}
    for argv in timed.values():  # one warm-up each: file caches, .pyc files
        subprocess.run(argv, check=True, capture_output=True)
    for _ in range(runs):
        for label, argv in timed.items():
            start = time.perf_counter()
            subprocess.run(argv, check=True, capture_output=True)
            times[label].append(time.perf_counter() - start)
    return {label: statistics.median(values) for label, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 runs instead of 30")
    args = parser.parse_args()
    runs = 8 if args.quick else 30
    medians = time_runs(runs)
    floor = medians["python -c pass"]
    print(f"fresh interpreters, {runs} runs of each, medians")
    for label, seconds in medians.items():
        print(f"  {label:<36} {seconds * 1000:8.1f} ms   (+{(seconds - floor) * 1000:6.1f} ms)")
    attrs_cost = medians["import attrs"] - floor
    ours = medians["import pausetoken"] - floor
    ratio = ours / attrs_cost if attrs_cost > 0 else float("inf")
    print(f"import cost ratio pausetoken / attrs: {ratio:.2f}   (target <= {IMPORT_RATIO_TARGET})")
    help_ratio = medians["pausetoken --help"] / floor
    print(f"time ratio pausetoken --help / python -c pass: {help_ratio:.2f}")
    record(
        "import cost, pausetoken / attrs",
        ratio,
        detail=f"+{ours * 1000:.1f} ms / +{attrs_cost * 1000:.1f} ms",
        target=IMPORT_RATIO_TARGET,
        better="lower",
    )
    record(
        "`pausetoken --help` / `python -c pass`",
        help_ratio,
        detail=f"{medians['pausetoken --help'] * 1000:.1f} ms / {floor * 1000:.1f} ms",
        better="lower",
    )


if __name__ == "__main__":
    main()
