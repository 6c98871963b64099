"""Log-integrity findings: what a log shows about its writers' bugs, from the log alone.

Five kinds, each naming the versions and paths involved (see docs/findings.md):

- `duplicate_active_file`: a path added while already active, with no remove in between (two
  logical files for one path count its rows twice; a data-changing re-add means a retried or
  rebased commit replayed its actions).
- `remove_of_unknown_file`: a remove of a path that is not active at that version.
- `row_count_changed_by_rewrite`: a commit that only rearranges data (every action
  `dataChange=false`: OPTIMIZE, REORG, compaction) whose files hold a different number of live
  rows than the files it replaced, or whose operation metrics say so.
- `metrics_mismatch`: operationMetrics that contradict the commit's own actions.
- `protocol_violation`: an action the table's protocol does not allow.

What the protocol allows, and is therefore never reported:
- remove + add of one path in the same commit, in either line order (a new deletion vector);
- a re-add of an active path with the same deletion vector and `dataChange=false` (PROTOCOL.md:
  "statistics ... from the latest version should replace that from any previous version");
- anything at or before the first available version when log cleanup removed the commits
  before it: the state there comes from the checkpoint, whose files are known but whose
  history is not.

Pure functions over a commit's non-file actions (`Commit`) and one `FileRef` per add and
remove: built from the action dicts digest.py already decoded (the one-shot audit reads every
commit once) or from parsed `AddFile`/`RemoveFile` objects. The checker streams, holding only
the active files.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import itemgetter
from typing import Any

from audit.core import severity as sev
from audit.core.errors import DeltaAuditError
from audit.core.integrity.dv_track import DvTrack
from audit.core.integrity.refs import (
    FileRef,
    IntegrityRecord,
    dv_identity,
    ref_of,
    refs_of_commit,
)
from audit.core.log.replay import path_key
from audit.core.model import Commit, Finding, Protocol, TableState
from audit.core.numbers import log_int, log_version, stats_records
from audit.core.storage.roots import shown_path
from audit.core.vocab import FindingKind, Operation
from audit.core.wording import FindingText
from audit.core.wording import integrity as words

# Paths listed per finding (the count is always complete).
MAX_PATHS = 20
# Findings of one kind per table: a log broken at every commit needs one page, not 1M rows.
MAX_FINDINGS_PER_KIND = 200

# Metric names that count the commit's add / remove actions, per engine and operation.
# Spark: numAddedFiles/numRemovedFiles (DELETE, UPDATE, OPTIMIZE, STREAMING UPDATE),
# numTargetFilesAdded/Removed (MERGE), numFiles (WRITE, CTAS), numRestoredFiles (RESTORE).
# delta-rs: numAddedFiles/numRemovedFiles (WRITE, DELETE, UPDATE, MERGE), numFilesAdded/Removed
# (OPTIMIZE), num_added_files/num_removed_files (older releases).
_ADDED_METRICS = ("numAddedFiles", "numFilesAdded", "numTargetFilesAdded", "num_added_files")
_REMOVED_METRICS = (
    "numRemovedFiles",
    "numFilesRemoved",
    "numTargetFilesRemoved",
    "num_removed_files",
)
# Every metric the metric check may compare with the actions (RESTORE's included).
_FILE_METRICS = frozenset(_ADDED_METRICS + _REMOVED_METRICS + ("numRestoredFiles",))
_WRITE_OPERATIONS = frozenset(
    {
        Operation.WRITE,
        Operation.CREATE_TABLE_AS_SELECT,
        Operation.REPLACE_TABLE_AS_SELECT,
        Operation.CREATE_OR_REPLACE_TABLE_AS_SELECT,
    }
)


@dataclass
class _Commit:
    """One commit's facts the checks share."""

    commit: Commit
    adds: list[FileRef]
    removes: list[FileRef]
    removed_keys: set[str]
    added_keys: dict[str, FileRef]
    metrics: dict[str, Any]
    operation: str | None
    add_keys: list[str]  # path_key of each add, in action order
    remove_keys: list[str]


# A FileRef's path (its first field), for map().
_path_of = itemgetter(0)
_data_change_of = itemgetter(1)


def _dv_rows(dv: dict[str, Any] | None) -> int:
    return log_int((dv or {}).get("cardinality")) or 0


def _metric(metrics: dict[str, Any], name: str) -> int | None:
    value = metrics.get(name)
    # Spark writes metrics as short texts of ASCII digits: what log_int reads as int(value)
    # (up to 18 digits, always in range), without its pattern match.
    if type(value) is str and len(value) < 19 and value.isascii() and value.isdigit():
        return int(value)
    return log_int(value)


def _listed(paths: list[str]) -> list[str]:
    return [shown_path(p) for p in sorted(paths)[:MAX_PATHS]]


@dataclass
class IntegrityChecker:
    """Feed commits in version order with `observe`; read `findings` at the end.

    `base` is the state before the first observed commit (None: unknown, e.g. the checkpoint
    could not be read; removes of paths never seen are then not judged).
    """

    base: TableState | None = None
    findings: list[Finding] = field(default_factory=list)
    # Active files: key -> (the version whose add made it active, -1 for the base; the add).
    live: dict[str, tuple[int, FileRef]] = field(default_factory=dict)
    removed_at: dict[str, int] = field(default_factory=dict)  # path -> version that removed it
    protocol: Protocol | None = None
    _counts: dict[str, int] = field(default_factory=dict)
    _allowed: tuple[Protocol | None, bool, bool, bool] = (None, False, False, False)
    # The protocol that allows every action the checks look at (None: not known yet): an
    # append under it needs no protocol check.
    _permissive: Protocol | None = None

    def __post_init__(self) -> None:
        if self.base is not None:
            self.protocol = self.base.protocol
            for path, add in self.base.files.items():
                self.live[path_key(path)] = (-1, ref_of(add))

    def observe(self, commit: Commit) -> None:
        self.observe_refs(commit, *refs_of_commit(commit))

    def observe_refs(self, commit: Commit, adds: list[FileRef], removes: list[FileRef]) -> None:
        """Check one commit: its non-file actions in `commit`, its files as refs."""
        if commit.protocol is not None:
            self.protocol = commit.protocol
        # Each path's key once a commit: every check below reads them.
        add_keys = list(map(path_key, map(_path_of, adds)))
        if not removes and self._observe_append(commit, adds, add_keys):
            return
        info = commit.commit_info or {}
        metrics = info.get("operationMetrics")
        remove_keys = list(map(path_key, map(_path_of, removes)))
        facts = _Commit(
            commit,
            adds,
            removes,
            set(remove_keys),
            {},
            metrics if isinstance(metrics, dict) else {},
            info.get("operation") if isinstance(info.get("operation"), str) else None,
            add_keys,
            remove_keys,
        )
        self._protocol_checks(commit, adds, removes)
        self._metric_checks(facts)
        replaced = self._remove_checks(facts)
        replaced += self._add_checks(facts)
        if removes:
            self._rewrite_check(facts, replaced)
        live, removed_at, version = self.live, self.removed_at, commit.version
        for key in facts.removed_keys:
            live.pop(key, None)
            removed_at[key] = version
        for key, add in facts.added_keys.items():
            live[key] = (version, add)

    def _observe_append(self, commit: Commit, adds: list[FileRef], keys: list[str]) -> bool:
        """The fast path of a commit that only adds new paths (most of a log): only the
        protocol can object to it. False, having changed nothing, for anything else.

        The full path would find nothing either: no remove to judge, no active or repeated
        path to call a duplicate, no file-count metric to contradict, no rewrite.
        """
        metrics = (commit.commit_info or {}).get("operationMetrics")
        if isinstance(metrics, dict) and not _FILE_METRICS.isdisjoint(metrics):
            return False
        version = commit.version
        entries = dict(zip(keys, zip(repeat(version), adds, strict=False), strict=True))
        live = self.live
        if len(entries) != len(keys) or not live.keys().isdisjoint(entries):
            return False
        if self.protocol is not self._permissive:
            self._protocol_checks(commit, adds, ())
        live.update(entries)
        return True

    # ------------------------------------------------------------------ files

    def _remove_checks(self, facts: _Commit) -> list[FileRef | None]:
        """The live files the commit's removes replace (None when unknown); reports unknown ones."""
        replaced: list[FileRef | None] = []
        unknown: list[str] = []
        for remove, key in zip(facts.removes, facts.remove_keys, strict=True):
            entry = self.live.get(key)
            replaced.append(entry[1] if entry is not None else None)
            if entry is None and not self._removed_concurrently(key, _read_version(facts.commit)):
                unknown.append(remove.path)
        if unknown and self.base is not None:
            self._add(_unknown_remove_finding(facts.commit.version, unknown))
        return replaced

    def _removed_concurrently(self, key: str, read_version: int | None) -> bool:
        """A stale writer removing what a commit it did not see removed: the isolation audit's
        finding (ConcurrentDeleteDelete), not a broken log. Without a read version it cannot be
        told apart, so it is not reported either."""
        removed = self.removed_at.get(key)
        return removed is not None and (read_version is None or removed > read_version)

    def _add_checks(self, facts: _Commit) -> list[FileRef | None]:
        """Adds of active paths: a legal stats refresh replaces a live file; the rest are duplicates."""
        version = facts.commit.version
        replaced: list[FileRef | None] = []
        duplicates: dict[str, int] = {}
        for add, key in zip(facts.adds, facts.add_keys, strict=True):
            if key in facts.added_keys:
                duplicates[add.path] = version  # the same path twice in one commit
            facts.added_keys[key] = add
            entry = self.live.get(key)
            if entry is None or key in facts.removed_keys:
                continue
            added_at, previous = entry
            same_file = dv_identity(previous.deletion_vector) == dv_identity(add.deletion_vector)
            if same_file and not add.data_change:
                replaced.append(previous)  # stats replacement, allowed by the protocol
            else:
                duplicates[add.path] = added_at
        if duplicates:
            self._add(_duplicate_finding(version, duplicates))
        return replaced

    def _rewrite_check(self, facts: _Commit, replaced: list[FileRef | None]) -> None:
        if any(map(_data_change_of, facts.adds)) or any(map(_data_change_of, facts.removes)):
            return
        before = _live_rows(replaced)
        after = _live_rows(facts.adds)
        reported = _metric(facts.metrics, "numOutputRows") if facts.metrics else None
        if before is None:
            return
        if after is not None and after != before:
            self._add(_rewrite_finding(facts, before, after, "file statistics"))
        elif reported is not None and reported != before and facts.operation in _WRITE_OPERATIONS:
            self._add(_rewrite_finding(facts, before, reported, "operation metrics"))

    # ------------------------------------------------------------------ metrics

    def _metric_checks(self, facts: _Commit) -> None:
        commit, metrics = facts.commit, facts.metrics
        if not metrics or _FILE_METRICS.isdisjoint(metrics):
            return  # most commits: nothing that counts files
        # Spark's WRITE `numFiles` is not checked: real Spark tables report more files than they
        # add (files of tasks whose output was dropped), so it contradicts nothing.
        added_names = _ADDED_METRICS + (
            ("numRestoredFiles",) if facts.operation == Operation.RESTORE else ()
        )
        reported = [(n, True) for n in added_names if n in metrics]
        reported += [(n, False) for n in _REMOVED_METRICS if n in metrics]
        if not reported:
            return
        adds, removes = facts.adds, facts.removes
        contradictions: dict[str, dict[str, int]] = {}
        counts: dict[bool, set[int]] | None = None
        for name, is_add in reported:
            value = _metric(metrics, name)
            actions = len(adds) if is_add else len(removes)
            if value is None or value == actions:
                continue  # most metrics count the actions: no need for the other readings
            if counts is None:
                counts = _file_counts(facts)
            if value not in counts[is_add]:
                contradictions[name] = {"reported": value, "actions": actions}
        if contradictions:
            self._add(_metrics_finding(commit.version, facts.operation, contradictions))

    # ------------------------------------------------------------------ protocol

    def _protocol_checks(
        self, commit: Commit, adds: list[FileRef], removes: Sequence[FileRef]
    ) -> None:
        protocol = self.protocol
        if protocol is None:
            return  # a log without a protocol action: nothing to hold actions against
        if self._allowed[0] is not protocol:
            self._allowed = (
                protocol,
                _has_feature(protocol, "deletionVectors", reader=True),
                _has_feature(protocol, "domainMetadata"),
                _has_feature(protocol, "rowTracking"),
            )
        _, dv_ok, domains_ok, row_ids_ok = self._allowed
        if dv_ok and domains_ok and row_ids_ok:
            self._permissive = protocol
            return
        problems: list[str] = []
        paths: list[str] = []
        dv_files = [] if dv_ok else [f.path for f in (*adds, *removes) if f.deletion_vector]
        if dv_files:
            problems.append("deletion vectors without the deletionVectors table feature")
            paths += dv_files
        if commit.domain_metadata and not domains_ok:
            domains = sorted({d.domain for d in commit.domain_metadata})
            problems.append(
                f"domainMetadata ({', '.join(domains)}) without the domainMetadata feature"
            )
        row_ids = [] if row_ids_ok else [a.path for a in adds if a.base_row_id is not None]
        if row_ids:
            problems.append("row ids (baseRowId) without the rowTracking feature")
            paths += row_ids
        # cdc files on an old protocol are not checked: readers that do not read the change
        # feed ignore them, and Delta's own test tables (deltalog-getChanges) carry them.
        if problems:
            self._add(_protocol_finding(commit.version, protocol, problems, paths))

    def _add(self, finding: Finding) -> None:
        count = self._counts.get(finding.kind, 0)
        if count < MAX_FINDINGS_PER_KIND:
            self.findings.append(finding)
        self._counts[finding.kind] = count + 1


def _file_counts(facts: _Commit) -> dict[bool, set[int]]:
    """The file counts a metric may report, for adds (True) and removes (False).

    Engines count a deletion-vector update (remove + add of one path) either as a file
    change or separately (numDeletionVectorsAdded): accept both readings.
    """
    adds, removes = facts.adds, facts.removes
    added_paths, removed_paths = set(facts.add_keys), facts.removed_keys
    return {
        True: {len(adds), len(added_paths - removed_paths), sum(a.data_change for a in adds)},
        False: {
            len(removes),
            len(removed_paths - added_paths),
            sum(r.data_change for r in removes),
        },
    }


def _read_version(commit: Commit) -> int | None:
    return log_version((commit.commit_info or {}).get("readVersion"))


def _has_feature(protocol: Protocol, feature: str, *, reader: bool = False) -> bool:
    if protocol.min_writer_version < 7 or feature not in (protocol.writer_features or []):
        return False
    return not reader or (
        protocol.min_reader_version >= 3 and feature in (protocol.reader_features or [])
    )


def _live_rows(files: Iterable[FileRef | None]) -> int | None:
    """Rows the files hold: numRecords minus the rows their deletion vectors delete."""
    total = 0
    for add in files:
        records = stats_records(add.stats) if add is not None else None
        if add is None or records is None:
            return None
        total += records - _dv_rows(add.deletion_vector)
    return total


# --------------------------------------------------------------------------- findings


def _finding(
    kind: FindingKind,
    version: int,
    text: FindingText,
    *,
    witness: dict[str, Any],
    related_versions: list[int] | None = None,
) -> Finding:
    """An integrity finding: confirmed, since the log's own actions are the evidence."""
    return text.finding(
        kind,
        sev.integrity_severity(kind),
        version,
        related_versions or [],
        confirmed=True,
        witness=witness,
    )


def _duplicate_finding(version: int, duplicates: dict[str, int]) -> Finding:
    earlier = sorted({v for v in duplicates.values() if 0 <= v < version})
    paths = list(duplicates)
    return _finding(
        FindingKind.DUPLICATE_ACTIVE_FILE,
        version,
        words.duplicate_active_text(version, paths, earlier),
        related_versions=earlier,
        witness={
            "paths": _listed(paths),
            "count": len(paths),
            "added_at": {shown_path(p): v for p, v in sorted(duplicates.items())[:MAX_PATHS]},
        },
    )


def _unknown_remove_finding(version: int, paths: list[str]) -> Finding:
    return _finding(
        FindingKind.REMOVE_OF_UNKNOWN_FILE,
        version,
        words.unknown_remove_text(version, paths),
        witness={"paths": _listed(paths), "count": len(paths)},
    )


def _rewrite_finding(facts: _Commit, before: int, after: int, source: str) -> Finding:
    commit = facts.commit
    info = commit.commit_info or {}
    operation = info.get("operation") if isinstance(info.get("operation"), str) else "a rewrite"
    removed = [r.path for r in facts.removes]
    added = [a.path for a in facts.adds]
    return _finding(
        FindingKind.ROW_COUNT_CHANGED_BY_REWRITE,
        commit.version,
        words.rewrite_text(commit.version, operation, len(removed), before, after, source),
        witness={
            "rows_before": before,
            "rows_after": after,
            "source": source,
            "removed_paths": _listed(removed),
            "added_paths": _listed(added),
        },
    )


def _metrics_finding(
    version: int, operation: str | None, contradictions: dict[str, dict[str, int]]
) -> Finding:
    return _finding(
        FindingKind.METRICS_MISMATCH,
        version,
        words.metrics_text(version, operation, contradictions),
        witness={"metrics": contradictions},
    )


def _protocol_finding(
    version: int, protocol: Protocol, problems: list[str], paths: list[str]
) -> Finding:
    proto = words.protocol_description(protocol)
    return _finding(
        FindingKind.PROTOCOL_VIOLATION,
        version,
        words.protocol_violation_text(version, proto, problems),
        witness={"problems": problems, "paths": _listed(paths), "protocol": proto},
    )


# --------------------------------------------------------------------------- entry points


def check_commits(commits: Iterable[Commit], base: TableState | None) -> list[Finding]:
    checker = IntegrityChecker(base)
    for commit in commits:
        checker.observe(commit)
    return checker.findings


def integrity_findings(history: Any) -> list[Finding]:
    """The integrity findings of a full `History`.

    Histories built by `summary.history_from_log` over the whole log were checked while their
    commits were digested (`IntegrityTap.observe_refs`, in the same pass as the summaries);
    others (windows, the Spark path) re-read their commits here.
    The first commit judged is the one after the first available version when log cleanup
    removed earlier commits: the state before it comes from its checkpoint.
    """
    if not history.summaries:
        return []
    if getattr(history, "integrity", None) is not None:
        return list(history.integrity)
    first, last = history.summaries[0].version, history.summaries[-1].version
    try:
        log = history.get_log()
    except DeltaAuditError as err:
        # Not "no findings": a log that cannot be opened was not checked at all.
        raise DeltaAuditError(
            f"log integrity cannot be checked: {err}", table_uri=history.table_uri, cause=err.cause
        ) from err
    tap = IntegrityTap(log, first, dv=False)  # dv_integrity reads its own again
    for _ in tap.observe(log.iter_commits(first, last)):
        pass
    return tap.findings


class IntegrityTap:
    """Checks commits as they stream past (during the history's own parse: no second read)."""

    def __init__(self, log: Any, first: int, *, dv: bool = True):
        self.start = first if first == 0 else first + 1
        base: TableState | None
        if first == 0:
            base = TableState(version=-1, metadata=None, protocol=None, files={})
        else:
            try:
                base = log.snapshot(first)
            except DeltaAuditError:
                base = None
        self.checker = IntegrityChecker(base)
        # What the deletion-vector check needs, on the same walk (integrity/dv_track.py).
        files = base.files if base is not None and dv else None
        lazy = files is not None and not DvTrack.needs_own_start(files)
        self.dv = DvTrack(files.values() if files is not None else None, lazy=lazy)

    def observe(self, commits: Iterable[Commit]) -> Iterator[Commit]:
        for commit in commits:
            self.observe_refs(commit, *refs_of_commit(commit))
            yield commit

    def observe_refs(self, commit: Commit, adds: list[FileRef], removes: list[FileRef]) -> None:
        """One commit of the stream, its files already reduced to refs (summarize.summarize_log)."""
        if commit.version >= self.start:
            checker = self.checker
            # Before the checker moves on: a lazy track starts from its live files.
            self.dv.observe(commit, adds, removes, checker.live)
            checker.observe_refs(commit, adds, removes)

    def replay(self, records: Iterable[IntegrityRecord]) -> None:
        """Observe commits recorded elsewhere (the forked child of parallel.py), in order."""
        for version, info, protocol, domains, adds, removes in records:
            commit = Commit(version, info, protocol=protocol, domain_metadata=domains)
            self.observe_refs(commit, adds, removes)

    @property
    def findings(self) -> list[Finding]:
        return self.checker.findings
