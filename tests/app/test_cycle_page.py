"""The finding page shows an anomaly's dependency cycle (server-rendered parts)."""

from __future__ import annotations

import json

import pytest
from django.utils.html import escape

from audit.models import Finding
from tests.app.test_frontend import audited, login  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db


def test_the_finding_page_says_and_lists_the_cycle(client, member, audited):  # noqa: F811
    finding = Finding.objects.get(table=audited, kind="write_serializable_reorder")
    login(client, member)
    page = client.get(f"/findings/{finding.id}/").content.decode()
    assert escape(finding.witness["cycle_sentence"]) in page
    assert 'id="cycle-edges"' in page and "finding.js" in page
    data = page.split('id="cycle-data" type="application/json">')[1].split("</script>")[0]
    assert [(e["from"], e["to"], e["type"]) for e in json.loads(data)] == [
        (3, 2, "rw"),
        (2, 3, "ww"),
    ]


def test_a_hostile_cycle_is_rendered_as_text_and_filtered(client, member, audited):  # noqa: F811
    finding = Finding.objects.get(table=audited, kind="write_serializable_reorder")
    finding.witness = {
        **finding.witness,
        "cycle": [
            {"from": 3, "to": 2, "type": "rw", "why": "<script>alert(1)</script>"},
            {"from": "<b>", "to": 2, "type": "ww", "why": "x"},
            {"from": 2, "to": 3, "type": "<img src=x>", "why": "x"},
        ],
    }
    finding.save()
    login(client, member)
    page = client.get(f"/findings/{finding.id}/").content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)" in page
    assert "<img src=x>" not in page and "<b>" not in page.split('id="cycle-edges"')[1]
