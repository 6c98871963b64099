"""`python manage.py explain_conflict [--table <uri>] [--json] < exception.txt`."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.core.errors import DeltaAuditError
from audit.core.explain import explain_conflict
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
            from audit.core.summary import load_history

            try:
                history = load_history(options["table"])
            except DeltaAuditError as err:
                raise CommandError(_one_line(str(err)), returncode=2) from None
        result = explain_conflict(text, history)
        if options["json"]:
            self.stdout.write(json.dumps(result, ensure_ascii=False, default=str))
        else:
            self.stdout.write(render_text(result))


def _read_stdin() -> str:
    stream = getattr(sys.stdin, "buffer", None)
    raw = stream.read(MAX_STDIN_BYTES) if stream is not None else sys.stdin.read(MAX_STDIN_BYTES)
    if isinstance(raw, bytes):
        return raw.decode("utf-8", errors="replace")
    return raw


def _one_line(text: str) -> str:
    return " ".join(text.split()) or "the table cannot be read"


def _safe(value: Any) -> str:
    """Untrusted text for a terminal: no escape sequences, no control characters."""
    return _CONTROL_RE.sub("?", str(value))


def render_text(result: dict[str, Any]) -> str:
    if result["exception"] is None:
        return _safe(result["explanation"])
    lines = [_safe(result["exception"])]
    if result.get("conflicting_version") is not None:
        lines[0] += f" (conflicting version {result['conflicting_version']})"
    lines += ["", _safe(result["explanation"])]
    peers = result.get("likely_peer_versions") or []
    if peers:
        lines += ["", "Likely peers (in flight when it landed): " + ", ".join(map(str, peers))]
    candidates = result.get("candidate_versions") or []
    if candidates:
        lines += ["", "Candidate conflicting versions: " + ", ".join(map(str, candidates))]
    for note in result.get("notes") or []:
        lines += ["", "Note: " + _safe(note)]
    if result["fixes"]:
        lines += ["", "Fixes:"]
        lines += [f"  {index}. {_safe(fix)}" for index, fix in enumerate(result["fixes"], 1)]
    return "\n".join(lines)
