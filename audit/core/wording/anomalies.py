"""Words for the anomalies: history orders no serial execution produces (facts: anomalies/)."""

from __future__ import annotations

from audit.core.facts.anomalies import Hotspot, NeverExistedFacts, ReorderFacts
from audit.core.vocab import Operation, ReadVersionFact
from audit.core.wording import FindingText, operation_name, versions_listed

# What a destructive commit should have done to rows it did not see, by operation.
_SHOULD_HAVE = {
    Operation.DELETE: "should have deleted",
    Operation.UPDATE: "should have updated",
    Operation.MERGE: "should have matched",
}


def reorder_text(facts: ReorderFacts) -> FindingText:
    op = operation_name(facts.operation)
    names = ", ".join(facts.exception_names)
    listed = versions_listed(facts.winners)
    fact = (
        ""
        if facts.read_version_fact == ReadVersionFact.RECORDED
        else f" (read version {facts.read_version_fact})"
    )
    return FindingText(
        f"{op} at v{facts.version} is serialized before blind append(s) v{listed} "
        f"that the history shows before it; Serializable would have raised {names}",
        f"Version {facts.version} ({op}) read version {facts.read_version}{fact} and ran under "
        f"WriteSerializable. While it ran, version(s) {listed} appended files into what it read "
        f"({facts.read_scope}) without reading the table (blind appends). "
        f"WriteSerializable lets a commit ignore blind appends, so it committed; under Serializable "
        f"it would have failed with {names}. The table therefore behaves as if "
        f"v{facts.version} ran before v{listed}, although the history shows it after them: rows those "
        "appends wrote were not seen by it (not deleted, not updated, not matched). "
        "Set delta.isolationLevel = 'Serializable' to make such commits fail instead.",
    )


def never_existed_text(facts: NeverExistedFacts) -> FindingText:
    op = operation_name(facts.operation)
    listed = versions_listed(facts.added_by)
    verb = _SHOULD_HAVE.get((facts.operation or "").upper(), "should have replaced")
    predicate = facts.predicate
    condition = f"matching {predicate!r}" if predicate else "(it had no condition, so every row)"
    rows = (
        f"{facts.row_count} such row(s) were found in {facts.file_count} file(s)."
        if facts.confirmed
        else f"Rows were not confirmed in the data: {facts.note}"
    )
    how = (
        f"it read version {facts.read_version} ({facts.read_version_fact})"
        if facts.read_version is not None
        else "its read version is unknown"
    )
    return FindingText(
        f"v{facts.version} ({op}) left alive rows {condition} that v{listed} added; "
        f"by the history's order it {verb} them",
        f"Version {facts.version} ({op}) committed after version(s) {listed}, so by the history it "
        f"{verb} the rows they added {condition}. But {how}, before those versions, and their "
        f"files are still live right after v{facts.version}: the table at v{facts.version} holds rows "
        f"that no serial execution of the history produces. {rows}",
    )


def hotspot_text(spot: Hotspot) -> FindingText:
    ser = spot.serializable_conflicts
    ws = spot.write_serializable_conflicts
    likely = (
        ", ".join(f"{name} ({count})" for name, count in sorted(spot.exceptions.items())) or "none"
    )
    return FindingText(
        f"{spot.pairs} concurrent {' / '.join(spot.operations)} pairs overlapped in "
        f"{spot.partition}; {ser} would conflict under Serializable, {ws} under WriteSerializable",
        f"Between v{spot.first_version} and v{spot.last_version}, {spot.pairs} pairs of "
        f"{' and '.join(spot.operations)} commits ran at the same time on {spot.partition}. "
        f"Re-running Delta's conflict checks: {ser} would fail under Serializable and {ws} under "
        f"WriteSerializable. Exceptions writers are likely to see: {likely}. Make the commands' "
        "conditions name disjoint partitions, or partition by the columns they filter on.",
    )
