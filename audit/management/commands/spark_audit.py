"""`python manage.py spark_audit [--tables ID_OR_URI ...|--all] [--master ...]`.

Audits registered tables (or URIs, registered on the way) as one Spark job and stores the
commits and findings exactly like the Celery tail does. Prints one line per table. Exit
status: 0; 1 when a table failed; 2 when Spark cannot run (e.g. Java is missing).

With `--output <root-uri>` the results go to Delta tables under that root instead of the
database (commits, findings, tables: see workers/spark/output.py); `import_audit <root-uri>`
loads them later. Nothing is registered or locked then: URIs are audited as given.
"""

from __future__ import annotations

import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from audit.core.errors import DeltaAuditError, one_line
from audit.trust.limits import dv_limits
from audit.trust.paths import read_scope_of


class Command(BaseCommand):
    help = "Audit many tables' histories in one Spark job and store the results."

    def add_arguments(self, parser):
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--tables", nargs="+", metavar="ID_OR_URI", help="table ids or URIs")
        which.add_argument("--all", action="store_true", help="every registered, unpaused table")
        parser.add_argument(
            "--master",
            help=f"Spark master or sc:// URL (default AUDIT_SPARK_MASTER={settings.AUDIT_SPARK_MASTER})",
        )
        parser.add_argument(
            "--no-data", action="store_true", help="do not read data files to confirm findings"
        )
        parser.add_argument(
            "--output",
            metavar="ROOT_URI",
            help="write the results as Delta tables under this root instead of the database",
        )

    def handle(self, *args, **options):
        from workers.spark import tasks as spark_tasks

        if options["output"]:
            return self.write_output(options)
        try:
            tables = spark_tasks.resolve_tables(options["tables"], all_tables=options["all"])
        except DeltaAuditError as err:
            raise CommandError(one_line(str(err))) from None
        if not tables:
            self.stdout.write("no tables to audit\n")
            return
        try:
            spark = spark_tasks.session(options["master"])
            results = spark_tasks.run_spark_audit(
                tables,
                spark=spark,
                check_data=False if options["no_data"] else None,
            )
        except DeltaAuditError as err:
            sys.stderr.write(f"error: {one_line(str(err))}\n")
            sys.exit(2)
        except Exception as err:  # the job itself failed (executor lost, cluster gone, ...)
            first = one_line(str(err), limit=300, empty="")
            sys.stderr.write(f"error: the Spark job failed: {type(err).__name__}: {first}\n")
            sys.exit(2)
        for result in results:
            self.stdout.write(result.line() + "\n")
        if any(r.status in ("error", "busy") for r in results):
            sys.exit(1)

    def write_output(self, options):
        from audit.models import Table
        from workers.spark import tasks as spark_tasks
        from workers.spark.job import audit_fleet
        from workers.spark.output import write_outcomes

        if options["all"]:
            uris = [t.uri for t in spark_tasks.resolve_tables(None, all_tables=True)]
        else:
            ids = [r for r in options["tables"] if r.strip().isdigit()]
            by_id = dict(Table.objects.filter(id__in=ids).values_list("id", "uri"))
            uris = [by_id.get(int(r), r) if r.strip().isdigit() else r for r in options["tables"]]
        failed = 0

        def report(outcome):
            nonlocal failed
            if outcome.error is not None:
                failed += 1
                self.stdout.write(f"{outcome.table_uri}: error: {outcome.error}\n")
            else:
                commits = len(outcome.history.summaries)
                self.stdout.write(f"{outcome.table_uri}: ok, {commits} commits\n")

        try:
            spark = spark_tasks.session(options["master"])
            outcomes = audit_fleet(
                spark,
                uris,
                chunk_commits=settings.AUDIT_SPARK_CHUNK_COMMITS,
                check_data=False if options["no_data"] else settings.AUDIT_CHECK_DATA,
                read_roots={uri: read_scope_of(uri) for uri in uris},
                sample_rows=settings.AUDIT_WITNESS_SAMPLE_ROWS,
                dv_limits=dv_limits(),
            )
            summary = write_outcomes(options["output"], outcomes, on_table=report)
        except DeltaAuditError as err:
            sys.stderr.write(f"error: {one_line(str(err))}\n")
            sys.exit(2)
        self.stdout.write(
            f"run {summary.run_id}: {summary.tables} tables, {summary.commits} commits, "
            f"{summary.findings} findings written to {options['output']}\n"
        )
        if failed:
            sys.exit(1)
