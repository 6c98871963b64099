"""`manage.py discover <root-uri> [--register] [--project P] [--json] [--max-depth N]`: list the
Delta tables under a root (local folder or s3:// abfss:// gs:// prefix) and whether each is
registered; new ones register into project P (default: the root's in AUDIT_DISCOVERY_PROJECTS,
else "default")."""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand

from audit.core.errors import DeltaAuditError
from audit.tail.discovery import discover


class Command(BaseCommand):
    help = "List the Delta tables under a root; --register adds the new ones."

    def add_arguments(self, parser):
        parser.add_argument("root", help="a local folder or an object-store prefix")
        parser.add_argument(
            "--register",
            action="store_true",
            help="register new tables (under AUDIT_ALLOWED_ROOTS); mark vanished ones gone",
        )
        parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
        parser.add_argument("--max-depth", type=int, default=None, help="folder levels to walk")
        parser.add_argument(
            "--project", default=None, help="project new tables register into (made if missing)"
        )

    def handle(self, *args, root: str, register: bool, max_depth: int | None, **options):
        try:
            report = discover(
                root, register=register, max_depth=max_depth, project=options["project"]
            )
        except DeltaAuditError as err:
            self.stderr.write(f"error: {err}")
            sys.exit(2)
        data = report.as_json()
        if options["json"]:
            self.stdout.write(json.dumps(data, indent=None))
            return
        for t in data["tables"]:
            mark = {True: "registered", False: "new", None: "unknown"}[t["registered"]]
            if t["added"]:
                mark = "added"
            elif t["refused"]:
                mark = f"refused: {t['refused']}"
            self.stdout.write(f"{t['uri']}\tv{t['latest_version']}\t{mark}")
        if data["registry_error"]:
            self.stderr.write(f"warning: {data['registry_error']}")
        for e in data["errors"]:
            self.stderr.write(f"warning: {e['path']}: {e['error']}")
        for uri in data["gone"]:
            self.stdout.write(f"{uri}\tgone")
        tail = " (stopped early: --max-depth or the folder limit)" if data["truncated"] else ""
        self.stdout.write(f"{len(data['tables'])} tables under {data['root']}{tail}")
