"""What the deletion-vector integrity check needs of a log, gathered on the history's own read.

anomalies/dv_integrity.py judges a log's deletion vectors: it keeps the logical files live
after each commit (a file is its path and its vector), decodes the vectors commits add and
compares them with what the log says. The bookkeeping needs only each commit's actions, which
the history's read already walks (`IntegrityTap`, beside the log-integrity checks): `DvTrack`
does it there, so the one-shot audit does not read and parse the whole log a second time.
Decoding needs the audit's own loader (its roots and limits), so the track keeps, in the
order the check meets them, the items it will judge (`DvItem`), and the judge replays them.

Bounded, whatever the log: a vector lookup counts against MAX_DECODED whether or not it
decodes, so the track knows when the judge's budget runs out. From the commit where an added
vector first meets the spent budget on, the judge can only say what the track says without a
loader (a second live entry, undecoded; a DELETE's deleted-row count), so the track keeps
finished facts, and stops once MAX_FINDINGS of them are sure to fill the judge's list.

Lazy: a log with no deletion vector costs nothing but a look at each commit's actions. Until
the first vector, every path has at most one entry, keyed as `IntegrityChecker.live` keys it,
so the track starts from the checker's live files when the first vector comes.
"""

from __future__ import annotations

from collections.abc import Iterable
from operator import itemgetter
from typing import Any

from audit.core.integrity.refs import FileRef, dv_identity
from audit.core.log.replay import path_key
from audit.core.model import AddFile, Commit
from audit.core.numbers import stats_records
from audit.core.wording.dv import DvFacts

MAX_DECODED = 5000
MAX_FINDINGS = 200

_UNREAD = object()
_dv_of = itemgetter(2)  # a FileRef's deletion vector


class DvEntry:
    """A logical file live after some commit: the version whose add made it live (-1: the
    state before the first commit checked), its vector, its numRecords (read when needed)."""

    __slots__ = ("version", "dv", "_stats", "_records")

    def __init__(self, version: int, dv: dict[str, Any] | None, stats: str | None) -> None:
        self.version, self.dv, self._stats, self._records = version, dv, stats, _UNREAD

    def records(self) -> int | None:
        """numRecords as the stats say it (the judge applies its positions limit)."""
        if self._records is _UNREAD:
            self._records = stats_records(self._stats)
        return self._records  # type: ignore[return-value]


# What the judge replays, in order (the first field names it):
#   ("vector", version, path, entry)        an added vector: decode it, check it
#   ("two", version, path, earlier, entries) two live entries of a path (entries: a copy)
#   ("end", version)                         the commit's undecodable vectors, said together
#   ("rows", version, decoded, metric, most) a DELETE's deleted-row count disagreeing; said
#                                            unless a file's numRecords (at most `most`) is
#                                            over the judge's positions limit
#   ("facts", DvFacts)                       a finding the judge could only say this way
DvItem = tuple[Any, ...]


def dv_cardinality(dv: dict[str, Any] | None) -> int:
    value = (dv or {}).get("cardinality")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def dv_metric(metrics: Any, name: str) -> int | None:
    value = metrics.get(name) if isinstance(metrics, dict) else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def two_entries_facts(version: int, path: str, earlier: list[int], entries: int) -> DvFacts:
    """The two_live_entries facts before anything is decoded."""
    return DvFacts("two_live_entries", version, path, earlier, entries=entries)


class DvTrack:
    """Feed every commit in version order with `observe`; the judge reads `items`.

    `base`: the files live before the first commit (None: unknown, the check is not made:
    `usable` is False). `lazy`: start keeping entries at the first vector, from the live
    files `observe` is given then; otherwise from `base` at once.
    """

    def __init__(self, base: Iterable[AddFile] | None, *, lazy: bool = False) -> None:
        self.items: list[DvItem] = []
        self.usable = base is not None
        self.live: dict[str, list[DvEntry]] | None = None
        self.decoded = 0  # vector lookups the judge will have made (up to MAX_DECODED)
        self.settled = False  # the judge said its budget ran out: no lookup from here on
        # Items sure to be a finding: past MAX_FINDINGS of them (and once the judge looks
        # nothing up any more) nothing the track could keep would be said.
        self.sure = 0
        self.done = not self.usable
        if base is not None and not lazy:
            self.live = {}
            for add in base:
                entry = DvEntry(-1, add.deletion_vector, add.stats)
                self.live.setdefault(path_key(add.path), []).append(entry)

    @staticmethod
    def needs_own_start(files: dict[str, AddFile]) -> bool:
        """Whether files cannot be taken from `IntegrityChecker.live` later: one has a
        vector, or two paths share a key (the checker keeps one of them)."""
        if any(add.deletion_vector for add in files.values()):
            return True
        return len({path_key(p) for p in files}) != len(files)

    def observe(
        self,
        commit: Commit,
        adds: list[FileRef],
        removes: list[FileRef],
        live_before: dict[str, tuple[int, FileRef]] | None = None,
    ) -> None:
        """One commit. `live_before`: the checker's live files before it (for a lazy start)."""
        if self.done:
            return
        live = self.live
        if live is None:
            if not any(map(_dv_of, adds)) and not any(map(_dv_of, removes)):
                return
            live = self.live = {
                key: [DvEntry(version, ref.deletion_vector, ref.stats)]
                for key, (version, ref) in (live_before or {}).items()
            }
        retired = _retire(live, removes)
        version = commit.version
        added: list[DvEntry] = []
        vectors = hit = False
        for add in adds:
            dv, path = add.deletion_vector, add.path
            entry = DvEntry(version, dv, add.stats)
            entries = live.setdefault(path_key(path), [])
            # A re-add of the same (path, vector) replaces its statistics: still one entry.
            if entries:
                wanted = dv_identity(dv)
                entries[:] = [e for e in entries if dv_identity(e.dv) != wanted]
            entries.append(entry)
            added.append(entry)
            if dv and not self.settled:
                vectors = True
                hit = hit or self.decoded >= MAX_DECODED
                self._lookups((entry,))
                self.items.append(("vector", version, path, entry))
            if len(entries) > 1:
                self._two(version, path, entries)
        if vectors:
            self.items.append(("end", version))
        self._deleted_rows(commit, retired, added, len(removes))
        # The judge said the spent budget at this commit: it looks nothing up from here on.
        self.settled = self.settled or hit
        self.done = self.sure >= MAX_FINDINGS and self.decoded >= MAX_DECODED

    def _lookups(self, entries: Iterable[DvEntry]) -> None:
        """Count the judge's lookups of these entries' vectors (a lookup over the budget is
        refused unread and not counted)."""
        for entry in entries:
            if entry.dv and self.decoded < MAX_DECODED:
                self.decoded += 1

    def _two(self, version: int, path: str, entries: list[DvEntry]) -> None:
        earlier = [e.version for e in entries[:-1] if 0 <= e.version < version]
        if self.settled:  # every vector refused unread: nothing is decoded
            self.items.append(("facts", two_entries_facts(version, path, earlier, len(entries))))
            self.sure += 1
            return
        self._lookups(entries)
        self.items.append(("two", version, path, earlier, tuple(entries)))
        self.sure += 1  # said whatever the vectors decode to

    def _deleted_rows(
        self, commit: Commit, retired: list[DvEntry], added: list[DvEntry], removes: int
    ) -> None:
        info = commit.commit_info or {}
        if str(info.get("operation", "")).upper() != "DELETE":
            return
        metric = dv_metric(info.get("operationMetrics"), "numDeletedRows")
        both = (*retired, *added)
        if metric is None or not any(e.dv for e in both):
            return
        records = [e.records() for e in both]
        if len(retired) != removes or None in records:
            return  # a remove we could not match, or a file without statistics: undecidable
        known: list[int] = records  # type: ignore[assignment]
        rows = [r - dv_cardinality(e.dv) for r, e in zip(known, both, strict=True)]
        decoded = sum(rows[: len(retired)]) - sum(rows[len(retired) :])
        if decoded != metric:
            self.items.append(("rows", commit.version, decoded, metric, max(known)))


def _retire(live: dict[str, list[DvEntry]], removes: list[FileRef]) -> list[DvEntry]:
    """The entries the removes retire: each the live entry of its path and vector."""
    retired: list[DvEntry] = []
    for remove in removes:
        entries = live.get(path_key(remove.path))
        if not entries:
            continue
        wanted = dv_identity(remove.deletion_vector)
        for i, entry in enumerate(entries):
            if dv_identity(entry.dv) == wanted:
                retired.append(entries.pop(i))
                break
    return retired
