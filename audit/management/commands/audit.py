"""`python manage.py audit <table-uri> --json [--files] [--fail-on warning|critical]`.

Audits one table without any server: reads its log, runs the isolation audit and prints the
report of SPEC §4. Exit status: 0; 1 when --fail-on is given and a finding at or above that
severity exists; 2 when the table cannot be read (one line on stderr).

A local user's tool with no project: data files are read inside the audited table's own
location only, plus the roots named by `--read-root` (a shallow clone's source).
"""

from __future__ import annotations

import os
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand

from audit.core.data.keys import parse_key_columns
from audit.core.errors import DeltaAuditError, one_line
from audit.core.history.parallel import spare_core
from audit.core.history.summary import paused_gc, young_gc
from audit.core.incidents.build import incident_entry
from audit.core.report import build_report, fails_gate, render_text, write_json
from audit.core.runs.sections import add_data_scan, add_health_and_changes
from audit.core.runs.table import AuditedTable, AuditOptions, open_table
from audit.core.storage.roots import table_scope
from audit.core.vocab import Severity
from audit.trust.limits import dv_limits, incident_rules


class Command(BaseCommand):
    help = "Audit one Delta table's history for isolation anomalies (no server needed)."
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument(
            "table_uri", help="local path or s3:// / abfss:// / gs:// URI of the table"
        )
        parser.add_argument("--json", action="store_true", help="print the JSON report of SPEC §4")
        parser.add_argument("--files", action="store_true", help="include the live files")
        parser.add_argument(
            "--fail-on",
            choices=[Severity.WARNING, Severity.CRITICAL],
            help="exit 1 on findings at or above",
        )
        parser.add_argument(
            "--no-data",
            action="store_true",
            help="log only: do not read data files to confirm never-existed snapshots, nor "
            "list the data folders for orphan and missing files",
        )
        parser.add_argument(
            "--key",
            metavar="COL[,COL]",
            help="the table's key columns: live rows sharing a key are duplicate_key findings",
        )
        parser.add_argument(
            "--read-root",
            action="append",
            default=[],
            metavar="URI",
            help="also read data files the log names under URI (a shallow clone's source); "
            "by default only the table's own files are read (repeatable)",
        )

    def handle(self, *args, **options):
        # One run of a process that exits when it is done: the cyclic collector has nothing
        # to win. Left on, one full collection after a large history is built walks every
        # object of it (4.4 s of the health section at 1M commits).
        with paused_gc():
            self._audit(options)

    def _unpublished(self, report: dict, table: AuditedTable) -> None:
        """Staged commits beyond the published log (catalog-managed, coordinated commits):
        audited apart, marked unpublished; the publish lag joins the health section."""
        try:
            section = table.unpublished(now_ms=int(time.time() * 1000))
        except DeltaAuditError as err:
            section = {"error": one_line(str(err))}
        if section is None:
            return
        report["unpublished"] = section
        if isinstance(report.get("health"), dict) and "lag" in section:
            report["health"]["publish_lag"] = section["lag"]

    def _audit(self, options) -> None:
        # The report and its output are inside too: a hostile log must not reach them as a
        # traceback either.
        try:
            keys = parse_key_columns(options["key"])
            table = open_table(
                options["table_uri"], options=lambda uri: _options(uri, keys, options)
            )
            history = table.history(parallel=spare_core)
            # The history lives to the end: frozen, and the audit's own garbage collected.
            with young_gc():
                result = table.audit(history, pause_gc=False)
            scanned = self._print(table, history, result, options)
        except DeltaAuditError as err:
            sys.stderr.write(f"error: {one_line(str(err))}\n")
            sys.exit(2)
        except Exception as err:  # a bug of ours must still not drown the user in a traceback
            reason = f"{type(err).__name__}: {one_line(str(err), limit=300)}"
            sys.stderr.write(f"error: cannot audit this table ({reason})\n")
            sys.exit(2)
        if fails_gate([*result.findings, *scanned], options["fail_on"]):
            sys.exit(1)

    def _print(self, table: AuditedTable, history, result, options) -> list:
        """Print the report; returns the data scan's findings (the gate counts them too)."""
        report = build_report(
            history, result, include_files=options["files"], stream_commits=options["json"]
        )
        add_health_and_changes(report, history)
        scanned = add_data_scan(
            report,
            history,
            options["table_uri"],
            scan=not options["no_data"],
            min_interval_ms=settings.AUDIT_TIMESTAMP_MIN_INTERVAL_MS,
        )
        self._unpublished(report, table)
        incidents = table.incidents(
            history, [*result.findings, *scanned], now_ms=int(time.time() * 1000)
        )
        report["incidents"] = [incident_entry(i) for i in incidents]
        if options["json"]:
            write_json(report, sys.stdout.buffer)
        else:
            sys.stdout.write(render_text(report) + "\n")
        sys.stdout.flush()
        return scanned


def _options(uri: str, keys: list[str], options: dict) -> AuditOptions:
    """A local user's one-shot tool: data read inside the audited table's own root and the
    roots the user names (shallow clones), never AUDIT_ALLOWED_ROOTS as a whole."""
    return AuditOptions(
        check_data=not options["no_data"],
        read_roots=table_scope(uri, options["read_root"]),
        sample_rows=settings.AUDIT_WITNESS_SAMPLE_ROWS,
        key_columns=tuple(keys),
        dv_limits=dv_limits(),
        incident_rules=incident_rules(),
    )


def run_standalone(argv: list[str]) -> None:
    """Run `manage.py audit` without Django's app registry, then leave at once.

    The command reads no settings, models or database, so `manage.py` calls this instead of
    `django.setup()` (a third of a second of imports). After the output is flushed the process
    ends with `os._exit`: tearing down the millions of objects of a large history takes
    seconds and changes nothing.
    """
    code = 0
    try:
        Command().run_from_argv(argv)
    except SystemExit as exit_:
        code = _exit_status(exit_.code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")  # sys.exit("message") semantics
    return 1
