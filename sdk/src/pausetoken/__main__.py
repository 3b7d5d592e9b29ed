"""``python -m pausetoken`` and the ``pausetoken`` console script."""

from __future__ import annotations

from pausetoken._cli import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
