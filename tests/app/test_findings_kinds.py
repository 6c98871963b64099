"""The findings page's kind dropdown: the vocabulary's kinds and the health kinds stored so far
(read by SQL compiled once, audit/reads/queries.py)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from audit.core.vocab import FindingKind
from audit.models import Finding, Table
from frontend.views.findings import kind_choices
from tests.support.clients import session_client

pytestmark = pytest.mark.django_db


def test_health_kinds_seen_so_far_join_the_vocabulary(member):
    table = Table.objects.create(uri="/data/kinds", name="kinds", status="ok")
    assert kind_choices() == sorted(str(k) for k in FindingKind)
    # Around the prefix's bounds (SQLite reads the kinds by a range of the kind index).
    near = [
        "health",
        "health`",
        "health^z",
        "healthz",
        "health_",
        "health_\u00e9",
        "health_\U0001f600",
    ]
    kinds = ["health_small_files", "healthy_but_not_a_rule", "health_a", *near]
    for i, kind in enumerate(kinds * 2):
        Finding.objects.create(
            table=table, kind=kind, severity="info", version=i, summary="s", key=f"k{i}",
            last_seen=timezone.now(),
        )  # fmt: skip
    shown = {"health_small_files", "health_a", "health_", "health_\u00e9", "health_\U0001f600"}
    expected = sorted({*(str(k) for k in FindingKind), *shown})
    assert kind_choices() == expected  # new kinds show at once, each once, "health_" only
    page = session_client(member).get("/findings/?status=all").content.decode()
    assert '<option value="health_a" >Health: a (health_a)</option>' in page
    assert "healthy_but_not_a_rule</option>" not in page
