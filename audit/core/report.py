"""The JSON report of SPEC §4 (`manage.py audit --json`), and its readable text form.

The field names here are a contract: CI jobs, scripts and the REST API rely on them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

import orjson

from audit.core.conflicts.audits import CommitAudits
from audit.core.history.provenance import provenance_of
from audit.core.history.summary import paused_gc
from audit.core.jsonsafe import json_text
from audit.core.model import CommitSummary, Finding
from audit.core.storage.roots import shown_path
from audit.core.vocab import SEVERITY_RANK

if TYPE_CHECKING:
    from audit.core.audit import AuditResult
    from audit.core.history.summary import History


def build_report(
    history: History,
    result: AuditResult | None,
    *,
    include_files: bool = False,
    stream_commits: bool = False,
) -> dict[str, Any]:
    """The report. With `stream_commits`, "commits" is a `CommitEntries` for `write_json`."""
    audits = result.commits if result is not None else {}
    commits: list[dict[str, Any]] | CommitEntries
    if stream_commits:
        commits = CommitEntries(history.summaries, audits)
    else:
        with paused_gc():  # one dict per commit: see `paused_gc`
            commits = [commit_entry(s, audits.get(s.version)) for s in history.summaries]
    report: dict[str, Any] = {
        "table": table_section(history),
        "commits": commits,
        "findings": [finding_entry(f) for f in (result.findings if result is not None else [])],
    }
    if include_files:
        report["live_files"] = sorted(shown_path(path) for path in history.state.files)
    return report


class CommitEntries:
    """The report's commit list, built a chunk at a time as `write_json` writes it.

    At a million commits the list of entry dicts and the whole JSON text would each cost
    hundreds of MB on top of the history; streamed, only one chunk of each is alive.
    """

    __slots__ = ("_summaries", "_audits")
    CHUNK = 2_000  # 10,000 entries alive at once were ~90 MB at the 1M audit's peak

    def __init__(self, summaries: list[CommitSummary], audits: dict[int, Any]) -> None:
        self._summaries, self._audits = summaries, audits

    def __len__(self) -> int:
        return len(self._summaries)

    def chunks(self) -> Iterator[list[dict[str, Any]]]:
        summaries, audits = self._summaries, self._audits
        # The audit's columns for the commits it never re-checked: no view built per commit.
        view = audits.brief if isinstance(audits, CommitAudits) else audits.get
        for start in range(0, len(summaries), self.CHUNK):
            yield [commit_entry(s, view(s.version)) for s in summaries[start : start + self.CHUNK]]


def write_json(report: dict[str, Any], out: IO[bytes]) -> None:
    """Write exactly `orjson.dumps(report, option=OPT_NON_STR_KEYS) + b"\n"`, streaming commits."""
    option = orjson.OPT_NON_STR_KEYS
    out.write(b"{")
    for index, (key, value) in enumerate(report.items()):
        out.write((b"," if index else b"") + orjson.dumps(key) + b":")
        if isinstance(value, list) and len(value) > _LIST_CHUNK:
            _write_list(value, out, option)
            continue
        if not isinstance(value, CommitEntries):
            out.write(_dumps(value, option))
            continue
        out.write(b"[")
        separator = b""
        with paused_gc():
            for chunk in value.chunks():
                if chunk:
                    out.write(separator + _dumps(chunk, option)[1:-1])
                    separator = b","
        out.write(b"]")
    out.write(b"}\n")


# The findings of a 1M-commit log are ~90 MB of JSON: written whole, that text was the
# command's peak (on top of the history). A list is written a slice at a time instead.
_LIST_CHUNK = 1_000


def _write_list(items: list[Any], out: IO[bytes], option: int) -> None:
    """Write exactly `_dumps(items, option)`, a slice of the items at a time."""
    slices = range(0, len(items), _LIST_CHUNK)
    try:
        # A first pass proves every slice encodes as is: else the whole list takes the
        # sanitiser, as `_dumps` would (its text is not the slices' texts joined).
        for start in slices:
            orjson.dumps(items[start : start + _LIST_CHUNK], option=option)
    except TypeError:
        out.write(json_text(items).encode())
        return
    out.write(b"[")
    for start in slices:
        text = orjson.dumps(items[start : start + _LIST_CHUNK], option=option)
        out.write((b"," if start else b"") + text[1:-1])
    out.write(b"]")


def _dumps(value: Any, option: int) -> bytes:
    try:
        return orjson.dumps(value, option=option)
    except TypeError:  # a sum of log numbers past 64 bits: the one sanitiser spells it
        return json_text(value).encode()


def table_section(history: History) -> dict[str, Any]:
    state = history.state
    return {
        "uri": history.table_uri,
        "version": state.version,
        "first_available_version": history.first_available_version,
        "partition_columns": state.partition_columns,
        "isolation_level": state.properties.get("delta.isolationLevel"),
        "num_files": len(state.files),
        "properties": state.properties,
        "clustering_columns": list(state.clustering_columns),
        "identity_columns": [c.name for c in state.identity_columns],
        "protocol": _protocol(history),
    }


def _protocol(history: History) -> dict[str, Any] | None:
    protocol = history.state.protocol
    if protocol is None:
        return None
    return {
        "min_reader_version": protocol.min_reader_version,
        "min_writer_version": protocol.min_writer_version,
        "reader_features": protocol.reader_features,
        "writer_features": protocol.writer_features,
    }


def commit_entry(summary: CommitSummary, audit: Any | None = None) -> dict[str, Any]:
    """One commit. The audit may have derived a read version the log did not record."""
    read_version = summary.read_version
    facts = summary.facts.copy()
    concurrent: list[int] = []
    if audit is not None:
        read_version = audit.read_version
        facts["read_version"] = audit.read_version_fact
        window = audit.concurrent_versions
        if window:  # most commits have no concurrent writers: skip list(range) for them
            concurrent = list(window)
    predicate = summary.predicate
    entry = {
        "version": summary.version,
        "timestamp": summary.timestamp,
        "operation": summary.operation,
        "read_version": read_version,
        "isolation_level": summary.isolation_level,
        "blind_append": summary.blind_append,
        "concurrent_versions": concurrent,
        "files_added": summary.files_added,
        "files_removed": summary.files_removed,
        "engine": summary.engine,
        "facts": facts,
        "predicate": predicate.raw if predicate is not None else None,
        "provenance": provenance_of(summary),
    }
    if audit is not None and getattr(audit, "profile", ""):
        # Re-checked commits name the engine profile whose rules they were judged by.
        entry["profile"] = audit.profile
    return entry


def finding_entry(finding: Finding) -> dict[str, Any]:
    return {**finding_head(finding), "witness": finding.witness, "explanation": finding.explanation}


def finding_head(finding: Finding) -> dict[str, Any]:
    """A finding in brief: the report's first fields, the Spark output's flat columns."""
    return {
        "kind": finding.kind,
        "severity": finding.severity,
        "version": finding.version,
        "related_versions": list(finding.related_versions),
        "confirmed": finding.confirmed,
        "summary": finding.summary,
    }


def worst_severity(findings: list[Finding]) -> str | None:
    if not findings:
        return None
    return max((f.severity for f in findings), key=SEVERITY_RANK.__getitem__)


def fails_gate(findings: list[Finding], fail_on: str | None) -> bool:
    """True when `--fail-on LEVEL` is given and a finding at or above LEVEL exists."""
    if not fail_on:
        return False
    threshold = SEVERITY_RANK[fail_on]
    return any(SEVERITY_RANK[f.severity] >= threshold for f in findings)


def render_text(report: dict[str, Any], *, max_commits: int = 50) -> str:
    """A readable summary for humans; the JSON form is the contract."""
    table = report["table"]
    lines = [
        f"Table {table['uri']}",
        f"  version {table['version']} (first available {table['first_available_version']}), "
        f"{table['num_files']} live files",
        f"  partitioned by: {', '.join(table['partition_columns']) or '(none)'}",
        f"  delta.isolationLevel: {table['isolation_level'] or '(not set)'}",
        "",
    ]
    commits = report["commits"]
    shown = commits[-max_commits:]
    lines.append(f"Commits ({len(commits)}; last {len(shown)} shown):")
    lines.append(
        f"  {'version':>8}  {'operation':<24} {'read':>8}  {'isolation':<18} blind  +files -files  concurrent"
    )
    for c in shown:
        read = "-" if c["read_version"] is None else str(c["read_version"])
        concurrent = _compact_versions(c["concurrent_versions"])
        lines.append(
            f"  {c['version']:>8}  {str(c['operation'])[:24]:<24} {read:>8}  {str(c['isolation_level'] or '-'):<18} "
            f"{_yes_no(c['blind_append']):<5}  {c['files_added']:>6} {c['files_removed']:>6}  {concurrent}"
        )
    lines.append("")
    findings = report["findings"]
    lines.append(f"Findings ({len(findings)}):")
    for f in findings:
        related = ", ".join(str(v) for v in f["related_versions"])
        mark = " [confirmed]" if f["confirmed"] else ""
        lines.append(
            f"  {f['severity'].upper():<8} {f['kind']} at v{f['version']} (related: {related or '-'}){mark}"
        )
        lines.append(f"           {f['summary']}")
    if not findings:
        lines.append("  none")
    incidents = report.get("incidents")
    if incidents:
        lines += ["", f"Incidents ({len(incidents)}; one root cause each, findings grouped):"]
        for i in incidents:
            lines.append(
                f"  {i['severity'].upper():<8} {i['cause']} [{i['status']}] "
                f"{len(i['findings'])} finding(s), id {i['id']}"
            )
            lines.append(f"           {i['headline']}")
    return "\n".join(lines)


def _yes_no(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _compact_versions(versions: list[int]) -> str:
    if not versions:
        return "-"
    if len(versions) > 3 and versions[-1] - versions[0] == len(versions) - 1:
        return f"{versions[0]}..{versions[-1]}"
    return ",".join(str(v) for v in versions)
