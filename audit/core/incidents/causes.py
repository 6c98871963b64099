"""Which root cause a finding is a symptom of: a `CauseKey` per finding, from facts alone.

A commit-level finding (a reorder, a never-existed snapshot, a missed conflict) belongs to the
commit that caused it: its cause is what let that commit through (WriteSerializable's exemption
of blind appends, the engine's own checker, or an isolation setting the engine does not parse)
and its key the commit's writer, operation and scope. Table-level findings carry their facts
in `details` and `witness`; their keys are built so that the symptoms they explain land on
the same key (`isolation_setting_ignored` on the key of the commits written under it).

Everything here is read from the findings and the history's commits, never from versions
alone, so a cause gets the same key whichever chunk of the log revealed it first.
"""

from __future__ import annotations

import functools
from typing import Any

from audit.core.anomalies.settings import setting_understood
from audit.core.conflicts.scope import has_condition, is_overwrite, is_unconditional
from audit.core.history.summary import History
from audit.core.history.writer_identity import identity_key, identity_of
from audit.core.incidents.model import CauseKey
from audit.core.model import CommitSummary, Finding
from audit.core.vocab import INTEGRITY_KINDS, Engine, FindingKind, IncidentCause

ISOLATION_PROPERTY = "delta.isolationLevel"
MAX_SCOPE_CHARS = 300  # a predicate's shape as shown; log text is untrusted and unbounded
WHOLE_TABLE = "whole table"

# Commit-level kinds: symptoms of the commit at their version.
COMMIT_KINDS = frozenset(
    {
        FindingKind.NEVER_EXISTED_SNAPSHOT,
        FindingKind.WRITE_SERIALIZABLE_REORDER,
        FindingKind.MISSED_CONFLICT,
    }
)
# One incident per table for these: the cause is a property of the table or its storage.
_TABLE_CAUSES: dict[str, IncidentCause] = {
    FindingKind.IDENTITY_COLUMN_CONCURRENCY: IncidentCause.IDENTITY_COLUMN_RACE,
    FindingKind.TIMESTAMPS_OUT_OF_ORDER: IncidentCause.COMMIT_TIMES,
    FindingKind.ORPHAN_FILES: IncidentCause.ORPHAN_FILES,
    FindingKind.HISTORY_GAP: IncidentCause.HISTORY_LOST,
    FindingKind.MISSING_READ_VERSION: IncidentCause.READ_VERSIONS_UNRECORDED,
    FindingKind.CATALOG_MANAGED_LOG: IncidentCause.CATALOG_MANAGED,
}


def writer_parts(summary: CommitSummary | None) -> dict[str, str]:
    """Who wrote a commit: the one writer identity (`audit.core.history.writer_identity`:
    engine, user, job, notebook, app ids; run and cluster ids change with every run)."""
    return identity_of(summary)


def writer_text(parts: dict[str, str]) -> str:
    """The writer part of a cause key: its parts, in one fixed order."""
    return identity_key(parts)


def operation_label(summary: CommitSummary | None) -> str:
    """WRITE is an append or an overwrite: the mode tells the two causes apart."""
    if summary is None:
        return "UNKNOWN"
    operation = str(summary.operation or "UNKNOWN")[:100]
    if operation.upper() == "WRITE" and is_overwrite(summary):
        return "WRITE (overwrite)"
    return operation


def scope_label(summary: CommitSummary | None) -> str:
    """The shape of the commit's condition, literals left out (a job that deletes another day
    each run is one cause), or "whole table" when it has none."""
    if summary is None or not has_condition(summary):
        return WHOLE_TABLE
    predicate = summary.predicate
    assert predicate is not None  # has_condition
    return predicate_shape(predicate.sql, predicate.raw)


@functools.lru_cache(maxsize=1024)
def predicate_shape(sql: str | None, raw: str) -> str:
    """`day = '2024-01-01' AND id < 5` -> `day = ? AND id < ?`: literals become placeholders.

    Printed by a generator that writes every literal as `?` (what a copy of the expression
    with its literals replaced by placeholders prints, without copying the parsed tree: that
    copy was ~0.2 ms a commit with findings). Remembered: each finding of a commit asks."""
    from audit.core.model import Predicate  # noqa: PLC0415
    from audit.core.predicates.parsing import expression_of  # noqa: PLC0415
    from audit.core.predicates.sql_templates import literal_template  # noqa: PLC0415

    # Literals print as `?`: predicates that differ only in them share their template's shape.
    templated = literal_template(sql) if sql else None
    shape = _template_shape(templated[0]) if templated is not None else None
    if shape is not None:
        return shape
    expression = expression_of(Predicate(raw=raw, sql=sql, columns=frozenset())) if sql else None
    if expression is None:
        return " ".join(raw.split())[:MAX_SCOPE_CHARS]
    return _shape_of(expression)


@functools.lru_cache(maxsize=1024)
def _template_shape(template: str) -> str | None:
    """The shape of a literal template's tree; None when a literal sits in a name."""
    from sqlglot import exp  # noqa: PLC0415

    from audit.core.predicates.sql_templates import SENTINEL, template_expression  # noqa: PLC0415

    expression = template_expression(template)
    if expression is None or any(
        SENTINEL.search(str(node.this)) for node in expression.find_all(exp.Identifier)
    ):
        return None
    return _shape_of(expression)


def _shape_of(expression: Any) -> str:
    """The printed shape of a parsed predicate (never changed: a copy is printed if need be)."""
    from sqlglot import exp  # noqa: PLC0415

    plain = _plain_parents()
    if all(type(node.parent) in plain for node in expression.find_all(exp.Literal)):
        # A generator a call: it keeps state while it prints (threads must not share one).
        return _shape_generator()().generate(expression)[:MAX_SCOPE_CHARS]
    # A literal where the printer looks at it (INTERVAL '1' DAY, a division, a function's
    # argument): print the copy itself.
    placeholders = expression.copy().transform(
        lambda node: exp.Placeholder() if isinstance(node, exp.Literal) else node
    )
    return placeholders.sql()[:MAX_SCOPE_CHARS]


@functools.cache
def _plain_parents() -> frozenset[type]:
    """Nodes whose printing never looks at a literal child: a `?` prints under them as the
    literal's placeholder does."""
    from sqlglot import exp  # noqa: PLC0415

    return frozenset(
        {exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.In, exp.Between, exp.Neg,
         exp.Paren, exp.And, exp.Or, exp.Not, exp.Like, exp.ILike, exp.Is, exp.Add, exp.Sub}
    )  # fmt: skip


@functools.cache
def _shape_generator() -> Any:
    """A maker of sqlglot's default generator with literals printed as placeholders (sqlglot
    loaded only for commits with findings)."""
    from sqlglot.dialects.dialect import Dialect  # noqa: PLC0415
    from sqlglot.generator import Generator  # noqa: PLC0415

    class _Shape(Generator):
        def literal_sql(self, expression: Any) -> str:
            return "?"

    dialect = Dialect.get_or_raise(None)
    return lambda: _Shape(dialect=dialect)


class Causes:
    """The cause key of each finding of one table. Built once per set of findings: commit-level
    keys need to know which versions have a reorder, storms which hotspots exist."""

    def __init__(self, history: History, findings: list[Finding]):
        self.history = history
        self.reordered = {
            f.version for f in findings if f.kind == FindingKind.WRITE_SERIALIZABLE_REORDER
        }
        self.hotspots = [
            (contention_key(f), f) for f in findings if f.kind == FindingKind.CONFLICT_HOTSPOT
        ]
        # A commit's key per version: a stale commit is asked once per finding of it (a
        # never-existed snapshot, a reorder and a missed conflict at the same version).
        self._commit_keys: dict[int, CauseKey] = {}

    def key_of(self, finding: Finding) -> CauseKey:
        kind = finding.kind
        if kind in COMMIT_KINDS:
            return self.commit_key(finding.version)
        if kind == FindingKind.ISOLATION_SETTING_IGNORED:
            details = finding.details or {}
            return setting_key(str(details.get("engine", "")), str(details.get("value", "")))
        if kind == FindingKind.CONFLICT_HOTSPOT:
            return contention_key(finding)
        if kind == FindingKind.RETRY_STORM:
            return self._storm_key(finding)
        if kind == FindingKind.CONCURRENT_METADATA_CHANGE:
            winner = self.history.summary(finding.version)
            return CauseKey(
                IncidentCause.METADATA_RACE,
                writer_text(writer_parts(winner)),
                operation_label(winner),
            )
        if kind in (FindingKind.MISSING_DATA_FILE, FindingKind.VACUUM_BROKE_SNAPSHOT):
            return CauseKey(IncidentCause.FILES_MISSING, scope=_deleted_by(finding))
        if kind in INTEGRITY_KINDS or kind == FindingKind.DV_INTEGRITY:
            summary = self.history.summary(finding.version)
            engine = writer_parts(summary)["engine"]
            return CauseKey(IncidentCause.FAULTY_LOG_WRITER, writer=f"engine={engine}")
        if kind == FindingKind.DUPLICATE_KEY:
            columns = (finding.witness or {}).get("key_columns") or []
            return CauseKey(IncidentCause.DUPLICATE_KEYS, scope=",".join(map(str, columns))[:200])
        cause = _TABLE_CAUSES.get(kind)
        if cause is not None:
            return CauseKey(cause)
        return CauseKey(IncidentCause.OTHER, operation=str(kind)[:64])

    def commit_key(self, version: int) -> CauseKey:
        """What let the commit at `version` through, and who wrote what where."""
        key = self._commit_keys.get(version)
        if key is None:
            key = self._commit_keys[version] = self._commit_key(version)
        return key

    def _commit_key(self, version: int) -> CauseKey:
        summary = self.history.summary(version)
        value = self.history.properties_at(max(version - 1, 0)).get(ISOLATION_PROPERTY)
        if (
            summary is not None
            and value is not None
            and not setting_understood(summary.engine, str(value))
        ):
            return setting_key(str(summary.engine), str(value))
        cause = (
            IncidentCause.STALE_WRITE_WRITE_SERIALIZABLE
            if version in self.reordered and not unchecked_by_engine(summary)
            else IncidentCause.STALE_WRITE_UNCHECKED
        )
        return CauseKey(
            cause,
            writer_text(writer_parts(summary)),
            operation_label(summary),
            scope_label(summary),
        )

    def _storm_key(self, finding: Finding) -> CauseKey:
        """A storm belongs to the hotspot of its operation whose partitions it touched; with
        several, the busiest; with none, it is a contention of its own."""
        witness = finding.witness or {}
        operation = str(witness.get("operation", ""))
        where = set(str(witness.get("partitions", "")).split(", "))
        best: tuple[int, str, CauseKey] | None = None
        for key, hotspot in self.hotspots:
            details = hotspot.details or {}
            if operation not in details.get("operations", []):
                continue
            partition = str(details.get("partition", ""))
            if partition != WHOLE_TABLE and partition not in where and WHOLE_TABLE not in where:
                continue
            rank = (-int(details.get("pairs", 0) or 0), key.id, key)
            if best is None or rank[:2] < best[:2]:
                best = rank
        if best is not None:
            return best[2]
        return CauseKey(IncidentCause.CONTENTION, operation=operation[:100])


def unchecked_by_engine(summary: CommitSummary | None) -> bool:
    """delta-rs checks no concurrent commit for a DELETE without condition or an overwrite
    without predicate, whatever the isolation level: what let such a stale commit through is
    the engine, even where WriteSerializable would have let it through too."""
    return summary is not None and summary.engine == Engine.DELTA_RS and is_unconditional(summary)


def setting_key(engine: str, value: str) -> CauseKey:
    """The isolation setting an engine ignores; its finding and the commits it let through."""
    return CauseKey(
        IncidentCause.ISOLATION_SETTING_IGNORED,
        writer=f"engine={engine[:100]}",
        scope=f"{ISOLATION_PROPERTY}={value[:200]}",
    )


def contention_key(hotspot: Finding) -> CauseKey:
    """Contention between two operations, whichever partitions they meet in."""
    operations = (hotspot.details or {}).get("operations") or []
    return CauseKey(IncidentCause.CONTENTION, operation=" / ".join(map(str, operations))[:200])


def _deleted_by(finding: Finding) -> str:
    witness: dict[str, Any] = finding.witness or {}
    vacuum = witness.get("deleted_by") or witness.get("vacuum")
    if isinstance(vacuum, dict) and isinstance(vacuum.get("start"), int):
        return f"VACUUM at v{vacuum['start']}"
    return "deleted outside Delta"
