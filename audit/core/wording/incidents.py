"""Words for incidents: the headline, the explanation, the damage note, and what each
statement does and does not do (facts: audit/core/incidents/)."""

from __future__ import annotations

from typing import Any

from audit.core.vocab import FindingKind, IncidentCause

_LET_THROUGH = {
    IncidentCause.STALE_WRITE_WRITE_SERIALIZABLE: (
        "WriteSerializable let it through",
        "WriteSerializable let it through: it exempts blind appends from the conflict check",
    ),
    IncidentCause.STALE_WRITE_UNCHECKED: (
        "its engine's conflict check let it through",
        "its engine's own conflict check let it through (Delta's reference rules reject it)",
    ),
}
_UNCHECKED_DELTA_RS = (
    "delta-rs checks no concurrent commit for it",
    "delta-rs checks no concurrent commit for a DELETE without condition or an overwrite "
    "without predicate, whatever the isolation level",
)


def _let_through(key: Any, writer: dict[str, str]) -> tuple[str, str]:
    unconditional = key.scope == "whole table" and key.operation in ("DELETE", "WRITE (overwrite)")
    engine = writer.get("engine", "")
    if key.cause == IncidentCause.STALE_WRITE_UNCHECKED and unconditional and "delta-rs" in engine:
        return _UNCHECKED_DELTA_RS
    return _LET_THROUGH[key.cause]


def _versions(versions: list[int]) -> str:
    if not versions:
        return "no version"
    if len(versions) == 1:
        return f"v{versions[0]}"
    return f"{len(versions)} versions (v{versions[0]}-v{versions[-1]})"


def _rows(damage: Any) -> str:
    rows = damage.rows_wrong_now
    if rows is None:
        return "rows wrong now: not counted"
    bound = "" if damage.exact else "at least "
    return f"{bound}{rows} row(s) wrong now" if rows else "no row wrong now"


def _count(findings: list[Any], kind: str) -> int:
    return sum(1 for f in findings if f.kind == kind)


def headline(key: Any, findings: list[Any], writer: dict[str, str], damage: Any) -> str:
    """One line: the cause, who, what, where, how often, and the damage."""
    cause = key.cause
    who = writer.get("engine", "an unknown writer")
    if cause in _LET_THROUGH:
        stale = sorted({f.version for f in findings})
        return (
            f"{who} {key.operation} on {key.scope} ran on a stale snapshot at {_versions(stale)}; "
            f"{_let_through(key, writer)[0]}; {_rows(damage)}"
        )
    if cause == IncidentCause.ISOLATION_SETTING_IGNORED:
        symptoms = sorted(
            {f.version for f in findings if f.kind != FindingKind.ISOLATION_SETTING_IGNORED}
        )
        went = f"; {len(symptoms)} of its commits went past conflicts meanwhile" if symptoms else ""
        return f"{who} ignores {key.scope}{went}; {_rows(damage)}"
    if cause == IncidentCause.CONTENTION:
        hotspots = _count(findings, FindingKind.CONFLICT_HOTSPOT)
        storms = _count(findings, FindingKind.RETRY_STORM)
        parts = []
        if hotspots:
            parts.append(f"{hotspots} hotspot(s)")
        if storms:
            parts.append(f"{storms} retry storm(s)")
        return f"{key.operation} commits keep colliding: {' and '.join(parts)}"
    if cause == IncidentCause.FILES_MISSING:
        return f"data files missing from storage ({key.scope}): {_rows(damage)}"
    if cause == IncidentCause.FAULTY_LOG_WRITER:
        kinds = ", ".join(sorted({str(f.kind) for f in findings}))
        return (
            f"{key.writer.removeprefix('engine=')} wrote a log that breaks the protocol ({kinds})"
        )
    if cause == IncidentCause.METADATA_RACE:
        return f"commits ran across {len(findings)} metadata or protocol change(s) by {who}"
    if cause == IncidentCause.DUPLICATE_KEYS:
        return f"live rows share a key on ({key.scope}): {_rows(damage)}"
    return str(findings[0].summary)


def explanation(key: Any, findings: list[Any], writer: dict[str, str], damage: Any) -> str:
    """What happened, what let it through, and where the statements below take it."""
    cause = key.cause
    symptoms = ", ".join(f"{kind} x{n}" for kind, n in sorted(_kinds(findings).items()))
    who = ", ".join(f"{k} {v}" for k, v in writer.items()) or "not recorded"
    if cause in _LET_THROUGH:
        text = (
            f"One cause, {len(findings)} finding(s) ({symptoms}): a writer ({who}) ran "
            f"{key.operation} on {key.scope} from a snapshot older than the commits that landed "
            f"while it ran, and {_let_through(key, writer)[1]}. By the history's order it "
            "should have deleted, replaced or changed rows those commits added."
        )
    elif cause == IncidentCause.ISOLATION_SETTING_IGNORED:
        text = (
            f"One cause, {len(findings)} finding(s) ({symptoms}): the table says {key.scope}, "
            f"which {writer.get('engine', 'a writer')} does not parse, so its commits ran under "
            "another isolation level than the table asks for."
        )
    else:
        # The table-level finding that names the cause says it best (a hotspot, a setting).
        head = next((f for f in findings if f.kind in _HEADS), findings[0])
        text = f"One cause, {len(findings)} finding(s) ({symptoms}). {head.explanation}"
    return f"{text} Damage: {_rows(damage)}. {damage.note}".strip()


# The table-level kinds that name a cause their incident's other findings follow from.
_HEADS = frozenset(
    {
        FindingKind.ISOLATION_SETTING_IGNORED,
        FindingKind.CONFLICT_HOTSPOT,
        FindingKind.MISSING_DATA_FILE,
    }
)


def _kinds(findings: list[Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for f in findings:
        counts[str(f.kind)] = counts.get(str(f.kind), 0) + 1
    return counts


_NOTES = {
    "exact": "Counted in the data files, deletion vectors applied.",
    "no_rows": "This cause changes no row of the table.",
    "unknown": "The log does not say which rows this left wrong; the count is unknown.",
    "not_read": "Data files were not read (--no-data): the rows are not counted.",
    "credential_paths": (
        "Files whose log path carries a credential (a signed query or a user name and "
        "password) are left out of the statements: they would repeat it."
    ),
    "unreadable": "Some files could not be read (gone, outside the allowed roots, or a "
    "deletion vector unreadable): the count is a lower bound.",
    "rewritten": "A later commit rewrote some of the files (their rows may live on in its "
    "files): the count is a lower bound.",
    "merge": "A MERGE's matches depend on its source, which the log does not keep: the rows "
    "counted are those matching its target condition, an upper bound of those it missed.",
    "too_many": "Only the first files were read: the count is a lower bound.",
    "deletion_vectors": "Rows brought back by a deletion vector are counted in the finding's "
    "witness, not here: the count is a lower bound.",
    "missing": "The rows of the missing files the latest version references cannot be read "
    "(reading the latest version fails).",
    "missing_old": "Only older versions reference the missing files: the latest version "
    "reads, time travel to those versions fails.",
    "duplicates": "Live rows beyond the first of each duplicated key.",
    "bound": "Some counts were not known: the number is a lower bound.",
}


def damage_note(*codes: str) -> str:
    return " ".join(_NOTES[c] for c in codes)


# --------------------------------------------------------------------------- statements

_STATEMENTS: dict[str, tuple[str, str]] = {
    "repair_files": (
        "Takes out of the table, in one commit, exactly the rows the stale commit(s) {versions} "
        "should have deleted or rewritten: {files} file(s) the concurrent commits added are "
        "removed, and those that also hold rows it should have kept are replaced by a copy "
        "of those rows. It first checks that each file is still live, and stops otherwise.",
        "Does not re-run the stale commit, touch rows written after it, rows copied into files "
        "rewritten later, or older versions (time travel still shows them); the removed files "
        "stay in storage until VACUUM.",
    ),
    "repair_update": (
        "Rewrites, in one commit, the rows the stale UPDATE(s) {versions} missed, with the "
        "values that UPDATE gave the rows it did see ({assignments}), in {files} file(s).",
        "Does not apply assignments the log and the data cannot show (only constants derived "
        "from the UPDATE's own rewrite), nor touch rows written after it or older versions.",
    ),
    "repair_delete_sql": (
        "Deletes the rows of the named files that match the stale commit's condition (every "
        "row when it had none): the rows it should have deleted or replaced.",
        "Does not re-run the stale commit or touch other files; needs an engine whose DELETE "
        "accepts the file metadata column (_metadata) in its condition. Older versions keep "
        "the rows.",
    ),
    "repair_update_sql": (
        "Applies the stale UPDATE's assignments ({assignments}) to the rows of the named files "
        "that match its condition.",
        "Does not apply assignments that are not constants; needs an engine whose UPDATE "
        "accepts the file metadata column (_metadata) in its condition.",
    ),
    "deltalake_cannot": (
        "",
        "No deltalake repair is given: deltalake opens no table whose readers need deletion "
        "vectors.",
    ),
    "inspect_rows": (
        "Shows the {rows} wrong row(s) at v{version}: the rows of the named files the stale "
        "commit should have changed.",
        "Changes nothing; does not show rows copied into files rewritten after the stale commit.",
    ),
    "restore": (
        "Restores the table to v{version}, the last version whose files can all be read.",
        "Does not keep the commits after v{version}: re-run them. To keep them and drop only "
        "the missing files' rows, run FSCK REPAIR TABLE (Spark) or DeltaTable.repair() "
        "(deltalake) instead. Does not bring the missing files back.",
    ),
    "inspect_missing": (
        "Lists the files the latest version references that storage no longer has.",
        "Changes nothing.",
    ),
    "history": (
        "Shows the table's history from v{version}: who committed what, and from which version.",
        "Changes nothing.",
    ),
    "serializable": (
        "Sets the table to Serializable ({spelling}, a spelling every writer of this table "
        "parses): a commit whose read scope another commit appended to, blind or not, fails "
        "and retries instead of committing on a stale snapshot.",
        "Does not repair rows already wrong; writers then see more conflicts to retry.",
    ),
    "checked_delete": (
        "Defines the form the job's DELETE of every row should take: with a predicate that "
        "matches every row, delta-rs checks the commits that landed while it ran and fails "
        "(retry it) instead of leaving their rows alive. Nothing runs until it is called.",
        "Does not repair rows already wrong; calling it deletes every row of the table.",
    ),
    "checked_overwrite": (
        "Defines the form the job's overwrite should take: with a predicate (replaceWhere), "
        "delta-rs checks the commits that landed while it ran and fails (retry it) instead of "
        "leaving their rows alive. Nothing runs until it is called with the job's data.",
        "Does not repair rows already wrong, nor retry a failed overwrite for the job.",
    ),
    "setting_spelling": (
        "Sets delta.isolationLevel to {spelling}, the spelling of the same level that every "
        "writer of this table parses.",
        "Does not repair rows already wrong, nor change what commits already did.",
    ),
    "deletion_vectors": (
        "Turns on deletion vectors: on Databricks Runtime 14.2+ (row-level concurrency), two "
        "writers of one file conflict only when they change the same rows.",
        "Does not help other engines, and does not separate writers of the same rows: "
        "partition by the column they filter on, or schedule them apart.",
    ),
    "in_commit_timestamps": (
        "Turns on in-commit timestamps: TIMESTAMP AS OF then resolves by the time each "
        "commit recorded, not by its file's modification time.",
        "Does not correct lookups before the version it takes effect at.",
    ),
    "vacuum_dry": (
        "Lists the files VACUUM would delete: files no version within the retention references.",
        "Changes nothing; files younger than the retention are not listed.",
    ),
    "vacuum": (
        "Deletes the files no version within the table's retention references, orphans among them.",
        "Does not delete files younger than the retention, and makes versions older than the "
        "retention unreadable (time travel).",
    ),
    "duplicates": (
        "Lists each key held by more than one live row, with its count.",
        "Changes nothing; which row of a key to keep is yours to decide.",
    ),
}


def statement_words(name: str, **facts: Any) -> tuple[str, str]:
    does, does_not = _STATEMENTS[name]
    return does.format(**facts), does_not.format(**facts)
