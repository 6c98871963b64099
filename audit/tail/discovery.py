"""Table discovery against the registry: what `manage.py discover` and the beat task run.

The walk itself is the core's (`audit.core.log.discovery`); here its result meets the `Table` rows:
which tables are registered, registering the new ones (through the allowed-roots gate of
`register_table`), and marking `gone` the registered tables under the root whose log
vanished. Gone tables keep their commits and findings; they come back when their log does.
Each root registers into a project (AUDIT_DISCOVERY_PROJECTS, or `--project`; else "default").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import DatabaseError

from audit.core.errors import DeltaAuditError, one_line
from audit.core.log.discovery import Discovery, discover_tables
from audit.core.storage.stores import open_store
from audit.core.vocab import StorageCause
from audit.ingest.tables import register_table
from audit.models import DEFAULT_PROJECT, Table, project_named
from audit.trust.paths import check_allowed

log = logging.getLogger(__name__)


@dataclass
class DiscoveryReport:
    discovery: Discovery
    registered: dict[str, int] = field(default_factory=dict)  # uri -> table id
    added: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # uri -> reason
    gone: list[str] = field(default_factory=list)
    revived: list[str] = field(default_factory=list)
    registry_error: str = ""  # the database could not be asked: "registered" is unknown

    def as_json(self) -> dict[str, Any]:
        d = self.discovery
        return {
            "root": d.root,
            "tables": [
                {
                    "uri": t.uri,
                    "path": t.path,
                    "latest_version": t.latest_version,
                    "registered": None if self.registry_error else t.uri in self.registered,
                    "table_id": self.registered.get(t.uri),
                    "added": t.uri in self.added,
                    "refused": self.refused.get(t.uri),
                }
                for t in d.tables
            ],
            "errors": [{"path": e.path, "error": e.message, "cause": e.cause} for e in d.errors],
            "gone": self.gone,
            "revived": self.revived,
            "registry_error": self.registry_error or None,
            "folders_listed": d.folders_listed,
            "truncated": d.truncated,
        }


def _key(uri: str) -> str:
    """The registry's form of a URI (what register_table stores), or the URI itself."""
    try:
        return check_allowed(uri)
    except DeltaAuditError:
        return uri.rstrip("/")


def discover(
    root: str, *, register: bool = False, max_depth: int | None = None, project: str | None = None
) -> DiscoveryReport:
    """Walk `root`; with `register`, add new tables (into `project`, by default the root's
    project in AUDIT_DISCOVERY_PROJECTS) and mark vanished ones gone."""
    depth = max_depth if max_depth is not None else settings.AUDIT_DISCOVERY_MAX_DEPTH
    found = discover_tables(root, max_depth=depth)
    report = DiscoveryReport(found)
    keys = {t.uri: _key(t.uri) for t in found.tables}
    try:
        by_uri = dict(Table.objects.filter(uri__in=set(keys.values())).values_list("uri", "id"))
    except DatabaseError as err:
        if register:
            raise
        # Listing needs no database: say which facts are missing instead of failing.
        report.registry_error = f"registry unavailable: {one_line(err)}"
        return report
    for uri, key in keys.items():
        if key in by_uri:
            report.registered[uri] = by_uri[key]
    if not register:
        return report
    for table in found.tables:
        if table.uri in report.registered:
            continue
        try:
            row, created = register_table(
                table.uri, project=project_named(project or root_project(root))
            )
        except DeltaAuditError as err:
            report.refused[table.uri] = str(err)
            continue
        report.registered[table.uri] = row.id
        if created:
            report.added.append(table.uri)
    _mark_gone_and_revived(report, set(keys.values()))
    return report


def root_project(root: str) -> str:
    """The project a discovery root registers into (AUDIT_DISCOVERY_PROJECTS: "ROOT=PROJECT"
    entries; the text after the last "=" is the project)."""
    projects = dict(
        entry.rsplit("=", 1) for entry in settings.AUDIT_DISCOVERY_PROJECTS if "=" in entry
    )
    return projects.get(root) or projects.get(root.rstrip("/")) or DEFAULT_PROJECT


def _mark_gone_and_revived(report: DiscoveryReport, present: set[str]) -> None:
    root_key = _key(report.discovery.root).rstrip("/")
    under_root = Table.objects.filter(uri__startswith=root_key + "/") | Table.objects.filter(
        uri=root_key
    )
    for row in under_root.exclude(status=Table.Status.PAUSED):
        if row.uri in present:
            if row.status == Table.Status.GONE:
                Table.objects.filter(id=row.id).update(status=Table.Status.INGESTING)
                report.revived.append(row.uri)
            continue
        if row.status == Table.Status.GONE or report.discovery.truncated:
            continue
        # Not seen by the walk (deeper than max_depth, or under a folder that failed to list?):
        # ask the table itself; only a log that is really absent makes it gone.
        if _log_absent(row.uri):
            Table.objects.filter(id=row.id).update(
                status=Table.Status.GONE,
                last_error="its _delta_log is no longer under the root (found gone by discovery)",
                error_cause=StorageCause.NOT_FOUND,
            )
            report.gone.append(row.uri)


def _log_absent(uri: str) -> bool:
    try:
        store = open_store(uri)
        return not store.exists("_delta_log") or not store.list("_delta_log", stats=False)
    except DeltaAuditError as err:
        return err.cause == StorageCause.NOT_FOUND


def discover_configured_roots() -> list[DiscoveryReport]:
    """Discovery of every root in AUDIT_DISCOVERY_ROOTS, registering; one bad root never stops
    the others."""
    reports = []
    for root in settings.AUDIT_DISCOVERY_ROOTS:
        try:
            reports.append(discover(root, register=True))
        except DeltaAuditError as err:
            log.warning("discovery of %s failed: %s", root, err)
    return reports
