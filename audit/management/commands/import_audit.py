"""`python manage.py import_audit <results-root-uri>`.

Loads the Delta-table results of a fleet audit (`spark_audit --output`, or the spark-submit
job workers/spark/entry.py) into the dashboard's database; idempotent. Prints one line per
table. Exit status: 0; 1 when a table failed; 2 when the results cannot be read.
"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand

from audit.core.errors import DeltaAuditError, one_line


class Command(BaseCommand):
    help = "Load a fleet audit's Delta-table results (--output of spark_audit) into the dashboard."

    def add_arguments(self, parser):
        parser.add_argument("root", help="root URI the results were written to (--output)")

    def handle(self, *args, **options):
        from workers.spark.importer import import_results

        try:
            results = import_results(options["root"])
        except DeltaAuditError as err:
            sys.stderr.write(f"error: {one_line(str(err))}\n")
            sys.exit(2)
        if not results:
            self.stdout.write("no tables in these results\n")
        for uri, result in results:
            self.stdout.write(f"{uri}: {result.line()}\n")
        if any(r.status in ("error", "busy") for _, r in results):
            sys.exit(1)
