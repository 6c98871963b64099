"""A commit summary (and its audit) as the values of one Commit row; the table's settings.

Log text is untrusted: strings are cleaned for both databases and cut to their columns,
integers are clamped into their columns (audit.ingest.columns: a sum of sizes past 64 bits is
stored at the bigint's edge), timestamps that are not dates of the calendar become NULL.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from audit.core import model
from audit.core.health.changes import schema_columns
from audit.core.history.provenance import provenance_of
from audit.core.jsonsafe import clean_text, json_safe
from audit.core.numbers import ms_datetime
from audit.core.vocab import ReadVersionFact
from audit.ingest.columns import fit_columns
from audit.models import Commit

MAX_PARTITIONS_PER_COMMIT = 1000  # a commit touching more stores the first ones (sorted)


def commit_values(table_id: int, s: model.CommitSummary, audit: Any | None) -> dict[str, Any]:
    """The Commit row (attribute -> value) for one summary and (optionally) its audit.

    JSON columns hold plain Python data here; `insert_commits` serialises them once.
    """
    unknown = ReadVersionFact.UNKNOWN  # the facts of isolation level and blind append too
    read_version, read_fact = _read_version(s, audit)
    concurrent = [int(v) for v in (getattr(audit, "concurrent_versions", None) or [])]
    predicate = s.predicate
    values = dict(
        table_id=table_id,
        version=s.version,
        timestamp=s.timestamp,
        committed_at=ms_datetime(s.timestamp),
        operation=clean_text(s.operation or "")[:100],
        read_version=read_version,
        read_version_fact=read_fact,
        isolation_level=clean_text(s.isolation_level)[:40] if s.isolation_level else None,
        isolation_level_fact=s.facts.get("isolation_level", unknown),
        blind_append=s.blind_append,
        blind_append_fact=s.facts.get("blind_append", unknown),
        engine=s.engine,
        engine_info=clean_text(s.engine_info or "")[:2000],
        txn_id=clean_text(s.txn_id or "")[:200],
        user_id=clean_text(s.user_id or "")[:200],
        user_name=clean_text(s.user_name or "")[:200],
        **provenance_columns(s),
        files_added=s.files_added,
        files_removed=s.files_removed,
        bytes_added=s.bytes_added,
        bytes_removed=s.bytes_removed,
        concurrent_versions=concurrent,
        concurrent_count=len(concurrent),
        predicate_raw=clean_text(predicate.raw) if predicate else "",
        predicate_sql=clean_text(predicate.sql or "") if predicate else "",
        operation_parameters=s.operation_parameters,
        operation_metrics=s.operation_metrics,
        partitions=[
            dict(p) for p in sorted(s.partitions_touched, key=repr)[:MAX_PARTITIONS_PER_COMMIT]
        ],
        app_ids=s.app_ids,
        metadata_changed=s.metadata_changed,
        protocol_changed=s.protocol_changed,
        recheck=_recheck(audit),
        facts=dict(s.facts),
    )
    return fit_columns(Commit, values)


def provenance_columns(s: model.CommitSummary) -> dict[str, Any]:
    """The provenance of a commit as stored: the report's object, its job and user metadata."""
    # Stored through jsonsafe.json_text by insert_commits, like the other JSON columns.
    provenance = provenance_of(s)
    job = provenance.get("job_id") or provenance.get("job_name") or ""
    return {
        "job_id": clean_text(str(job))[:200],
        "user_metadata": clean_text(str(provenance.get("user_metadata") or "")),
        "provenance": provenance,
    }


def _read_version(s: model.CommitSummary, audit: Any | None) -> tuple[int | None, str]:
    """The read version and where it came from; the audit may have derived one the log lacks."""
    recorded = s.read_version, s.facts.get("read_version", ReadVersionFact.UNKNOWN)
    audited = getattr(audit, "read_version", None)
    if audited is None or audited == s.read_version:
        return recorded
    return audited, getattr(audit, "read_version_fact", ReadVersionFact.DERIVED)


def _recheck(audit: Any | None) -> dict[str, Any]:
    """Per concurrent version verdicts, keyed by version (JSON object keys are strings)."""
    verdicts = getattr(audit, "verdicts", None)
    if not verdicts:
        return {}
    if isinstance(verdicts, dict):
        return {str(k): v for k, v in verdicts.items()}
    return {str(getattr(v, "version", i)): v for i, v in enumerate(verdicts)}


def settings_snapshot(state: model.TableState) -> dict[str, Any]:
    """The table's settings as stored on its row (Table.settings_snapshot)."""
    protocol = state.protocol
    return json_safe(
        {
            "version": state.version,
            "partition_columns": state.partition_columns,
            # The columns now (the schema page's, for versions no stored change precedes).
            "schema": schema_columns(state.metadata.schema_string if state.metadata else None),
            "properties": state.properties,
            "protocol": asdict(protocol) if protocol else None,
            "clustering_columns": list(state.clustering_columns),
            "identity_columns": [asdict(c) for c in state.identity_columns],
        }
    )
