"""`python manage.py conflict_matrix`: the reference page's conflict matrix for one configuration."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.core.conflicts.matrix import (
    GENERAL_NOTES,
    OPS,
    conflict_matrix,
    matrix_as_json,
    normalize_isolation_level,
    verdict_for,
)
from audit.core.vocab import Verdict

ON_OFF = ("on", "off")
_VERDICT_LABELS = {
    Verdict.CANNOT_CONFLICT: "cannot",
    Verdict.CAN_CONFLICT: "CAN",
    Verdict.CAN_CONFLICT_SAME_ROW: "same row",
}


class OneLineErrorsMixin:
    """Bad arguments exit 2 with a single line on stderr, not argparse's usage block."""

    def create_parser(self, prog_name: str, subcommand: str, **kwargs) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        from_command_line = parser.called_from_command_line

        def error(message: str) -> None:
            if not from_command_line:
                raise CommandError(f"Error: {message}", returncode=2)
            sys.stderr.write(f"{parser.prog}: error: {message}\n")
            sys.exit(2)

        parser.error = error  # type: ignore[method-assign]
        return parser


def _on_off(name: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered not in ON_OFF:
        raise ValueError(f"--{name} expects on or off, got {value[:40]!r}")
    return lowered == "on"


class Command(OneLineErrorsMixin, BaseCommand):
    help = "Print which pairs of write operations can conflict, as the reference page's tables say."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--isolation-level", required=True, metavar="LEVEL", type=str)
        parser.add_argument("--row-level-concurrency", required=True, metavar="on|off", type=str)
        parser.add_argument("--deletion-vectors", required=True, metavar="on|off", type=str)
        parser.add_argument("--zorder", required=True, metavar="on|off", type=str)
        parser.add_argument("--json", action="store_true", help="print the JSON contract")

    def handle(self, *args, **options) -> None:
        try:
            level = normalize_isolation_level(options["isolation_level"])
            rlc = _on_off("row-level-concurrency", options["row_level_concurrency"])
            dvs = _on_off("deletion-vectors", options["deletion_vectors"])
            zorder = _on_off("zorder", options["zorder"])
        except ValueError as err:
            raise CommandError(str(err), returncode=2) from None
        cells = conflict_matrix(level, rlc, dvs, zorder)
        if options["json"]:
            self.stdout.write(matrix_as_json(cells))
            return
        self.stdout.write(render_grid(cells, level, rlc, dvs, zorder))


def render_grid(cells, level: str, rlc: bool, dvs: bool, zorder: bool) -> str:
    flags = ", ".join(
        f"{name} {'on' if value else 'off'}"
        for name, value in (
            ("row-level concurrency", rlc),
            ("deletion vectors", dvs),
            ("ZORDER", zorder),
        )
    )
    width = max(len(op) for op in OPS) + 2
    lines = [f"Conflict matrix: {level}, {flags}", ""]
    lines.append((" " * width + "".join(op.ljust(width) for op in OPS)).rstrip())
    for row, op_a in enumerate(OPS):
        labels = [
            _VERDICT_LABELS[verdict_for(cells, op_a, op_b)] if col <= row else ""
            for col, op_b in enumerate(OPS)
        ]
        lines.append((op_a.ljust(width) + "".join(lbl.ljust(width) for lbl in labels)).rstrip())
    lines.append("")
    for cell in cells:
        lines.append(f"{cell.a} x {cell.b}: {cell.verdict} - {cell.note}")
    lines.append("")
    lines.extend(GENERAL_NOTES)
    return "\n".join(lines)
