"""`python manage.py table_advice <table-uri> [--json]`: isolation settings + partitioning advice.

The conflict matrix resolved for the table with the concurrent pairs its history shows, and
which partition columns would have kept concurrent commits apart.
"""

from __future__ import annotations

import sys

import orjson
from django.core.management.base import BaseCommand

from audit.core.advice.isolation import isolation_settings
from audit.core.advice.partitioning import recommend_partitioning
from audit.core.errors import DeltaAuditError, one_line
from audit.core.runs.table import LOG_ONLY, open_table


class Command(BaseCommand):
    help = "Isolation settings, the conflict matrix resolved for a table, and partitioning advice."
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument("table_uri")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options):
        try:
            table = open_table(options["table_uri"], options=LOG_ONLY)
            history = table.history()
            result = table.audit(history)
        except DeltaAuditError as err:
            sys.stderr.write(f"error: {one_line(str(err))}\n")
            sys.exit(2)
        advice = {
            "isolation": isolation_settings(history, result),
            "partitioning": recommend_partitioning(history, result),
        }
        if options["json"]:
            sys.stdout.buffer.write(orjson.dumps(advice, option=orjson.OPT_INDENT_2) + b"\n")
            return
        sys.stdout.write(render(advice) + "\n")


def render(advice: dict) -> str:
    iso, part = advice["isolation"], advice["partitioning"]
    lines = [
        f"Isolation level: {iso['isolation_level']} (delta.isolationLevel={iso['isolation_property']!r})",
        f"Row-level concurrency: {'yes' if iso['row_level_concurrency']['applies'] else 'no'}"
        f" ({iso['row_level_concurrency']['reason']})",
    ]
    for engine in iso["engines"]:
        note = f"  ! {engine['note']}" if engine["note"] else ""
        lines.append(
            f"  {engine['engine']}: {engine['commits']} commits, enforces {engine['effective_level']}{note}"
        )
    lines.append(
        "Conflict matrix (observed concurrent pairs / conflicting under Serializable, WriteSerializable):"
    )
    for cell in iso["matrix"]["cells"]:
        counts = cell["conflicting_pairs"]
        lines.append(
            f"  {cell['a']:<20} x {cell['b']:<20} {cell['verdict']:<22} "
            f"{cell['observed_pairs']:>5} / {counts['Serializable']}, {counts['WriteSerializable']}"
        )
    lines.append(f"Partitioning: {part['overlapping_pairs']} overlapping predicate pairs")
    for cand in part["candidates"]:
        mark = "recommended" if cand["recommended"] else "not recommended"
        lines.append(
            f"  {cand['column']}: {cand['pairs_made_disjoint']}/{cand['overlapping_pairs']} pairs become disjoint, "
            f"~{cand['partitions_created']} partitions; {mark}"
        )
        lines.extend(f"    warning: {w}" for w in cand["warnings"])
    lines.append(f"Row-level route: {part['row_level_concurrency']['advice']}")
    for rewrite in part["merge_rewrites"]:
        lines.append(f"  MERGE v{rewrite['version']}: {rewrite['condition']}")
        if rewrite["rewritten"]:
            lines.append(f"    -> {rewrite['rewritten']}")
    return "\n".join(lines)
