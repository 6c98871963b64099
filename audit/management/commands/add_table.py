"""`manage.py add_table <uri> [--name NAME]`: register a Delta table for tailing."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand

from audit.core.errors import DeltaAuditError
from audit.ingest import register_table


class Command(BaseCommand):
    help = "Register a Delta table (a readable table under AUDIT_ALLOWED_ROOTS) for tailing."

    def add_arguments(self, parser):
        parser.add_argument("uri", help="table root: a local path or s3:// abfss:// gs:// URI")
        parser.add_argument("--name", default=None, help="display name (default: last path part)")

    def handle(self, *args, uri: str, name: str | None, **options):
        try:
            table, created = register_table(uri, name=name)
        except DeltaAuditError as err:
            self.stderr.write(f"error: {err}")
            sys.exit(2)
        verb = "registered" if created else "already registered"
        self.stdout.write(f"{verb} table {table.id} {table.name!r} at {table.uri}")
