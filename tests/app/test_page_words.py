"""Pages speak words: finding kinds and operations by name (the identifier beside them as a
detail), sizes in IEC units, and a witness line only for a witness that has something to show.
On a real ingested table (tests/support/scenarios.build_ws_reorder_matching: a confirmed
never_existed_snapshot with rows, and a write_serializable_reorder whose witness is a cycle)."""

from __future__ import annotations

import pytest

from audit.models import Finding, Table
from frontend.templatetags.frontend_tags import filesize
from tests.support import scenarios
from tests.support.ingested import ingest_table

pytestmark = pytest.mark.django_db


@pytest.fixture
def audited(tmp_path, settings) -> Table:
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    scenarios.build_ws_reorder_matching(str(tmp_path / "orders"))
    return ingest_table(tmp_path / "orders", "orders")


def test_kinds_and_operations_read_as_words_with_the_identifier_beside(client, owner, audited):
    client.force_login(owner)
    finding = Finding.objects.get(table=audited, kind="never_existed_snapshot")
    listing = client.get("/findings/?status=all").content.decode()
    assert (
        '>Never-existed snapshot</a> <code class="ident">never_existed_snapshot</code>' in listing
    )
    assert ">Never-existed snapshot (never_existed_snapshot)</option>" in listing
    page = client.get(f"/findings/{finding.id}/").content.decode()
    assert "<title>Never-existed snapshot at v3" in page and 'id="finding-kind"' in page
    commit = client.get(f"/tables/{audited.id}/commits/3/").content.decode()
    assert '<span class="op">Delete <code class="ident">DELETE</code></span>' in commit
    assert "<strong>WriteSerializable reorder</strong>" in commit


def test_a_witness_line_shows_what_the_witness_has(client, owner, audited):
    client.force_login(owner)
    commit = client.get(f"/tables/{audited.id}/commits/3/").content.decode()
    assert "Witness: 2 rows in 1 file (data)" in commit  # the rows the DELETE left alive
    assert "Witness: a dependency cycle of 2 edges" in commit and "#cycle" in commit
    assert "in 0 files" not in commit and "()" not in commit


def test_sizes_are_iec():
    assert [filesize(v) for v in (512, 35_411, 33_554_432)] == ["512 B", "34.6 KiB", "32.0 MiB"]
