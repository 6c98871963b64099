"""A fleet audit's results as Delta tables: where a cluster can write, what the dashboard imports.

`--output <root>` (manage.py spark_audit, workers/spark/entry.py) writes three Delta tables
under one root URI (a local path or s3:// abfss:// gs://, written with deltalake by the
driver; executors never write):

- `<root>/commits`:  one row per audited commit (flat columns for SQL, plus `payload`, the
  commit's summary and audit as JSON, which import_audit reads back);
- `<root>/findings`: one row per finding (flat columns, plus `payload`);
- `<root>/tables`:   one row per table and run: status, error, latest version, the table's
  settings and log listing (as JSON).

Every row carries the `run_id` of the job. A run's `tables` rows are written last, after its
commits and findings: a table's rows count only once its `tables` row exists, so a run that
died half-way is simply not there for `read_outcomes` (no partial table is ever imported).
Appending runs is safe; `read_outcomes` takes each table's latest run.

Django-free (the entry point runs without Django); audit/imports.py stores what it reads.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa

from audit.core import serialize
from audit.core.errors import DeltaAuditError, one_line
from audit.core.model import CommitSummary, LogListing
from audit.core.report import finding_head
from audit.core.serialize import arrow_schema
from workers.spark.job import TableOutcome, outcome_from_rows

TABLES_PER_WRITE = 100  # one Delta commit per table is slow; one per run holds the fleet in RAM

COMMITS_SCHEMA = arrow_schema(
    "run_id:str table_uri:str version:int timestamp:int operation:str read_version:int "
    "isolation_level:str blind_append:bool concurrent_versions:ints files_added:int "
    "files_removed:int engine:str payload:str"
)
FINDINGS_SCHEMA = arrow_schema(
    "run_id:str table_uri:str kind:str severity:str version:int related_versions:ints "
    "confirmed:bool summary:str payload:str"
)
# audited_at: ms since the epoch; status: ok | error; settings: the table's state as stage 2
# sent it (JSON); listing: the log listing the audit saw (JSON, versions as ranges).
TABLES_SCHEMA = arrow_schema(
    "run_id:str table_uri:str audited_at:int status:str error:str latest_version:int "
    "first_available_version:int commits:int findings:int settings:str listing:str"
)
SUBTABLES = {"commits": COMMITS_SCHEMA, "findings": FINDINGS_SCHEMA, "tables": TABLES_SCHEMA}


@dataclass
class OutputSummary:
    run_id: str
    tables: int = 0
    errors: int = 0
    commits: int = 0
    findings: int = 0


# --------------------------------------------------------------------------- writing


def write_outcomes(
    root: str,
    outcomes: Iterable[TableOutcome],
    *,
    storage_options: dict[str, str] | None = None,
    run_id: str | None = None,
    on_table: Any = None,
) -> OutputSummary:
    """Append the outcomes to the Delta tables under `root`; `on_table(outcome)` per table."""
    summary = OutputSummary(run_id or uuid.uuid4().hex)
    batch: dict[str, list[dict[str, Any]]] = {name: [] for name in SUBTABLES}
    pending = 0
    for outcome in outcomes:
        for name, rows in outcome_rows(summary.run_id, outcome).items():
            batch[name].extend(rows)
        summary.tables += 1
        summary.errors += outcome.error is not None
        summary.commits += len(outcome.history.summaries) if outcome.history else 0
        summary.findings += len(outcome.audit.findings) if outcome.audit else 0
        pending += 1
        if on_table is not None:
            on_table(outcome)
        if pending >= TABLES_PER_WRITE:
            _flush(root, batch, storage_options)
            pending = 0
    _flush(root, batch, storage_options)
    return summary


def _flush(
    root: str, batch: dict[str, list[dict[str, Any]]], storage_options: dict[str, str] | None
) -> None:
    from deltalake import write_deltalake  # noqa: PLC0415  (the driver's only extra library)

    for name in ("commits", "findings", "tables"):  # tables last: it marks the rows complete
        rows = batch[name]
        if not rows and name != "tables":
            continue
        data = pa.Table.from_pylist(rows, schema=SUBTABLES[name])
        try:
            write_deltalake(_join(root, name), data, mode="append", storage_options=storage_options)
        except Exception as err:  # deltalake raises many types for one meaning
            reason = f"{type(err).__name__}: {one_line(str(err), limit=300)}"
            raise DeltaAuditError(f"cannot write {_join(root, name)}: {reason}") from None
        rows.clear()


def outcome_rows(run_id: str, outcome: TableOutcome) -> dict[str, list[dict[str, Any]]]:
    """The rows of one table's outcome for each output table."""
    base = {"run_id": run_id, "table_uri": outcome.table_uri}
    now = int(time.time() * 1000)
    if outcome.error is not None or outcome.history is None or outcome.audit is None:
        row = {**base, "audited_at": now, "status": "error", "error": outcome.error or "no result"}
        return {"commits": [], "findings": [], "tables": [row]}
    history, audit = outcome.history, outcome.audit
    commits = [_commit_row(base, s, audit.commits.get(s.version)) for s in history.summaries]
    findings = [
        {**base, **finding_head(f), "payload": _json(serialize.finding_to_row(f))}
        for f in audit.findings
    ]
    table = {
        **base,
        "audited_at": now,
        "status": "ok",
        "error": None,
        "latest_version": history.listing.latest_version,
        "first_available_version": history.listing.first_available_version,
        "commits": len(commits),
        "findings": len(findings),
        "settings": outcome.settings_payload,
        "listing": listing_to_json(history.listing),
    }
    return {"commits": commits, "findings": findings, "tables": [table]}


def _commit_row(
    base: dict[str, Any], summary: CommitSummary, commit_audit: Any | None
) -> dict[str, Any]:
    """A `commits` row: flat columns for SQL, and the summary and audit whole in `payload`."""
    window = list(commit_audit.concurrent_versions) if commit_audit is not None else []
    payload = {
        "summary": serialize.summary_to_row(summary),
        "audit": None if commit_audit is None else serialize.commit_audit_to_json(commit_audit),
    }
    return {
        **base,
        "version": summary.version,
        "timestamp": _int64(summary.timestamp),
        "operation": summary.operation,
        "read_version": _int64(commit_audit.read_version if commit_audit else summary.read_version),
        "isolation_level": summary.isolation_level,
        "blind_append": summary.blind_append,
        "concurrent_versions": window,
        "files_added": summary.files_added,
        "files_removed": summary.files_removed,
        "engine": summary.engine,
        "payload": _json(payload),
    }


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


# --------------------------------------------------------------------------- reading


def read_outcomes(
    root: str, *, storage_options: dict[str, str] | None = None
) -> Iterator[TableOutcome]:
    """Each table's latest complete run under `root`, as TableOutcomes. Raises DeltaAuditError."""
    tables = _read(root, "tables", None, storage_options)
    latest: dict[str, dict[str, Any]] = {}
    for row in tables.to_pylist():
        seen = latest.get(row["table_uri"])
        if seen is None or (row["audited_at"], row["run_id"]) > (
            seen["audited_at"],
            seen["run_id"],
        ):
            latest[row["table_uri"]] = row
    runs = sorted({row["run_id"] for row in latest.values()})
    if not runs:
        return
    wanted = [("run_id", "in", runs)]
    commits = _group(_read(root, "commits", wanted, storage_options, ("payload",)))
    findings = _group(_read(root, "findings", wanted, storage_options, ("payload",)))
    for uri in sorted(latest):
        row = latest[uri]
        if row["status"] != "ok":
            yield TableOutcome(uri, error=row["error"])
            continue
        key = (row["run_id"], uri)
        rows = [{"kind": "table", "version": None, "payload": row["settings"]}]
        rows += [{"kind": "commit", **r} for r in commits.get(key, [])]
        rows += [{"kind": "finding", **r} for r in findings.get(key, [])]
        yield outcome_from_rows(uri, rows, listing_from_json(row["listing"]))


def _read(
    root: str,
    name: str,
    filters: list[tuple[str, str, Any]] | None,
    storage_options: dict[str, str] | None,
    extra: tuple[str, ...] = (),
) -> pa.Table:
    from deltalake import DeltaTable  # noqa: PLC0415

    columns = ["run_id", "table_uri", *(["version"] if name != "tables" else []), *extra]
    if name == "tables":
        columns = list(TABLES_SCHEMA.names)
    try:
        table = DeltaTable(_join(root, name), storage_options=storage_options)
        return table.to_pyarrow_table(columns=columns, filters=filters)
    except Exception as err:
        reason = f"{type(err).__name__}: {one_line(str(err), limit=300)}"
        raise DeltaAuditError(
            f"cannot read audit results at {_join(root, name)}: {reason}"
        ) from None


def _group(table: pa.Table) -> dict[tuple[str, str], list[dict[str, Any]]]:
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in table.to_pylist():
        grouped.setdefault((row["run_id"], row["table_uri"]), []).append(
            {"version": row["version"], "payload": row["payload"]}
        )
    return grouped


# --------------------------------------------------------------------------- listing JSON


def listing_to_json(listing: LogListing) -> str:
    """The listing with its commit versions as [start, end] ranges (a 1M-commit log is 1 range).

    Modification times are kept for the latest version only (storage reads no others).
    """
    ranges: list[list[int]] = []
    for version in listing.commit_versions:
        if ranges and ranges[-1][1] == version - 1:
            ranges[-1][1] = version
        else:
            ranges.append([version, version])
    latest_time = listing.file_modification_times.get(listing.latest_version)
    return orjson.dumps(
        {
            "table_uri": listing.table_uri,
            "commit_ranges": ranges,
            "checkpoints": {str(v): files for v, files in listing.checkpoints.items()},
            "compactions": [list(c) for c in listing.compactions],
            "last_checkpoint": listing.last_checkpoint,
            "latest_version": listing.latest_version,
            "first_available_version": listing.first_available_version,
            "latest_modification_time": latest_time,
        }
    ).decode()


def listing_from_json(text: str) -> LogListing:
    data = orjson.loads(text)
    versions = [v for start, end in data["commit_ranges"] for v in range(start, end + 1)]
    times = {}
    if data.get("latest_modification_time") is not None:
        times[data["latest_version"]] = data["latest_modification_time"]
    return LogListing(
        table_uri=data["table_uri"],
        commit_versions=versions,
        checkpoints={int(v): files for v, files in data["checkpoints"].items()},
        compactions=[tuple(c) for c in data["compactions"]],
        last_checkpoint=data["last_checkpoint"],
        latest_version=data["latest_version"],
        first_available_version=data["first_available_version"],
        file_modification_times=times,
    )


def _join(root: str, name: str) -> str:
    return f"{root.rstrip('/')}/{name}"


def _int64(value: int | None) -> int | None:
    if value is None or not -(2**63) <= value < 2**63:
        return None
    return value
