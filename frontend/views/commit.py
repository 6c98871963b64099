"""The commit page: a commit's facts, its actions as logged, its concurrent commits, findings."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from audit.core.errors import DeltaAuditError, one_line
from audit.core.numbers import stats_records
from audit.core.storage.roots import shown_path
from audit.core.vocab import TABLE_ISOLATION_LEVELS
from audit.models import Commit, Table
from audit.reads import queries
from audit.reads.visible import visible_table_or_404
from frontend.views.common import pretty
from frontend.views.table import table_header

MAX_FILES_SHOWN = 500
MAX_CONCURRENT_SHOWN = 200
# How far after a commit we look for commits that were in flight when it committed.
LATER_WINDOW = 1000
# The file action fields both adds and removes show.
FILE_FIELDS = ("path", "size", "data_change")
# The metaData action fields shown as they are (the schema is shown field by field).
METADATA_FIELDS = ("id", "name", "partition_columns", "configuration")


def _read_logged_commit(table: Table, version: int) -> tuple[Any, str]:
    """The commit's actions as the log holds them (one file read, no listing of the log)."""
    from audit.core.log import read_commit
    from audit.core.storage.stores import open_store
    from audit.trust.paths import check_registered

    try:
        return read_commit(open_store(check_registered(table.uri)), version), ""
    except DeltaAuditError as err:
        return None, one_line(err, empty="unreadable commit")
    except OSError as err:
        return None, f"cannot read the commit file: {one_line(err)}"


def _schema_fields(schema_string: str | None) -> list[dict[str, Any]]:
    try:
        schema = json.loads(schema_string or "")
    except (TypeError, ValueError):
        return []
    fields = schema.get("fields") if isinstance(schema, dict) else None
    if not isinstance(fields, list):
        return []
    return [
        {
            "name": str(f.get("name")),
            "type": f.get("type") if isinstance(f.get("type"), str) else json.dumps(f.get("type")),
            "nullable": f.get("nullable"),
        }
        for f in fields
        if isinstance(f, dict)
    ]


def _file_action(action: Any) -> dict[str, Any]:
    return {
        **{name: getattr(action, name) for name in FILE_FIELDS},
        "path": shown_path(action.path),  # a logged path can carry a signed URL's token
        "partition_values": action.partition_values or {},
        "deletion_vector": bool(action.deletion_vector),
    }


def _metadata(metadata: Any) -> dict[str, Any] | None:
    if metadata is None:
        return None
    shown = {name: getattr(metadata, name) for name in METADATA_FIELDS}
    return {**shown, "fields": _schema_fields(metadata.schema_string)}


def _actions(raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    adds = [
        {**_file_action(a), "records": stats_records(a.stats)} for a in raw.adds[:MAX_FILES_SHOWN]
    ]
    return {
        "adds": adds,
        "adds_total": len(raw.adds),
        "removes": [_file_action(r) for r in raw.removes[:MAX_FILES_SHOWN]],
        "removes_total": len(raw.removes),
        "cdcs": raw.cdcs[:MAX_FILES_SHOWN],
        "metadata": _metadata(raw.metadata),
        "protocol": raw.protocol,
        "txns": raw.txns,
        "domains": raw.domain_metadata,
        "unknown": raw.unknown_actions,
        "commit_info": pretty(raw.commit_info) if raw.commit_info is not None else "",
    }


def _concurrent(table: Table, commit: Commit) -> list[dict[str, Any]]:
    """The commits this one ran concurrently with, and the re-check verdicts against each."""
    versions = [int(v) for v in commit.concurrent_versions[:MAX_CONCURRENT_SHOWN]]
    peers = queries.commits_by_version(
        table.id, versions, ("operation", "user_name", "timestamp", "blind_append")
    )
    recheck = commit.recheck or {}
    return [
        {"version": v, "peer": peers.get(v), "verdicts": recheck.get(str(v)) or {}}
        for v in versions
    ]


def _later(table: Table, version: int) -> list[dict[str, Any]]:
    """Commits that were in flight when this one committed: they read a version before it."""
    later = queries.commits_in_flight(table.id, version, LATER_WINDOW)
    for c in later:
        c["verdicts"] = (c.pop("recheck") or {}).get(str(version)) or {}
    return later


@login_required
def commit_detail(request: HttpRequest, table_id: int, version: int) -> HttpResponse:
    table = visible_table_or_404(request, table_id)
    commit = queries.commit_at(table.id, version)
    if commit is None:
        raise Http404("No Commit matches the given query.")
    raw, read_error = _read_logged_commit(table, version)
    ctx = {
        **table_header(table),
        "commit": commit,
        "actions": _actions(raw),
        "read_error": read_error,
        "concurrent": _concurrent(table, commit),
        "concurrent_total": len(commit.concurrent_versions),
        "later": _later(table, version),
        "findings": queries.findings_involving(table.id, version),
        "parameters": pretty(commit.operation_parameters),
        "metrics": pretty(commit.operation_metrics),
        "levels": [str(level) for level in TABLE_ISOLATION_LEVELS],
        "tab": "timeline",
    }
    return render(request, "frontend/commit.html", ctx)
