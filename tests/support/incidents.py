"""Incidents of a real table, as `manage.py audit` computes them (the audit, then the data scan),
and the statements they carry, run as a user would: a deltalake `code` exec'd with nothing but
`table_uri` and `storage_options`."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from audit.core.audit import audit_history
from audit.core.health.scan import scan_data
from audit.core.history.summary import load_history
from audit.core.incidents.build import incidents_of
from audit.core.incidents.model import Incident
from audit.core.model import Finding
from audit.core.storage.stores import open_store


def audit_incidents(
    path: Path | str,
    *,
    keys: tuple[str, ...] = (),
    check_data: bool = True,
    scan: bool = True,
    now_ms: int | None = None,
    **scan_options: Any,
) -> tuple[list[Finding], list[Incident]]:
    """(findings, incidents) of the table at `path`: the audit's findings and, with `scan`,
    those of the one listing of its data folders, grouped as the CLI groups them."""
    uri = str(path)
    history = load_history(uri)
    roots = [uri]
    result = audit_history(history, check_data=check_data, read_roots=roots, key_columns=keys)
    findings = list(result.findings)
    if scan:
        found = scan_data(
            open_store(uri), history, uri, now_ms=int(time.time() * 1000), **scan_options
        )
        findings += found.findings
    incidents = incidents_of(
        history, findings, check_data=check_data, read_roots=roots, now_ms=now_ms
    )
    return findings, incidents


def by_cause(incidents: list[Incident], cause: str) -> Incident:
    (found,) = [i for i in incidents if i.key.cause == cause]
    return found


def assert_partition(findings: list[Finding], incidents: list[Incident]) -> None:
    """Every finding in exactly one incident, and one incident per cause key."""
    grouped = Counter(id(f) for i in incidents for f in i.findings)
    assert grouped == Counter(id(f) for f in findings)
    keys = [i.key for i in incidents]
    assert len(keys) == len(set(keys)) and len({i.id for i in incidents}) == len(incidents)


def run_deltalake(statements: list[Any], path: Path | str) -> None:
    """Exec each deltalake statement's code, in order, with only the two names it may use."""
    for statement in statements:
        if statement.engine == "deltalake":
            exec(statement.code, {"table_uri": str(path), "storage_options": {}})  # noqa: S102


def table_rows(path: Path | str, columns: tuple[str, ...] = ("day", "id", "value")) -> list[tuple]:
    """The table's live rows (deletion vectors applied by deltalake), sorted."""
    table = DeltaTable(str(path)).to_pyarrow_table(columns=list(columns))
    return sorted(tuple(row[c] for c in columns) for row in table.to_pylist())
