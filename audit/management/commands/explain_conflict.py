"""`python manage.py explain_conflict [--table <uri>] [--json] < exception.txt`."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.core.errors import DeltaAuditError, one_line
from audit.core.explain import Explanation, explain
from audit.management.commands.conflict_matrix import OneLineErrorsMixin

# Exception texts are pasted logs; anything past this is not the exception any more.
MAX_STDIN_BYTES = 8 * 1024 * 1024
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class Command(OneLineErrorsMixin, BaseCommand):
    help = "Explain a Delta conflict exception read from stdin, optionally located in a table."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--table", metavar="URI", help="the table the exception came from")
        parser.add_argument("--json", action="store_true", help="print the JSON contract")

    def handle(self, *args, **options) -> None:
        text = _read_stdin()
        history = None
        if options.get("table"):
            from audit.core.runs.table import open_table

            try:
                history = open_table(options["table"]).history()
            except DeltaAuditError as err:
                message = one_line(err, empty="the table cannot be read")
                raise CommandError(message, returncode=2) from None
        result = explain(text, history)
        if options["json"]:
            self.stdout.write(json.dumps(result.as_dict(), ensure_ascii=False, default=str))
        else:
            self.stdout.write(render_text(result))


def _read_stdin() -> str:
    stream = getattr(sys.stdin, "buffer", None)
    raw = stream.read(MAX_STDIN_BYTES) if stream is not None else sys.stdin.read(MAX_STDIN_BYTES)
    if isinstance(raw, bytes):
        return raw.decode("utf-8", errors="replace")
    return raw


def _safe(value: Any) -> str:
    """Untrusted text for a terminal: no escape sequences, no control characters."""
    return _CONTROL_RE.sub("?", str(value))


def render_text(result: Explanation) -> str:
    """The explanation for a terminal: headline, paragraph, related versions, notes, fixes."""
    if result.exception is None:
        return _safe(result.explanation)
    lines = [_safe(result.exception)]
    if result.conflicting_version is not None:
        lines[0] += f" (conflicting version {result.conflicting_version})"
    lines += ["", _safe(result.explanation)]
    if result.likely_peer_versions:
        peers = ", ".join(map(str, result.likely_peer_versions))
        lines += ["", "Likely peers (in flight when it landed): " + peers]
    if result.candidate_versions:
        candidates = ", ".join(map(str, result.candidate_versions))
        lines += ["", "Candidate conflicting versions: " + candidates]
    for note in result.notes:
        lines += ["", "Note: " + _safe(note)]
    if result.fixes:
        lines += ["", "Fixes:"]
        lines += [f"  {index}. {_safe(fix)}" for index, fix in enumerate(result.fixes, 1)]
    return "\n".join(lines)
