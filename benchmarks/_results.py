"""Machine-readable results: what `report.py` turns into docs/benchmarks.md.

Each benchmark prints its figures for a reader and, through `record()`, appends each ratio it
judges to the JSON-lines file named by ``PAUSETOKEN_BENCH_RESULTS`` (nothing without it);
`recorded()` reads them back.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Literal

#: The environment variable naming the JSON-lines file results are appended to.
RESULTS_VARIABLE = "PAUSETOKEN_BENCH_RESULTS"


def record(
    measure: str,
    ratio: float,
    *,
    detail: str,
    target: float | None = None,
    better: Literal["higher", "lower"] = "higher",
) -> None:
    """Append one judged figure: ``ratio`` (ours / baseline) with what it compares.

    Args:
        measure: What is compared, e.g. ``"claims/s at concurrency 16, postgresql"``.
        ratio: The ratio the benchmark prints.
        detail: The medians behind it, as printed (``"store 1,203/s, raw 1,400/s"``).
        target: The ratio the project aims for, if any.
        better: Whether a higher or a lower ratio is better.
    """
    path = os.environ.get(RESULTS_VARIABLE)
    if not path:
        return
    line = {
        "script": Path(sys.argv[0]).name,
        "measure": measure,
        "ratio": round(ratio, 3),
        "detail": detail,
        "target": target,
        "better": better,
    }
    with Path(path).open("a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def recorded(path: Path) -> list[dict[str, Any]]:
    """What `record()` appended to ``path``, in order (nothing if it wrote no file)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
