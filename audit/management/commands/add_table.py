"""`manage.py add_table <uri> [--name NAME] [--project P]`: register a Delta table for tailing,
in project P (created if missing; without --project: the project named "default")."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand

from audit.core.data.keys import parse_key_columns
from audit.core.errors import DeltaAuditError
from audit.ingest.tables import register_table
from audit.models import DEFAULT_PROJECT, project_named
from audit.trust.access import move_table


class Command(BaseCommand):
    help = "Register a Delta table (a readable table under AUDIT_ALLOWED_ROOTS) for tailing."

    def add_arguments(self, parser):
        parser.add_argument("uri", help="table root: a local path or s3:// abfss:// gs:// URI")
        parser.add_argument("--name", default=None, help="display name (default: last path part)")
        parser.add_argument(
            "--project",
            default=None,
            help=f"project the table belongs to, created if missing (default: {DEFAULT_PROJECT})",
        )
        parser.add_argument(
            "--key", default=None, metavar="COL[,COL]", help="the table's key columns"
        )

    def handle(self, *args, uri: str, name: str | None, project: str | None, **options):
        try:
            keys = parse_key_columns(options["key"]) if options.get("key") else None
            into = project_named(project) if project else None
            table, created = register_table(uri, name=name, key_columns=keys, project=into)
        except DeltaAuditError as err:
            self.stderr.write(f"error: {err}")
            sys.exit(2)
        # An existing table keeps its project unless one is named.
        if created or project:
            target = project_named(project or DEFAULT_PROJECT)
            if table.project_id != target.pk:
                move_table(table.pk, target)
        else:
            target = table.project
        verb = "registered" if created else "already registered"
        self.stdout.write(
            f"{verb} table {table.id} {table.name!r} at {table.uri} in project {target.name!r}"
        )
