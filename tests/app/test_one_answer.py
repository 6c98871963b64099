"""The API and the dashboard give one answer to the same question (docs/api.md).

Same data, three personas: the owner (an administrator), a member and an outsider (read-only
users); both surfaces must show the same counts and the same finding lists.
"""

from __future__ import annotations

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from audit.models import Commit, Finding, Table

pytestmark = pytest.mark.django_db

# (kind, severity, version, related_versions, status)
FINDINGS = [
    ("missed_conflict", "critical", 5, [3, 4], "open"),
    ("never_existed_snapshot", "critical", 4, [], "open"),
    ("write_serializable_reorder", "warning", 7, [5], "open"),
    ("conflict_hotspot", "info", 9, [15, 55], "open"),  # names 5 nowhere: 15 and 55 only
    ("missing_read_version", "warning", 6, [5], "resolved"),
    ("retry_storm", "info", 5, [], "open"),
]


@pytest.fixture
def lake(tmp_path, settings) -> Table:
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    # The dashboard's numbers are read from the pages' template context, which a cached page
    # (audit/reads/cache.py) does not render again: tests/app/test_cached_pages_are_never_stale.py shows a
    # cached page is the page rendered afresh.
    settings.AUDIT_PAGE_CACHE_SECONDS = 0
    table = Table.objects.create(
        uri=str(tmp_path / "orders"), name="orders", status="ok", last_seen_version=9
    )
    Table.objects.create(uri=str(tmp_path / "quiet"), name="quiet", status="ok")
    for version in range(10):
        Commit.objects.create(table=table, version=version, operation="WRITE")
    now = timezone.now()
    for kind, severity, version, related, status in FINDINGS:
        Finding.objects.create(
            table=table, kind=kind, severity=severity, version=version,
            related_versions=related, summary=f"{kind} at {version}", status=status,
            key=f"{kind}:{version}:{','.join(map(str, related))}", last_seen=now,
        )  # fmt: skip
    return table


def api(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def page(client, user, url: str):
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200, url
    return response


def api_counts(user, table: Table) -> dict[str, dict[str, int]]:
    rows = {t["id"]: t for t in api(user).get("/api/tables/").json()["results"]}
    detail = api(user).get(f"/api/tables/{table.id}/").json()
    for key in ("open_findings", "attention_findings"):
        assert detail[key] == rows[table.id][key]
    return {
        "open": {s: rows[table.id]["open_findings"][s] for s in ("info", "warning", "critical")},
        "attention": {
            s: rows[table.id]["attention_findings"][s] for s in ("info", "warning", "critical")
        },
    }


def dashboard_counts(client, user, table: Table) -> dict[str, dict[str, int]]:
    overview = {t.id: t for t in page(client, user, "/").context["page"]}[table.id]
    header = page(client, user, f"/tables/{table.id}/").context["table"]
    status = page(client, user, f"/tables/{table.id}/status/").json()
    attention = {s: getattr(overview, f"n_{s}") for s in ("info", "warning", "critical")}
    assert attention == {s: getattr(header, f"n_{s}") for s in attention}
    assert attention == status["attention"]
    return {"open": status["open"], "attention": attention}


def involving(client, user, table: Table, version: int) -> tuple[list[int], list[int]]:
    body = api(user).get(f"/api/tables/{table.id}/commits/{version}/").json()
    shown = page(client, user, f"/tables/{table.id}/commits/{version}/").context["findings"]
    return [f["id"] for f in body["findings"]], [f.id for f in shown]


def attention_lists(client, user, table: Table) -> tuple[set[int], set[int]]:
    query = {"table": table.id, "status": "open", "acknowledged": "false"}
    from_api = {f["id"] for f in api(user).get("/api/findings/", query).json()["results"]}
    listed = page(client, user, f"/findings/?table={table.id}").context["page"]
    return from_api, {f.id for f in listed}


@pytest.mark.parametrize("persona", ["owner", "member", "outsider"])
def test_counts_are_the_same_in_the_api_and_the_dashboard(client, lake, persona, request):
    user = request.getfixturevalue(persona)
    expected = {
        "open": {"info": 2, "warning": 1, "critical": 2},
        "attention": {"info": 2, "warning": 1, "critical": 2},
    }
    assert api_counts(user, lake) == dashboard_counts(client, user, lake) == expected


@pytest.mark.parametrize("persona", ["owner", "member", "outsider"])
def test_findings_involving_a_version_are_the_same_list(client, lake, persona, request):
    user = request.getfixturevalue(persona)
    from_api, on_page = involving(client, user, lake, 5)
    assert from_api == on_page
    by_id = {f.id: f for f in Finding.objects.filter(table=lake)}
    # On v5, or naming 5 among related versions; never "15" or "55" (no text match).
    assert sorted(by_id[i].kind for i in from_api) == sorted(
        ["missed_conflict", "retry_storm", "write_serializable_reorder", "missing_read_version"]
    )
    assert [by_id[i].severity for i in from_api] == ["critical", "warning", "warning", "info"]
    assert involving(client, user, lake, 9)[0] == [
        f.id for f in Finding.objects.filter(kind="conflict_hotspot")
    ]


def test_acknowledging_keeps_the_first_and_both_surfaces_agree(
    client, lake, owner, member, outsider, django_user_model
):
    critical = Finding.objects.get(kind="missed_conflict")
    assert api(owner).post(f"/api/findings/{critical.id}/acknowledge/").status_code == 200
    # A read-only member cannot acknowledge, in either surface.
    assert api(member).post(f"/api/findings/{critical.id}/acknowledge/").status_code == 403
    client.force_login(member)
    assert client.post(f"/findings/{critical.id}/acknowledge/").status_code == 403
    # A second administrator does not take the acknowledgement over, in either surface.
    other = django_user_model.objects.create_superuser("dora", "dora@example.org", "password")
    body = api(other).post(f"/api/findings/{critical.id}/acknowledge/").json()
    assert body["acknowledged_by"] == owner.username
    client.force_login(other)
    assert client.post(f"/findings/{critical.id}/acknowledge/").status_code == 302
    critical.refresh_from_db()
    assert critical.acknowledged_by == owner and critical.status == "open"
    assert (
        f"acknowledged by {owner.username}"
        in page(client, outsider, f"/findings/{critical.id}/").content.decode()
    )

    for user in (owner, member, outsider):
        counts = api_counts(user, lake)
        assert counts == dashboard_counts(client, user, lake)
        # Still open (the audit has not resolved it), but no longer needing attention.
        assert counts["open"]["critical"] == 2 and counts["attention"]["critical"] == 1
        from_api, listed = attention_lists(client, user, lake)
        assert from_api == listed and critical.id not in listed and len(listed) == 4
        assert involving(client, user, lake, 5)[0] == involving(client, user, lake, 5)[1]

    # Re-opening (administrators) makes it need attention again, in both.
    assert api(owner).post(f"/api/findings/{critical.id}/reopen/").status_code == 200
    assert api_counts(member, lake) == dashboard_counts(client, member, lake)
    assert api_counts(member, lake)["attention"]["critical"] == 2


def test_the_quiet_table_has_zero_counts_everywhere(client, lake, member):
    quiet = Table.objects.get(name="quiet")
    zero = {"info": 0, "warning": 0, "critical": 0}
    assert api_counts(member, quiet) == {"open": zero, "attention": zero}
    overview = {t.id: t for t in page(client, member, "/").context["page"]}[quiet.id]
    assert (overview.n_info, overview.n_warning, overview.n_critical) == (0, 0, 0)


def test_anonymous_users_see_neither(client, lake):
    assert APIClient().get("/api/tables/").status_code in (401, 403)
    assert client.get("/").status_code == 302  # to the login page
