"""`python manage.py rebuild_rollups [--table ID ...]`: rebuild the timeline's commit rollups.

The ingest keeps CommitRollup rows up to date; this is for Commit rows written another way
(bulk loads, benchmarks) or a repair. Idempotent: rollups are recomputed from the Commit rows.
"""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from audit.ingest.rollup_store import rebuild_rollups
from audit.models import Table


class Command(BaseCommand):
    help = "Rebuild the CommitRollup rows of some or all tables from their Commit rows."

    def add_arguments(self, parser):
        parser.add_argument(
            "--table", type=int, action="append", dest="tables", help="table id (repeatable)"
        )

    def handle(self, *args, **options):
        ids = options["tables"] or list(Table.objects.order_by("id").values_list("id", flat=True))
        missing = set(ids) - set(Table.objects.filter(id__in=ids).values_list("id", flat=True))
        if missing:
            raise CommandError(f"no table with id {', '.join(map(str, sorted(missing)))}")
        for table_id in ids:
            started = time.perf_counter()
            count = rebuild_rollups(table_id)
            seconds = time.perf_counter() - started
            self.stdout.write(f"table {table_id}: {count} rollups in {seconds:.2f} s")
