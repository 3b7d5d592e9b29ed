"""``pausetoken backends``: the installed stores, signers and checkpoint readers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from pausetoken._cli.command import EXIT_OK, FunctionCommand
from pausetoken._cli.output import cell, console, json_argument, print_json, require_rich
from pausetoken.exceptions import ConfigurationError

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping

__all__ = ["BACKENDS"]


def _run(args: argparse.Namespace) -> int:
    from pausetoken._registry import GROUPS, available_backends  # noqa: PLC0415

    if not args.json:
        require_rich("backends", json_ok=True)
    listing: dict[str, list[dict[str, Any]]] = {kind: [] for kind in GROUPS}
    for kind in GROUPS:
        for backend in available_backends(kind):
            try:
                backend.load()
            except ConfigurationError as exc:
                error: str | None = exc.code
            else:
                error = None
            listing[kind].append(
                {
                    "name": backend.name,
                    "target": backend.target,
                    "distribution": backend.distribution,
                    "version": backend.version,
                    "imports": error is None,
                    "error": error,
                }
            )
    if args.json:
        print_json(listing)
    else:
        _render(listing)
    return EXIT_OK


def _render(listing: Mapping[str, list[dict[str, Any]]]) -> None:
    from rich.table import Table  # noqa: PLC0415 - rich is an optional extra
    from rich.text import Text  # noqa: PLC0415

    # Three narrow columns, kinds as sections: readable in 80 columns. Targets are in --json.
    table = Table(title="pausetoken backends")
    for column in ("name", "provided by", "imports"):
        table.add_column(column, overflow="fold")
    kinds = list(listing)
    for kind in kinds:
        table.add_row(Text(kind, style="bold"), "", "")
        for backend in listing[kind]:
            provider = " ".join(
                str(part) for part in (backend["distribution"], backend["version"]) if part
            )
            imports = (
                Text("yes", style="green")
                if backend["imports"]
                else Text(f"no: {backend['error']}", style="red")
            )
            table.add_row(
                Text("  " + cell(backend["name"])), Text(cell(provider or "code")), imports
            )
        if kind != kinds[-1]:
            table.add_section()
    console().print(table)


BACKENDS: Final = FunctionCommand(
    "list installed stores, signers and checkpoint readers", json_argument, _run
)
