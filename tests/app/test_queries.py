"""The query layer (audit/reads/queries.py) and the model methods it rests on."""

from __future__ import annotations

import pytest
from django.utils import timezone

from audit.models import Finding, Table
from audit.reads import queries

pytestmark = pytest.mark.django_db


def finding(table: Table, kind: str, severity: str, version: int, related=(), **extra) -> Finding:
    return Finding.objects.create(
        table=table, kind=kind, severity=severity, version=version,
        related_versions=list(related), summary=kind, key=f"{kind}:{version}",
        last_seen=timezone.now(), **extra,
    )  # fmt: skip


@pytest.fixture
def table(tmp_path) -> Table:
    return Table.objects.create(uri=str(tmp_path / "t"), name="t")


def test_acknowledge_claims_once_and_keeps_the_first(table, owner, django_user_model):
    f = finding(table, "missed_conflict", "critical", 3)
    other = django_user_model.objects.create_superuser("dora", "d@example.org", "password")
    assert f.acknowledge(owner) is True
    first_at = f.acknowledged_at
    stale = Finding.objects.get(pk=f.pk)
    assert stale.acknowledge(other) is False  # lost the claim: sees the winner
    assert stale.acknowledged_by == owner and stale.acknowledged_at == first_at
    assert Finding.objects.get(pk=f.pk).status == "open"
    assert f.unacknowledge() is True and f.unacknowledge() is False
    f.refresh_from_db()
    assert f.acknowledged_at is None and f.acknowledged_by is None


def test_tables_carry_open_and_attention_counts(table, owner, tmp_path):
    finding(table, "missed_conflict", "critical", 3).acknowledge(owner)
    finding(table, "never_existed_snapshot", "critical", 4)
    finding(table, "retry_storm", "info", 5, status="resolved")
    Table.objects.create(uri=str(tmp_path / "empty"), name="empty")
    rows = {t.name: t for t in queries.tables_with_counts()}
    assert (rows["t"].open_critical, rows["t"].attention_critical) == (2, 1)
    assert (rows["t"].open_info, rows["t"].attention_info) == (0, 0)
    assert (rows["empty"].open_critical, rows["empty"].attention_warning) == (0, 0)
    assert queries.finding_counts(table.id) == {
        "open": {"info": 0, "warning": 0, "critical": 2},
        "attention": {"info": 0, "warning": 0, "critical": 1},
    }
    assert queries.attention_totals() == {"info": 0, "warning": 0, "critical": 1}


def test_findings_involving_match_exact_versions_only(table, tmp_path):
    on = finding(table, "retry_storm", "info", 7)
    named = finding(table, "missed_conflict", "critical", 9, related=[7, 8])
    finding(table, "conflict_hotspot", "warning", 20, related=[17, 70, 77])  # text-alike only
    elsewhere = Table.objects.create(uri=str(tmp_path / "other"), name="other")
    finding(elsewhere, "missed_conflict", "critical", 7)
    assert [f.id for f in queries.findings_involving(table.id, 7)] == [named.id, on.id]
    assert queries.findings_involving(table.id, 1) == []
