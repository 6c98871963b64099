"""The CommitRollup rows the zoomed-out timeline reads, recomputed from the stored commits."""

from __future__ import annotations

from django.db import models, transaction
from django.db.models import Max, Min

from audit import models as audit_models
from audit.models import Commit, CommitRollup
from audit.reads.timeline import rollups


def refresh_rollups(
    table_id: int,
    lo: int,
    hi: int,
    *,
    commit_model: type[models.Model] = Commit,
    rollup_model: type[models.Model] = CommitRollup,
) -> int:
    """Recompute the CommitRollup rows of every bucket touching versions [lo, hi].

    One range scan of the (table, version) index over the Commit rows of those whole buckets,
    packed by `audit.reads.timeline.rollups` (aggregates, timeline rows, finer cells), then the buckets'
    rollups are replaced. The result depends only
    on the stored rows, so a replayed chunk or a second rebuild cannot double-count. Call it in
    the transaction that stored the commits. The model arguments let a data migration pass its
    historical models. Returns the number of rollup rows written.
    """
    size = audit_models.ROLLUP_SIZE  # read at call time: tests shrink it
    first = min(lo, hi) // size * size
    last = max(lo, hi) // size * size + size - 1
    rows = (
        commit_model.objects.filter(table_id=table_id, version__gte=first, version__lte=last)
        .order_by("version")
        .values_list(*rollups.ROW_FIELDS)
    )
    # A few buckets (a steady tail's chunk) in one fetch; a backfill's range streamed, which on
    # PostgreSQL is a server-side cursor: three round trips, most of a one-bucket refresh.
    fetched = rows if last - first < 4 * size else rows.iterator(chunk_size=10_000)
    packed = rollups.pack_rollups(table_id, fetched, rollup_model, size)
    # No savepoint: the caller's transaction (the chunk's) fails whole if this fails.
    with transaction.atomic(savepoint=False):
        rollup_model.objects.filter(
            table_id=table_id, bucket_start__gte=first, bucket_start__lte=last
        ).delete()
        rollup_model.objects.bulk_create(packed, batch_size=200)
    return len(packed)


def rebuild_rollups(
    table_id: int,
    *,
    commit_model: type[models.Model] = Commit,
    rollup_model: type[models.Model] = CommitRollup,
) -> int:
    """Rebuild all of a table's rollups from its Commit rows (for rows not stored by the ingest:
    tables ingested before rollups existed, bulk loads). Returns the number of rollup rows."""
    bounds = commit_model.objects.filter(table_id=table_id).aggregate(
        lo=Min("version"), hi=Max("version")
    )
    with transaction.atomic():
        rollup_model.objects.filter(table_id=table_id).delete()
        if bounds["lo"] is None:
            return 0
        return refresh_rollups(
            table_id,
            bounds["lo"],
            bounds["hi"],
            commit_model=commit_model,
            rollup_model=rollup_model,
        )
