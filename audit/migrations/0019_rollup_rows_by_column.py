"""Rollups' timeline rows repacked by column (audit.reads.timeline.rollups.pack_rows).

A rollup's `rows` held a JSON list per row; it now holds `{"columns": [six lists]}`, which a
window decodes several times faster. The reader takes both packings, so this only spares the
rollups stored before it the slower one: each is rewritten once, in batches. Frozen here (not
imported from audit.reads): the packing as of this migration.
"""

import orjson
from django.db import migrations

BATCH = 500


def _by_column(text: str) -> str | None:
    """The by-column text of a by-row `rows` text; None when there is nothing to repack."""
    if not text or not text.startswith("["):
        return None
    try:
        rows = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None  # not JSON: the reader reads this rollup's commits instead
    if not isinstance(rows, list) or not all(isinstance(r, list) and len(r) == 6 for r in rows):
        return None  # not what the ingest wrote: left for the reader's fallback
    columns = [list(column) for column in zip(*rows, strict=True)] or [[] for _ in range(6)]
    columns[4] = [None if b is None else bool(b) for b in columns[4]]
    return orjson.dumps({"columns": columns}).decode()


def repack(apps, schema_editor):
    rollup_model = apps.get_model("audit", "CommitRollup")
    batch = []
    for rollup in rollup_model.objects.only("pk", "rows").order_by("pk").iterator(chunk_size=BATCH):
        text = _by_column(rollup.rows)
        if text is not None:
            rollup.rows = text
            batch.append(rollup)
        if len(batch) >= BATCH:
            rollup_model.objects.bulk_update(batch, ["rows"])
            batch = []
    if batch:
        rollup_model.objects.bulk_update(batch, ["rows"])


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0018_finding_list_indexes"),
    ]

    operations = [
        migrations.RunPython(repack, migrations.RunPython.noop, elidable=True),
    ]
