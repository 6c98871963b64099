"""Summarising a run of commits in version order, extending the config timelines as they go.

The lower half of the history: `summary` (a whole table's `History`) and `parallel` (the same
run split over two processes) both build on it, so their imports run one way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from audit.core.history.commit_summary import (
    effective_isolation_level,
    file_facts_of,
    summarize_commit,
    summarize_digest,
)
from audit.core.history.digest import Interner, digest_refs
from audit.core.integrity.refs import FileRef, refs_of_commit
from audit.core.log import DeltaLog, iter_commit_files, parse_commit, set_file_time
from audit.core.model import Commit, CommitSummary, Metadata, Protocol
from audit.core.vocab import ReadVersionFact

# Receives each commit summarised, its files as integrity refs (integrity.IntegrityTap).
CommitSink = Callable[[Commit, list[FileRef], list[FileRef]], None]

# The versions at which a metaData / protocol action took effect, ascending, with the value.
MetadataTimeline = list[tuple[int, Metadata]]
ProtocolTimeline = list[tuple[int, Protocol]]


def summarize_log(
    log: DeltaLog,
    start: int | None,
    end: int | None,
    metadata_timeline: MetadataTimeline,
    protocol_timeline: ProtocolTimeline,
    interner: Interner | None = None,
    sink: CommitSink | None = None,
) -> list[CommitSummary]:
    """`summarize_commits` over the commit files start..end, without building file objects.

    Each file goes through `digest_refs`; the rare one it declines is parsed exactly by
    `parse_commit`, which also raises the error naming a malformed line. `sink` gets every
    commit with its files as integrity refs, from this same parse.
    """
    store, listing = log.store, log.listing
    interner = interner or Interner(share_dicts=True)
    summaries: list[CommitSummary] = []
    append = summaries.append
    sizes = listing.commit_sizes
    for version, data in iter_commit_files(store, listing, start, end):
        sizes[version] = len(data)
        digested = digest_refs(version, data, interner)
        if digested is None:
            commit = parse_commit(version, data)
            files = file_facts_of(commit, interner)
            if sink is not None:
                sink(commit, *refs_of_commit(commit))
        else:
            commit, files, adds, removes = digested
            if sink is not None:
                sink(commit, adds, removes)
        set_file_time(store, commit, listing)
        if commit.metadata is not None:
            metadata_timeline.append((version, commit.metadata))
        if commit.protocol is not None:
            protocol_timeline.append((version, commit.protocol))
        metadata = metadata_timeline[-1][1] if metadata_timeline else None
        summary = summarize_digest(
            commit, files, metadata.configuration if metadata else {}, interner
        )
        # Most commits read the commit before: hold that version's int, not a copy (28 B).
        if summaries and summary.read_version == summaries[-1].version:
            summary.read_version = summaries[-1].version
        append(summary)
    return summaries


def rederive_isolation(
    summaries: Iterable[CommitSummary], properties: dict[str, str], interner: Interner
) -> None:
    """Re-derive the isolation level of summaries built without the table's properties.

    For summaries made before the configuration in force was known (a range summarised apart
    from the commits before it): the same rule `summarize_digest` applies.
    """
    for summary in summaries:
        if summary.facts["isolation_level"] != ReadVersionFact.RECORDED:
            level = effective_isolation_level(summary.engine, properties)
            summary.isolation_level = interner.text(level)
            # A new dict: the summaries of a log share their facts dicts (Interner).
            summary.facts = {
                **summary.facts,
                "isolation_level": ReadVersionFact.DERIVED if level else ReadVersionFact.UNKNOWN,
            }


def summarize_commits(
    commits: Iterable[Commit],
    metadata_timeline: MetadataTimeline,
    protocol_timeline: ProtocolTimeline,
) -> Iterator[CommitSummary]:
    """Summarise commits in version order, extending the config timelines as they change."""
    interner = Interner()
    for commit in commits:
        if commit.metadata is not None:
            metadata_timeline.append((commit.version, commit.metadata))
        if commit.protocol is not None:
            protocol_timeline.append((commit.version, commit.protocol))
        # The configuration a commit's writer saw is the one before it (it read an earlier
        # version); a commit that sets the property itself is judged by the new value.
        metadata = metadata_timeline[-1][1] if metadata_timeline else None
        yield summarize_commit(commit, metadata.configuration if metadata else {}, interner)
