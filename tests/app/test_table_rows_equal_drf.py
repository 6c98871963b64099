"""The tables list's rows (TableSerializer.to_representation without DRF's get_attribute
wrapper, and list_sql.table_rows over `.values()` rows without model instances) equal what
DRF's own Serializer.to_representation gives, for tables with and without health, backfill,
errors, commits and findings, in the list and the detail serializer, in any time zone."""

from __future__ import annotations

import orjson
import pytest
from django.utils import timezone
from rest_framework import serializers

from audit.api import serializers as s
from audit.api import table_rows as list_sql
from audit.health.models import TableHealth
from audit.ingest.health_store import health_fields
from audit.models import Finding, Table
from audit.reads import queries
from audit.reads.declared.lists import TABLE_ROW_VALUES

pytestmark = pytest.mark.django_db

HEALTH = {
    "version": 41, "num_files": 3, "total_bytes": 3000, "small_files": {"count": 1},
    "tombstones": {"vacuumable_bytes": 7}, "checkpoint": {"commits_since": 1},
}  # fmt: skip


def _tables(tmp_path) -> tuple[Table, Table]:
    now = timezone.now()
    bare = Table.objects.create(uri=str(tmp_path / "bare"))
    full = Table.objects.create(
        uri="s3://bucket/lake/full", name="full <x>", status="error", last_error="boom",
        error_cause="denied", last_seen_version=41, latest_version_in_log=45,
        first_available_version=3, last_commit_at=now, last_tail_at=now, risk=62.5,
        backfill_target_version=100, backfill_done=40, backfill_started_at=now,
        backfill_rate=3.25,
    )  # fmt: skip
    TableHealth.objects.create(table=full, **health_fields(HEALTH))
    Finding.objects.create(
        table=full, kind="k", severity="critical", version=4, summary="s", key="a",
        last_seen=now,
    )  # fmt: skip
    return bare, full


def test_it_gives_drfs_rows(tmp_path):
    bare, _ = _tables(tmp_path)
    rows = queries.tables_with_counts().select_related("health").order_by("id")
    for cls in (s.TableSerializer, s.TableDetailSerializer):
        # A fixed clock: the lag's seconds would move between the two computations.
        serializer = cls(list(rows), many=True, context={"seconds_since": lambda at: 1.5})
        ours = serializer.data
        reference = [
            serializers.ModelSerializer.to_representation(serializer.child, table) for table in rows
        ]
        assert ours == reference and len(ours) == 2
        assert list(ours[1]) == list(reference[1])  # same key order
    assert ours[0]["health"] is None and ours[0]["risk"] is None and ours[0]["id"] == bare.id
    assert ours[1]["open_findings"]["critical"] == 1 and ours[1]["backfill"]["done"] == 40


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris", "America/St_Johns"])
def test_it_gives_drfs_rows_from_values_rows(tmp_path, zone):
    bare, full = _tables(tmp_path)
    listed = queries.tables_with_counts().select_related("health").order_by("id")
    context = {"seconds_since": lambda at: 1.5}
    with timezone.override(zone):
        ours = list_sql.table_rows(list(listed.values(*TABLE_ROW_VALUES)), context)
        child = s.TableSerializer(context=context)
        reference = [serializers.ModelSerializer.to_representation(child, t) for t in listed]
    assert orjson.dumps(ours) == orjson.dumps(reference)  # same values, types and key order
    assert [row["id"] for row in ours] == [bare.id, full.id]
    assert ours[0]["health"] is None and ours[1]["health"]["num_files"] == 3
    assert ours[1]["backfill"]["remaining"] == 100 - 3 + 1 - 40
    assert ours[1]["attention_findings"] == {"info": 0, "warning": 0, "critical": 1, "total": 1}
    stamp = ours[1]["last_commit_at"]
    assert stamp.endswith("Z") == (zone == "UTC") and stamp == reference[1]["last_commit_at"]


def test_remembered_rows_are_the_rows_rendered_now(tmp_path):
    """A row is remembered under its values, the time zone and the marks' function: a second
    list in another zone, or after the table changed, shows what rendering now shows."""
    bare, full = _tables(tmp_path)
    listed = queries.tables_with_counts().select_related("health").order_by("id")
    context = {"seconds_since": lambda at: 1.5}

    def rendered(zone: str) -> tuple[list, list]:
        with timezone.override(zone):
            values = list(listed.values(*TABLE_ROW_VALUES))
            ours = list_sql.table_rows(values, context)
            child = s.TableSerializer(context=context)
            fresh = listed.all()  # not the queryset's cached rows
            return ours, [serializers.ModelSerializer.to_representation(child, t) for t in fresh]

    first, _ = rendered("UTC")
    again, reference = rendered("UTC")
    assert again[1] is first[1]  # remembered
    assert orjson.dumps(again) == orjson.dumps(reference)
    paris, reference = rendered("Europe/Paris")
    assert paris[1] is not first[1] and orjson.dumps(paris) == orjson.dumps(reference)
    assert paris[1]["last_commit_at"] != first[1]["last_commit_at"]

    Finding.objects.filter(table=full).update(acknowledged_at=timezone.now())
    Table.objects.filter(pk=bare.pk).update(last_seen_version=7, name="renamed")
    changed, reference = rendered("UTC")
    assert orjson.dumps(changed) == orjson.dumps(reference)
    assert changed[1]["attention_findings"]["total"] == 0 and changed[0]["name"] == "renamed"
