"""`manage.py project_roots <project> [--add URI]... [--remove URI]...`: the read roots a
project (created if missing) is granted besides each table's own location (a shallow clone's
source files, say); prints the list as it stands, one per line.

A granted root must lie under AUDIT_ALLOWED_ROOTS and not inside another project's table;
tables of other projects inside it are never read (audit/trust/paths.py). The same list is
editable in the Django admin.
"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand

from audit.core.errors import DeltaAuditError, one_line
from audit.core.storage.roots import location_of
from audit.models import Project, project_named
from audit.trust.paths import check_grantable


class Command(BaseCommand):
    help = "Grant or take back a project's read roots (shallow clones); print them."

    def add_arguments(self, parser):
        parser.add_argument("project", help="project name")
        parser.add_argument("--add", action="append", default=[], metavar="URI")
        parser.add_argument("--remove", action="append", default=[], metavar="URI")

    def handle(self, *args, project: str, add: list[str], remove: list[str], **options):
        found = project_named(project)  # created if missing, as project_member does
        roots = list(found.read_roots or [])
        try:
            for uri in add:
                granted = check_grantable(uri, found.pk)
                if granted not in roots:
                    roots.append(granted)
        except DeltaAuditError as err:
            self.stderr.write(f"error: {one_line(err)}")
            sys.exit(2)
        # A root is taken back however it is spelled (it may no longer be allowed, even exist).
        gone = {location_of(uri) or uri.rstrip("/") for uri in remove}
        roots = sorted(r for r in roots if r not in gone)
        if roots != sorted(found.read_roots or []):
            Project.objects.filter(pk=found.pk).update(read_roots=roots)
        for root in roots:
            self.stdout.write(root)
