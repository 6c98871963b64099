"""What an incident left wrong at the latest version, counted from the data when it can be read.

A stale write (a never-existed snapshot) left alive files that concurrent commits added and
that it should have deleted or rewritten. At the latest version the wrong rows are the rows of
those files that are still live and match the stale commit's condition (every row when it had
none), less the rows their deletion vectors delete: read with the witness's machinery, inside
the allowed roots. An UPDATE's missed rows also lack their updated version (`rows_missing`).
The count is exact unless a file could not be read, a later commit rewrote one of the files
(its rows may live on in the rewrite), or the condition is a MERGE's (the join's matches are
not in the log): then it is a bound and the note says which.

Missing files: the rows of files the latest version references and storage no longer has.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from audit.core.conflicts.scope import is_unconditional
from audit.core.cycles import render_partitions
from audit.core.history.summary import History
from audit.core.incidents.model import REPAIR_MARK, Damage, Incident, occurrences
from audit.core.model import AddFile, CommitSummary, Finding, Predicate, partition_key
from audit.core.numbers import log_int
from audit.core.storage.roots import shown_path
from audit.core.vocab import FindingKind, IncidentCause, Operation
from audit.core.wording.incidents import damage_note

# Files read per incident at most; more leave the count a lower bound.
MAX_FILES_READ = 200
# A stale commit whose surviving files were added further back than this is not replayed.
MAX_WINDOW = 100_000
MAX_FILES_SHOWN = 100

_NO_ROWS = frozenset(
    {
        IncidentCause.CONTENTION,
        IncidentCause.COMMIT_TIMES,
        IncidentCause.ORPHAN_FILES,
        IncidentCause.READ_VERSIONS_UNRECORDED,
        IncidentCause.CATALOG_MANAGED,
        IncidentCause.IDENTITY_COLUMN_RACE,
    }
)


@dataclass(slots=True)
class WrongFile:
    """One live file holding rows a stale commit should have deleted or rewritten."""

    path: str  # as the log names it (decoded)
    add: AddFile
    stale_version: int
    predicate: Predicate | None  # the stale commit's condition; None: every row
    wrong: list[int] = field(default_factory=list)  # positions of the wrong live rows
    keep: list[int] = field(default_factory=list)  # positions of the other live rows
    total: int = 0  # rows in the file, deleted ones included


@dataclass(slots=True)
class StaleDamage:
    damage: Damage
    files: list[WrongFile]  # the repair's input: what to take out of which file
    rewritten: list[int]  # versions that rewrote a surviving file after the stale commit


# Path -> the versions that removed it, ascending (`removal_index`).
Removals = dict[str, list[int]]


def removal_index(history: History, findings: Sequence[Finding]) -> Removals:
    """The versions removing each file a never-existed finding's concurrent commits added.

    One walk over the summaries for every incident of a history: the stale-damage questions
    (which of those files survived the stale commit, which later commit rewrote one) are then
    a bisection each, not a walk of the log per finding and per incident.
    """
    wanted: set[str] = set()
    first: int | None = None
    for finding in findings:
        if finding.kind != FindingKind.NEVER_EXISTED_SNAPSHOT:
            continue
        for w in finding.related_versions:
            winner = history.summary(w)
            if winner is None or finding.version - w > MAX_WINDOW:
                continue
            wanted.update(winner.added_paths)
            wanted.update(winner.compacted_paths)
            first = w if first is None else min(first, w)
    index: Removals = {}
    if first is None or not wanted:
        return index
    for s in history.summaries[_index(history, first + 1) :]:
        removed = s.removed_paths_all
        if removed and not removed.isdisjoint(wanted):
            for path in removed.intersection(wanted):
                index.setdefault(path, []).append(s.version)
    return index


def damage_of(
    incident: Incident,
    history: History,
    *,
    check_data: bool = True,
    read_roots: Sequence[str] | None = None,
    removals: Removals | None = None,
) -> StaleDamage:
    """The incident's damage; for stale writes also the files and rows a repair takes out.
    `removals`: `removal_index` of findings including the incident's (None: built here)."""
    cause = incident.key.cause
    stale = [f for f in incident.findings if f.kind == FindingKind.NEVER_EXISTED_SNAPSHOT]
    if stale:
        if removals is None:
            removals = removal_index(history, stale)
        return _stale_damage(incident, history, stale, check_data, read_roots, removals)
    if cause == IncidentCause.FILES_MISSING:
        return StaleDamage(_missing_damage(incident, history), [], [])
    if cause == IncidentCause.DUPLICATE_KEYS:
        return StaleDamage(_duplicate_damage(incident), [], [])
    if cause in _NO_ROWS or _only_log_symptoms(incident):
        return StaleDamage(Damage(note=damage_note("no_rows")), [], [])
    return StaleDamage(
        Damage(rows_extra=None, rows_missing=None, exact=False, note=damage_note("unknown")),
        [],
        [],
    )


def _only_log_symptoms(incident: Incident) -> bool:
    """Reorders and missed conflicts without a never-existed snapshot: the rows they could
    have missed were looked for and none matched (or none survived)."""
    return incident.key.cause in (
        IncidentCause.STALE_WRITE_WRITE_SERIALIZABLE,
        IncidentCause.STALE_WRITE_UNCHECKED,
        IncidentCause.ISOLATION_SETTING_IGNORED,
    )


# --------------------------------------------------------------------------- stale writes


def _stale_damage(
    incident: Incident,
    history: History,
    stale: list[Finding],
    check_data: bool,
    read_roots: Sequence[str] | None,
    removals: Removals,
) -> StaleDamage:
    notes: set[str] = set()
    # A vector that brought deleted rows back names no surviving file: the witness counted them.
    if any((f.witness or {}).get("method") == "deletion_vectors" for f in stale):
        notes.add("deletion_vectors")
    survivors = {f.version: _survivors(history, f, removals) for f in stale}
    live = history.state.files
    rewriters = _rewriters(history, survivors, live, removals)
    rewritten = [
        v for v, stale_versions in sorted(rewriters.items())
        if not _copied_nothing(history, v, stale_versions, check_data, read_roots)
    ]  # fmt: skip
    candidates: list[WrongFile] = []
    for version, paths in sorted(survivors.items()):
        txn = history.summary(version)
        if txn is None:
            continue
        if txn.operation and txn.operation.upper() == Operation.MERGE:
            notes.add("merge")
        adds = [(path, live[path]) for path in paths if path in live]
        if not adds:
            continue  # the condition of a stale commit whose files are all gone is not asked
        predicate = _condition(txn)
        candidates.extend(WrongFile(path, add, version, predicate) for path, add in adds)
    damage = Damage(versions=occurrences(incident))
    if rewritten:
        notes.add("rewritten")
    if not check_data:
        damage.rows_extra = damage.rows_missing = None
        notes.add("not_read")
    else:
        _read(history, candidates, read_roots, notes)
    wrong = [c for c in candidates if c.wrong or not check_data]
    _fill(damage, history, wrong, check_data)
    damage.exact = not notes
    damage.note = damage_note(*sorted(notes)) if notes else damage_note("exact")
    # A path carrying a credential is counted, shown without it, and never put in a statement.
    spoken = [c for c in wrong if shown_path(c.path) == c.path]
    if len(spoken) < len(wrong):
        damage.note += " " + damage_note("credential_paths")
        wrong = spoken
    return StaleDamage(damage, wrong, sorted(rewritten))


def _condition(txn: CommitSummary) -> Predicate | None:
    """The rows the stale commit should have changed: its condition (every row without)."""
    from audit.core.data.witness import effective_predicate  # noqa: PLC0415

    if is_unconditional(txn):
        return None
    predicate = txn.predicate
    if (
        predicate is not None
        and predicate.sql
        and (txn.operation or "").upper() == Operation.MERGE
        and predicate.raw.strip().lower() not in ("", "true", "(true)")
    ):
        # A MERGE's target part, cut from a tree per commit, was most of a contended log's
        # damage: conditions that differ only in literals keep the same conjuncts.
        kept = _template_keeps(predicate.sql)
        if kept is not None:
            return predicate if kept else None
    return effective_predicate(txn)


def _template_keeps(sql: str) -> bool | None:
    """Does the target part of the MERGE condition `sql` keep all its conjuncts (True) or
    none (False)? Answered by its literal template; None when only `sql` itself can say."""
    from audit.core.predicates.sql_templates import literal_template  # noqa: PLC0415

    templated = literal_template(sql)
    return _template_answer(templated[0]) if templated is not None else None


@functools.lru_cache(maxsize=256)
def _template_answer(template: str) -> bool | None:
    """`_template_keeps` of a template: the target part depends on the tree's shape, its
    columns and qualifiers, never on a literal's value; so a template whose sentinels all
    sit in literals answers for every predicate it stands for (a partial cut is left to
    the predicate: its kept conjuncts print its own literals)."""
    from sqlglot import exp  # noqa: PLC0415

    from audit.core.data.witness import merge_target_part  # noqa: PLC0415
    from audit.core.predicates.sql_templates import SENTINEL, template_expression  # noqa: PLC0415

    expression = template_expression(template)
    if expression is None or any(
        SENTINEL.search(str(node.this)) for node in expression.find_all(exp.Identifier)
    ):
        return None
    shape = Predicate(raw=template, sql=template, columns=frozenset())
    part = merge_target_part(shape)
    if part is shape:
        return True
    return False if part is None else None


def _survivors(history: History, finding: Finding, removals: Removals) -> list[str]:
    """The files the commits in `related_versions` added that are live right after the stale
    commit at `finding.version` (the ones it should have deleted or rewritten): those no
    commit after their own and up to the stale one removed."""
    version = finding.version
    txn = history.summary(version)
    added: dict[str, int] = {}
    for w in finding.related_versions:
        winner = history.summary(w)
        if winner is None or version - w > MAX_WINDOW:
            continue
        for path in (*winner.added_paths, *winner.compacted_paths):
            added[path] = w
    if not added or txn is None:
        return []
    alive = []
    for path, added_at in added.items():
        removed_at = removals.get(path, ())
        after = bisect.bisect_right(removed_at, added_at)
        if after == len(removed_at) or removed_at[after] > version:
            alive.append(path)
    return sorted(alive)


def _index(history: History, version: int) -> int:
    return bisect.bisect_left(history.summaries, version, key=lambda s: s.version)


def _rewriters(
    history: History,
    survivors: dict[int, list[str]],
    live: dict[str, AddFile],
    removals: Removals,
) -> dict[int, set[int]]:
    """Versions after a stale commit that removed one of its surviving files while adding
    files (a compaction, an UPDATE of other rows), each with the stale commits whose files it
    removed: their wrong rows may live on in its files. A file counts at the first version
    that removed it after the earliest stale commit."""
    gone = {p: v for v, paths in survivors.items() for p in paths if p not in live}
    if not gone:
        return {}
    start = min(gone.values()) + 1
    hits: dict[int, list[str]] = {}
    for path in gone:
        removed_at = removals.get(path, ())
        first = bisect.bisect_left(removed_at, start)
        if first < len(removed_at):
            hits.setdefault(removed_at[first], []).append(path)
    found: dict[int, set[int]] = {}
    for version in sorted(hits):
        s = history.summary(version)
        if s is not None and (s.added_paths or s.compacted_paths) and not _replaces_all(s):
            found[version] = {gone[p] for p in hits[version]}
    return found


def _copied_nothing(
    history: History,
    version: int,
    stale_versions: set[int],
    check_data: bool,
    roots: Sequence[str] | None,
) -> bool:
    """Did the rewrite at `version` carry none of the wrong rows over? True for a repair this
    module's statements made, or when its files are live and hold no row any of the stale
    commits should have changed (read in the data)."""
    summary = history.summary(version)
    if summary is None:
        return False
    note = (summary.provenance or {}).get("user_metadata") or ""
    if isinstance(note, str) and note.startswith(REPAIR_MARK):
        return True
    live = history.state.files
    added = [*summary.added_paths, *summary.compacted_paths]
    if not check_data or not all(p in live for p in added):
        return False
    for stale_version in stale_versions:
        txn = history.summary(stale_version)
        if txn is None:
            return False
        files = [WrongFile(p, live[p], stale_version, _condition(txn)) for p in added]
        notes: set[str] = set()
        _read(history, files, roots, notes)
        if notes or any(f.wrong for f in files):
            return False
    return True


def _replaces_all(s: CommitSummary) -> bool:
    """A full overwrite removes every row it does not write itself: nothing is copied."""
    return is_unconditional(s) and (s.operation or "").upper() != Operation.DELETE


def _read(
    history: History,
    files: list[WrongFile],
    roots: Sequence[str] | None,
    notes: set[str],
) -> None:
    """Find each file's wrong rows (and the rows to keep) in the data."""
    from audit.core.data import rowfilter, witness  # noqa: PLC0415  (pyarrow when needed)
    from audit.core.data.dv import Loader, Unusable, kept_positions  # noqa: PLC0415
    from audit.core.storage import roots as allowed  # noqa: PLC0415

    opened = witness.DataFiles(history.table_uri, roots)
    vectors = Loader(opened)
    for index, wrong in enumerate(files):
        if index >= MAX_FILES_READ:
            notes.add("too_many")
            break
        metadata = history.metadata_at(wrong.stale_version - 1)
        types = _partition_types(metadata)
        names = rowfilter.name_tree(metadata.schema_string if metadata else None)
        deleted = vectors.get(wrong.add.deletion_vector)
        if isinstance(deleted, Unusable):
            notes.add("unreadable")
            continue
        try:
            hits, total = witness.matching_positions(
                opened, wrong.add, wrong.predicate, types, names, deleted=deleted
            )
        except (rowfilter.Unevaluable, allowed.UriNotAllowed):
            notes.add("unreadable")
            continue
        except Exception:  # noqa: BLE001  (a gone or unreadable file: the count is a bound)
            notes.add("unreadable")
            continue
        wrong.wrong = hits.to_pylist()
        wrong.keep = kept_positions(deleted, total, hits)
        wrong.total = total


def _partition_types(metadata: Any) -> dict[str, str]:
    from audit.core.conflicts.context import partition_types_of  # noqa: PLC0415

    return partition_types_of(metadata) if metadata is not None else {}


def _fill(damage: Damage, history: History, wrong: list[WrongFile], counted: bool) -> None:
    damage.files = [w.path for w in wrong][:MAX_FILES_SHOWN]
    damage.partitions = _partitions(w.add.partition_values for w in wrong)
    if not counted:
        return
    damage.rows_extra = sum(len(w.wrong) for w in wrong)
    # An UPDATE's missed rows are live un-updated, and their updated versions are missing.
    damage.rows_missing = sum(len(w.wrong) for w in wrong if _is_update(history, w.stale_version))


def _is_update(history: History, version: int) -> bool:
    summary = history.summary(version)
    return summary is not None and (summary.operation or "").upper() == Operation.UPDATE


def _partitions(values: Any) -> list[str]:
    keys = {partition_key(v) for v in values if v}
    if not keys:
        return []
    return render_partitions(keys).split(", ")


# --------------------------------------------------------------------------- other causes


def _missing_damage(incident: Incident, history: History) -> Damage:
    """The rows of missing files the latest version still references: gone from every read."""
    live = history.state.files
    paths: set[str] = set()
    complete = True
    for f in incident.findings:
        witness = f.witness or {}
        files = [str(p) for p in witness.get("files") or []]
        paths.update(files)
        complete = complete and witness.get("file_count", len(files)) == len(files)
    referenced = sorted(p for p in paths if p in live)
    rows = [_records(live[p]) for p in referenced]
    known = [r for r in rows if r is not None]
    exact = complete and len(known) == len(rows)
    return Damage(
        rows_extra=0,
        rows_missing=sum(known),
        files=(referenced or sorted(paths))[:MAX_FILES_SHOWN],
        partitions=_partitions(live[p].partition_values for p in referenced),
        versions=occurrences(incident),
        exact=exact,
        note=damage_note(
            "missing" if referenced else "missing_old", *(() if exact else ("bound",))
        ),
    )


def _records(add: AddFile) -> int | None:
    if not add.stats:
        return None
    try:
        stats = orjson.loads(add.stats)
    except orjson.JSONDecodeError:
        return None
    return log_int(stats.get("numRecords")) if isinstance(stats, dict) else None


def _duplicate_damage(incident: Incident) -> Damage:
    extra, exact = 0, True
    for f in incident.findings:
        witness = f.witness or {}
        count = log_int(witness.get("extra_rows"))
        if count is None:
            exact = False
        else:
            extra += count
        exact = exact and not witness.get("truncated")
    return Damage(
        rows_extra=extra,
        rows_missing=0,
        files=sorted(
            {str(p) for f in incident.findings for p in (f.witness or {}).get("files", [])}
        )[:MAX_FILES_SHOWN],
        versions=occurrences(incident),
        exact=exact,
        note=damage_note("duplicates", *(() if exact else ("bound",))),
    )
