"""Every severity rule of the isolation audit, in one place.

Users write alert rules and CI gates (`--fail-on warning|critical`) against these levels, so
the rules are deliberately few and stable:

| kind                          | severity                                                       |
|-------------------------------|----------------------------------------------------------------|
| never_existed_snapshot        | critical when confirmed (rows found in the data files),        |
|                               | warning when only the log shows it (data unread or unreadable) |
| write_serializable_reorder    | warning; critical when a confirmed never_existed_snapshot      |
|                               | at the same version proves the reorder changed what readers saw|
| missed_conflict               | warning (the writer let through a conflict its level forbids)  |
| concurrent_metadata_change    | critical when a data-changing commit committed across a         |
|                               | metadata/protocol change; warning when only non-data commits did|
| conflict_hotspot              | warning when the conflict rate under Serializable reaches       |
|                               | HOTSPOT_WARNING_RATE, info below it                             |
| isolation_setting_ignored     | warning                                                        |
| identity_column_concurrency   | warning                                                        |
| missing_read_version          | info (facts the audit had to derive)                           |
| history_gap                   | warning (commits cleaned up before they were audited)          |
| catalog_managed_log           | info (how far the published log of a catalog-managed table goes)|
| duplicate_active_file,        | critical (the log itself is wrong: rows counted twice, deleted |
| remove_of_unknown_file,       | rows still live, or rows lost by a "no data change" commit)    |
| row_count_changed_by_rewrite  |                                                                |
| metrics_mismatch              | warning (the commit's own report contradicts its actions)      |
| protocol_violation            | warning (readers may ignore what the protocol does not allow)  |
| retry_storm                   | warning (a writer's attempts keep losing conflicts)            |
| orphan_files                  | warning (storage leaked by commits that never landed)          |
| missing_data_file             | critical when the latest version references a missing file     |
|                               | (the table cannot be read now), warning when only older ones do|
| vacuum_broke_snapshot         | critical (a VACUUM deleted files a running transaction read)   |
| timestamps_out_of_order       | warning (TIMESTAMP AS OF resolves to another version)          |
| duplicate_key                 | critical (a declared key held by two live rows)                |
| dv_integrity                  | critical for two live entries of one file or positions past    |
|                               | its records (rows read twice or wrongly); warning for counts   |
|                               | that disagree with the decoded vectors and malformed vectors;  |
|                               | info for vectors over the audit's limits (not checked)         |

The thresholds below are the only tuning knobs.
"""

from __future__ import annotations

from audit.core.vocab import FindingKind, Severity

# A partition / operation pair becomes a conflict_hotspot finding from this many overlapping pairs.
HOTSPOT_MIN_PAIRS = 3
# Share of overlapping pairs that Serializable would reject from which a hotspot is a warning.
HOTSPOT_WARNING_RATE = 0.25


def never_existed_severity(confirmed: bool) -> Severity:
    return Severity.CRITICAL if confirmed else Severity.WARNING


def reorder_severity(confirmed_never_existed: bool) -> Severity:
    # A reorder alone is what WriteSerializable promises; it only hurts readers when the
    # reordered append left rows the history says were deleted or updated.
    return Severity.CRITICAL if confirmed_never_existed else Severity.WARNING


def missed_conflict_severity() -> Severity:
    return Severity.WARNING


def metadata_change_severity(data_changing_survivor: bool) -> Severity:
    # Data written against an old schema/protocol is the dangerous case.
    return Severity.CRITICAL if data_changing_survivor else Severity.WARNING


def hotspot_severity(pairs: int, serializable_conflicts: int) -> Severity:
    rate = serializable_conflicts / pairs if pairs else 0.0
    return Severity.WARNING if rate >= HOTSPOT_WARNING_RATE else Severity.INFO


def hotspot_is_reported(pairs: int) -> bool:
    return pairs >= HOTSPOT_MIN_PAIRS


def isolation_setting_ignored_severity() -> Severity:
    return Severity.WARNING


def identity_concurrency_severity() -> Severity:
    return Severity.WARNING


def derived_fact_severity() -> Severity:
    return Severity.INFO


def history_gap_severity() -> Severity:
    return Severity.WARNING


def catalog_managed_severity() -> Severity:
    return Severity.INFO


_CRITICAL_INTEGRITY = frozenset(
    {
        FindingKind.DUPLICATE_ACTIVE_FILE,
        FindingKind.REMOVE_OF_UNKNOWN_FILE,
        FindingKind.ROW_COUNT_CHANGED_BY_REWRITE,
    }
)


def integrity_severity(kind: str) -> Severity:
    return Severity.CRITICAL if kind in _CRITICAL_INTEGRITY else Severity.WARNING


def retry_storm_severity() -> Severity:
    return Severity.WARNING


def orphan_files_severity() -> Severity:
    return Severity.WARNING


def missing_data_file_severity(latest_broken: bool) -> Severity:
    # The latest version unreadable means every reader fails now; older ones only time travel.
    return Severity.CRITICAL if latest_broken else Severity.WARNING


def vacuum_broke_snapshot_severity() -> Severity:
    return Severity.CRITICAL


def timestamps_out_of_order_severity() -> Severity:
    return Severity.WARNING


_CRITICAL_DV_PROBLEMS = frozenset({"two_live_entries", "beyond_records"})


def dv_integrity_severity(problem: str) -> Severity:
    # Two entries or impossible positions change what readers get; a wrong count only misleads
    # whoever computes row counts from the log.
    # Vectors over the audit's limits say only what was not checked.
    if problem == "vectors_not_decoded":
        return Severity.INFO
    return Severity.CRITICAL if problem in _CRITICAL_DV_PROBLEMS else Severity.WARNING


def duplicate_key_severity() -> Severity:
    return Severity.CRITICAL
