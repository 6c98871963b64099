"""Conflict hotspots: partitions where concurrent commits keep overlapping.

Every concurrent pair whose later commit read the table is credited to the partitions both
touched (or the whole table), per operation pair, with how many of them Delta's rules call
conflicts under each level. A hotspot is reported once it passes severity.hotspot_is_reported.
"""

from __future__ import annotations

from audit.core import severity as sev
from audit.core.conflicts.context import TableContext
from audit.core.conflicts.scope import ReadScope, key_sort, render_partition
from audit.core.conflicts.verdict import LEVELS, Recheck
from audit.core.facts.anomalies import Hotspot
from audit.core.model import CommitSummary, Finding
from audit.core.numbers import ms_datetime
from audit.core.vocab import FindingKind
from audit.core.wording.anomalies import hotspot_text

# Partitions credited per overlapping pair in the hotspot tally (bounds the work per pair).
MAX_HOTSPOT_PARTITIONS_PER_PAIR = 4

HotspotKey = tuple[str, tuple[str, str]]


class HotspotTally:
    """The hotspots of one audit, keyed by (partition label, operation pair)."""

    def __init__(self, ctx: TableContext):
        self.ctx = ctx
        self.hotspots: dict[HotspotKey, Hotspot] = {}

    def add(
        self, txn: CommitSummary, winner: CommitSummary, scope: ReadScope, verdict: Recheck
    ) -> None:
        # Only pairs whose later commit read the table count: an append overlapping anything
        # cannot conflict, and counting it would dilute the conflict rate.
        if scope.kind == "none" or not (txn.data_change and winner.data_change):
            return
        shared = self._shared_partitions(txn, winner, scope)
        if not shared:
            return
        ops = tuple(sorted((txn.operation or "UNKNOWN", winner.operation or "UNKNOWN")))
        day = _day(txn.timestamp)
        for key in sorted(shared, key=key_sort)[:MAX_HOTSPOT_PARTITIONS_PER_PAIR]:
            label = render_partition(key) if key else "whole table"
            spot = self.hotspots.get((label, ops))
            if spot is None:
                spot = self.hotspots[(label, ops)] = Hotspot(label, ops)
            _credit(spot, txn, winner, verdict, day)

    def _shared_partitions(
        self, txn: CommitSummary, winner: CommitSummary, scope: ReadScope
    ) -> list:
        touched = winner.partitions_touched
        if scope.kind == "table" or not self.ctx.partition_columns_at(txn.version - 1):
            return [()] if touched else []
        return [k for k in touched if scope.contains(k) or k in txn.partitions_touched]

    def ordered(self) -> list[Hotspot]:
        return sorted(self.hotspots.values(), key=lambda h: (h.partition, h.operations))


def _credit(
    spot: Hotspot, txn: CommitSummary, winner: CommitSummary, verdict: Recheck, day: str
) -> None:
    spot.pairs += 1
    for level in LEVELS:
        exc = verdict.at(level)
        if exc:
            spot.conflicts[level] += 1
            # Plain-text keys: the counts are serialised with orjson, which refuses enums as keys.
            spot.exceptions[str(exc)] += 1
    if spot.first_version is None:
        spot.first_version, spot.first_winner = txn.version, winner.version
    spot.last_version = txn.version
    spot.per_day[day] += 1


def _day(timestamp: int | None) -> str:
    moment = ms_datetime(timestamp)
    return moment.strftime("%Y-%m-%d") if moment is not None else "unknown"


def hotspot_findings(hotspots: dict[HotspotKey, Hotspot]) -> list[Finding]:
    findings = []
    for spot in sorted(hotspots.values(), key=lambda h: (h.partition, h.operations)):
        if not sev.hotspot_is_reported(spot.pairs):
            continue
        findings.append(
            hotspot_text(spot).finding(
                FindingKind.CONFLICT_HOTSPOT,
                sev.hotspot_severity(spot.pairs, spot.serializable_conflicts),
                spot.first_version or 0,
                [spot.first_winner] if spot.first_winner is not None else [],
                details=spot.as_dict(),
            )
        )
    return findings
