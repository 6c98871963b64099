"""The tail's stored rows and the CLI's JSON report, reduced to the same comparable view: used
by the tail differential (tests/app) and the kill drill (tests/e2e)."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import orjson
from django.core.management import call_command

from audit.core.vocab import HEALTH_KINDS, SCAN_KINDS
from audit.models import Commit, Finding, Table


def cli_json(path: Path, *options: str) -> dict[str, Any] | None:
    """`manage.py audit <path> --json`, in-process; None when the CLI refuses the table."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    saved, sys.stdout = sys.stdout, out
    try:
        call_command("audit", str(path), "--json", *options)
    except SystemExit as exit_:
        if exit_.code == 2:
            return None
        raise
    finally:
        sys.stdout = saved
    out.flush()
    return orjson.loads(out.buffer.getvalue())


def cli_view(report: dict[str, Any]) -> tuple[dict, set]:
    commits = {
        c["version"]: (
            (c["operation"] or "")[:100],
            c["read_version"],
            c["facts"].get("read_version", "unknown"),
            list(c["concurrent_versions"]),
        )
        for c in report["commits"]
    }
    findings = {
        (f["kind"], f["version"], tuple(f["related_versions"]), f["severity"], f["confirmed"])
        for f in report["findings"]
        # The data-folder scan's kinds come from the worker's periodic scan, not the tail.
        if f["kind"] not in SCAN_KINDS
    }
    return commits, findings


def stored_view(table: Table) -> tuple[dict, set]:
    commits = {
        c.version: (c.operation, c.read_version, c.read_version_fact, c.concurrent_versions)
        for c in Commit.objects.filter(table=table)
    }
    # Health alert findings (schema/protocol changes, health thresholds) come from the ingest's
    # health hook; the CLI reports the same facts as its "changes" and "health" sections.
    findings = {
        (f.kind, f.version, tuple(f.related_versions), f.severity, f.confirmed)
        for f in Finding.objects.filter(table=table, status="open").exclude(kind__in=HEALTH_KINDS)
    }
    return commits, findings
