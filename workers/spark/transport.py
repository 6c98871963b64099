"""A unit's commits on their way from a task to the driver, held by column.

Every commit of a split table is sent once from a task and built once on the driver, so this
is the split's main cost over the Python path (docs/spark.md, "Long histories"). Two things
made it slow, one commit at a time: reading a summary's public fields unpacks what the record
holds packed (its metrics and parameters JSON, its paths) and the driver's constructor packed
them again; and asking the audit for each commit's view builds a `CommitAudit` (with its read
scope) for the many commits it never re-checked. Here both travel as columns:

- summaries: the record's own slots (`CommitSummary.slot_values`), one list per slot (values
  several commits share, such as facts dicts, partitions and operations, are pickled once);
  the driver sets them back with one generated assignment per slot, no unpacking;
- audits: version, read version and its fact per commit, plus the views of the re-checked
  commits only; the driver builds `serialize.AuditedCommit`s from them as storage reads them.

Django-free; runs in executors (shipped in the job's zip, archive.JOB_MODULES).
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import repeat
from operator import attrgetter
from typing import Any

from audit.core import serialize
from audit.core.model import EMPTY_SET, CommitSummary
from audit.core.vocab import ReadVersionFact

SLOTS: tuple[str, ...] = tuple(CommitSummary.__slots__)
# The record's packed file paths (storage needs none; they are most of a big commit's bytes).
# compacted_paths live among the rare fields: dropped through their setter (see _without_paths).
PATH_SLOTS = frozenset({"_removed_paths", "_removed_paths_all", "_added_paths"})
_RARE_SLOT = "_rare"
assert PATH_SLOTS | {_RARE_SLOT} <= set(SLOTS), "CommitSummary's packed layout changed"
_GETTERS = tuple(attrgetter(name) for name in SLOTS)
_FACTS = tuple(ReadVersionFact)
_FACT_CODE = {fact: i for i, fact in enumerate(_FACTS)}


# --------------------------------------------------------------------------- summaries


def summary_columns(summaries: list[CommitSummary], paths: bool) -> list[list[Any] | None]:
    """One list per slot (None: a path slot left out, every value None)."""
    columns: list[list[Any] | None] = []
    for name, get in zip(SLOTS, _GETTERS, strict=True):
        if not paths and name in PATH_SLOTS:
            columns.append(None)
        else:
            columns.append(list(map(get, summaries)))
    if not paths:
        rare = columns[SLOTS.index(_RARE_SLOT)]
        assert rare is not None
        for i, packed in enumerate(rare):
            if packed is not None and summaries[i].compacted_paths:
                rare[i] = _without_paths(summaries[i])
    return columns


def _without_paths(summary: CommitSummary) -> Any:
    """The rare fields' packing of `summary` without its compacted paths (a copy's, through
    the public setter: the packing stays commit_record's business)."""
    copy = CommitSummary.from_slots(summary.slot_values())
    copy.compacted_paths = EMPTY_SET
    return getattr(copy, _RARE_SLOT)


def _slot_builder() -> Any:
    """`build(columns)`: the summaries of `summary_columns`' lists. One assignment per slot in
    generated code: `from_slots`' loop of setattr calls took longer than the constructor."""
    names = [f"v{i}" for i in range(len(SLOTS))]
    body = "".join(f"        s.{slot} = {v}\n" for slot, v in zip(SLOTS, names, strict=True))
    source = (
        "def build(columns):\n"
        "    out = []\n"
        "    append = out.append\n"
        f"    for {', '.join(names)}, in zip(*columns):\n"
        "        s = new(cls)\n"
        f"{body}"
        "        append(s)\n"
        "    return out\n"
    )
    namespace: dict[str, Any] = {"new": CommitSummary.__new__, "cls": CommitSummary}
    exec(compile(source, "<transport.build>", "exec"), namespace)  # noqa: S102  (our own text)
    return namespace["build"]


_build = _slot_builder()


def summaries_from_columns(columns: list[list[Any] | None]) -> list[CommitSummary]:
    """The driver's side of `summary_columns`."""
    if not any(c for c in columns):
        return []
    return _build([repeat(None) if c is None else c for c in columns])


# --------------------------------------------------------------------------- audits


def audit_columns(commits: Mapping[int, Any], lo: int | None, hi: int | None) -> dict[str, Any]:
    """What storage reads of the audits of versions [lo, hi] (None: all), by column: every
    commit's version, read version, its fact and isolation level; concurrent versions,
    verdicts and truncation only for the re-checked commits (the others have none)."""
    by_column = getattr(commits, "by_column", None)
    if by_column is not None:
        versions, reads, facts, isolation, checked = by_column()
    else:  # any other mapping: every view read (tests, older results)
        views = list(commits.values())
        versions = [a.version for a in views]
        reads = [a.read_version for a in views]
        facts = [a.read_version_fact for a in views]
        isolation = [a.isolation_level for a in views]
        checked = {a.version: a for a in views}
    keep = [
        i for i, v in enumerate(versions) if (lo is None or lo <= v) and (hi is None or v <= hi)
    ]
    if len(keep) == len(versions):
        keep = None
    pick = (lambda col: list(col)) if keep is None else (lambda col: [col[i] for i in keep])
    windows = {
        v: (list(a.concurrent_versions), dict(a.verdicts), a.window_truncated)
        for v, a in checked.items()
        if (lo is None or lo <= v) and (hi is None or v <= hi)
    }
    return {
        "versions": pick(versions),
        "read_versions": pick(reads),
        "facts": bytes(_FACT_CODE[ReadVersionFact(f)] for f in pick(facts)),
        "isolation": pick(isolation),
        "windows": {v: w for v, w in windows.items() if w != ([], {}, False)},
    }


def audits_from_columns(columns: dict[str, Any]) -> list[serialize.AuditedCommit]:
    """The driver's side of `audit_columns` (in the task's order)."""
    windows = columns["windows"]
    out = []
    for version, read, fact, isolation in zip(
        columns["versions"], columns["read_versions"], columns["facts"], columns["isolation"],
        strict=True,
    ):  # fmt: skip
        concurrent, verdicts, truncated = windows.get(version) or ([], {}, False)
        out.append(
            serialize.AuditedCommit(
                version, read, _FACTS[fact], isolation, concurrent, verdicts, truncated
            )
        )
    return out


def slice_columns(columns: Any, start: int, stop: int) -> Any:
    """Rows [start, stop) of summary columns or audit columns (the result rows' pieces)."""
    if isinstance(columns, dict):
        versions = columns["versions"][start:stop]
        kept = set(versions)
        return {
            "versions": versions,
            "read_versions": columns["read_versions"][start:stop],
            "facts": columns["facts"][start:stop],
            "isolation": columns["isolation"][start:stop],
            "windows": {v: w for v, w in columns["windows"].items() if v in kept},
        }
    return [None if c is None else c[start:stop] for c in columns]


def count(columns: Any) -> int:
    """How many commits summary or audit columns hold."""
    if isinstance(columns, dict):
        return len(columns["versions"])
    return next((len(c) for c in columns if c is not None), 0)
