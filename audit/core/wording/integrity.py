"""Words for the log-integrity findings (facts: integrity/checks.py)."""

from __future__ import annotations

from audit.core.model import Protocol
from audit.core.storage.roots import shown_path
from audit.core.wording import FindingText


def protocol_description(protocol: Protocol) -> str:
    """The table's protocol as the finding names it (also kept in its witness)."""
    return (
        f"reader {protocol.min_reader_version} / writer {protocol.min_writer_version}"
        f" features {sorted(set(protocol.writer_features or []))}"
    )


def duplicate_active_text(version: int, paths: list[str], earlier: list[int]) -> FindingText:
    return FindingText(
        f"v{version} added {len(paths)} file(s) already active without removing them, "
        f"e.g. {shown_path(paths[0])}",
        f"Version {version} has add actions for path(s) that were already part of the table "
        "and that it did not remove first (added at "
        + (", ".join(f"v{v}" for v in earlier) if earlier else "the same commit or the checkpoint")
        + "). A retried or rebased commit that replays its actions produces this: readers "
        "that follow the log's changes (streaming, change data feed) see those rows twice, "
        "and a second deletion vector on one path makes two logical files of one file.",
    )


def unknown_remove_text(version: int, paths: list[str]) -> FindingText:
    return FindingText(
        f"v{version} removed {len(paths)} file(s) that were not in the table, e.g. "
        f"{shown_path(paths[0])}",
        f"Version {version} has remove actions for path(s) that no add made active in the "
        "available history (or that an earlier commit already removed). The writer's view of "
        "the table was not the log's: the files it meant to remove may still be live under "
        "another name, so rows it deleted or rewrote can still be read.",
    )


def rewrite_text(
    version: int, operation: str, removed: int, before: int, after: int, source: str
) -> FindingText:
    return FindingText(
        f"{operation} at v{version} claims no data change but turned {before} rows "
        f"into {after} ({source})",
        f"Version {version} ({operation}) marks every action dataChange=false: it says "
        f"it only rearranged rows. The {removed} file(s) it removed held {before} live "
        f"rows (numRecords minus deletion-vector rows) and, by its {source}, what it added "
        f"holds {after}. Rows were {'lost' if after < before else 'duplicated'} by a commit "
        "that streaming readers and change data feed skip, so nobody downstream sees it.",
    )


def metrics_text(
    version: int, operation: str | None, contradictions: dict[str, dict[str, int]]
) -> FindingText:
    said = ", ".join(
        f"{name}={c['reported']} but {c['actions']} action(s)" for name, c in contradictions.items()
    )
    return FindingText(
        f"{operation or 'commit'} at v{version}: operation metrics contradict its actions ({said})",
        f"Version {version} reports operation metrics that its own add/remove actions "
        f"contradict ({said}; deletion-vector updates are accepted under either counting). "
        "Metrics that lie hide what a commit did: a writer that mis-counts may also have "
        "committed a different set of files than it wrote.",
    )


def protocol_violation_text(version: int, protocol: str, problems: list[str]) -> FindingText:
    """`protocol`: the table's protocol as `protocol_description` names it."""
    return FindingText(
        f"v{version} wrote {'; '.join(problems)}",
        f"Version {version} contains actions the table's protocol ({protocol}) does not allow: "
        f"{'; '.join(problems)}. Readers that trust the protocol ignore what they do not "
        "expect (e.g. a deletion vector), so they return rows that were deleted.",
    )
