"""A table reads only its own files, and the roots its project was granted; never another
project's table, even when both lie under AUDIT_ALLOWED_ROOTS.

Two projects in one lake: beta's table holds `ssn` and `salary`; alpha's log names beta's data
files (tests/support/project_tables.py). Alpha's viewer sees none of beta's values in the
witness of the API's finding detail, on the finding page or in a duplicate key's samples; the
witness says the file was not read. A root granted to alpha that holds beta's table still
leaves beta's table out; a granted root with a shallow clone's files confirms as before.
"""

from __future__ import annotations

import pytest
from django.core.management import call_command

from audit.core.storage.roots import REFUSED
from audit.models import Finding, Project, Table, project_named
from tests.support.clients import session_client
from tests.support.outside_table import SECRET, build_outside
from tests.support.project_tables import (
    build_alpha_keys,
    build_alpha_witness,
    build_beta,
    dumped,
    leaked,
    spelled,
    tail_into,
)
from tests.support.projects import join

pytestmark = pytest.mark.django_db


@pytest.fixture
def lake(tmp_path, settings, django_user_model, fresh_cache):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path / "lake")]
    settings.AUDIT_CHECK_DATA = True
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    root = tmp_path / "lake"
    beta_files = build_beta(root / "beta" / "b")
    users = {
        "erin": join(django_user_model.objects.create_user("erin", password="password"), "alpha"),
        "frank": join(django_user_model.objects.create_user("frank", password="password"), "beta"),
    }
    beta = tail_into(root / "beta" / "b", "beta")
    return {"root": root, "beta": beta, "beta_files": beta_files, **users}


def _alpha_finding(table) -> Finding:
    return Finding.objects.get(table=table, kind="never_existed_snapshot")


def _seen_by(user, finding: Finding) -> tuple[dict, str]:
    client = session_client(user)
    api = client.get(f"/api/findings/{finding.id}/")
    page = client.get(f"/findings/{finding.id}/")
    assert api.status_code == 200 and page.status_code == 200
    return api.json(), api.content.decode() + page.content.decode()


@pytest.mark.parametrize("how", ["relative", "absolute", "file_uri"])
def test_it_keeps_another_projects_rows_out_of_a_witness(lake, how):
    alpha_path = lake["root"] / "alpha" / "a"
    build_alpha_witness(alpha_path, spelled(lake["beta_files"][0], alpha_path, how))
    alpha = tail_into(alpha_path, "alpha")

    body, shown = _seen_by(lake["erin"], _alpha_finding(alpha))

    assert not leaked(shown) and not leaked(dumped(list(Finding.objects.values())))
    assert body["confirmed"] is False
    assert [r["reason"] for r in body["witness"]["not_read"]] == [REFUSED]
    # Beta's own table answers alpha's viewer 404, as every other project's object does.
    assert session_client(lake["erin"]).get(f"/api/tables/{lake['beta'].id}/").status_code == 404


def test_it_keeps_another_projects_table_out_of_a_root_granted_around_it(lake):
    # Alpha is granted the whole lake (beta's table lies in it): beta's table stays unread.
    call_command("project_roots", "alpha", "--add", str(lake["root"]))
    alpha_path = lake["root"] / "alpha" / "a"
    build_alpha_witness(alpha_path, spelled(lake["beta_files"][0], alpha_path, "relative"))
    alpha = tail_into(alpha_path, "alpha")

    body, shown = _seen_by(lake["erin"], _alpha_finding(alpha))

    assert not leaked(shown)
    assert body["confirmed"] is False
    assert [r["reason"] for r in body["witness"]["not_read"]] == [REFUSED]


def test_it_confirms_a_shallow_clone_in_a_root_granted_to_the_project(lake):
    clones = lake["root"] / "clones"
    alpha_path = lake["root"] / "alpha" / "a"
    build_outside(alpha_path, clones, "absolute")  # the surviving file lives in clones/
    call_command("project_roots", "alpha", "--add", str(clones))
    alpha = tail_into(alpha_path, "alpha")

    body, shown = _seen_by(lake["erin"], _alpha_finding(alpha))

    assert body["confirmed"] is True and SECRET in shown


def test_it_does_not_read_a_shallow_clone_outside_the_tables_own_root_without_a_grant(lake):
    clones = lake["root"] / "clones"  # under AUDIT_ALLOWED_ROOTS, but granted to no project
    alpha_path = lake["root"] / "alpha" / "a"
    build_outside(alpha_path, clones, "absolute")
    alpha = tail_into(alpha_path, "alpha")

    body, shown = _seen_by(lake["erin"], _alpha_finding(alpha))

    assert body["confirmed"] is False and SECRET not in shown
    assert [r["reason"] for r in body["witness"]["not_read"]] == [REFUSED]


def test_it_reads_no_key_column_of_another_projects_table(lake):
    alpha_path = lake["root"] / "alpha" / "k"
    build_alpha_keys(alpha_path, [spelled(f, alpha_path, "relative") for f in lake["beta_files"]])
    alpha = tail_into(alpha_path, "alpha", key_columns=["ssn"])

    [finding] = Finding.objects.filter(table=alpha, kind="duplicate_key")
    body, shown = _seen_by(lake["erin"], finding)

    # Alpha's own duplicate is found; beta's keys were never read.
    assert [s["key"] for s in body["witness"]["sample_keys"]] == [{"ssn": "A-1"}]
    assert not leaked(shown)
    assert REFUSED in body["witness"]["note"]


def test_it_grants_read_roots_only_under_the_allowed_roots_and_outside_other_projects(
    lake, tmp_path
):
    project_named("alpha")
    with pytest.raises(SystemExit):
        call_command("project_roots", "alpha", "--add", str(tmp_path / "elsewhere"))
    with pytest.raises(SystemExit):  # inside beta's table
        call_command("project_roots", "alpha", "--add", str(lake["root"] / "beta" / "b" / "x"))
    call_command("project_roots", "alpha", "--add", str(lake["root"] / "clones"))
    assert Project.objects.get(name="alpha").read_roots == [str(lake["root"] / "clones")]
    call_command("project_roots", "alpha", "--remove", str(lake["root"] / "clones") + "/")
    assert Project.objects.get(name="alpha").read_roots == []


# --------------------------------------------------------------------------- registration


def _post(user, uri: str, project: str = "alpha"):
    return session_client(user).post(
        "/api/tables/", {"uri": uri, "project": project}, format="json"
    )


def _same_refusal(response, uri: str, refused) -> None:
    """`response` answers exactly as `refused` (a path outside the roots, `outside`) did."""
    outside_uri, outside = refused
    assert response.status_code == outside.status_code == 400
    assert response.json() == {
        k: v.replace(outside_uri, uri) if isinstance(v, str) else v
        for k, v in outside.json().items()
    }


@pytest.mark.parametrize("where", ["inside", "inside_missing", "around"])
def test_it_refuses_registering_inside_or_around_another_projects_table_like_any_refused_path(
    lake, django_user_model, tmp_path, where
):
    owner = join(
        django_user_model.objects.create_user("olga", password="password"), "alpha", "owner"
    )
    beta = lake["root"] / "beta" / "b"
    (beta / "sub").mkdir()
    build_beta(beta / "sub" / "t")  # a readable Delta table inside beta's: still refused
    uri = {
        "inside": str(beta / "sub" / "t"),
        "inside_missing": str(beta / "no" / "such"),
        "around": str(lake["root"] / "beta"),
    }[where]
    outside_uri = str(tmp_path / "elsewhere" / "t")
    refused = (outside_uri, _post(owner, outside_uri))

    _same_refusal(_post(owner, uri), uri, refused)
    assert list(Project.objects.get(name="alpha").tables.all()) == []
    # The CLI answers alike, and registers nothing.
    with pytest.raises(SystemExit):
        call_command("add_table", uri, "--project", "alpha")
    assert not Table.objects.filter(uri=uri).exists()


def test_it_registers_inside_its_own_projects_table_and_beside_another_projects(
    lake, django_user_model
):
    owner = join(
        django_user_model.objects.create_user("olga", password="password"), "beta", "owner"
    )
    inner = lake["root"] / "beta" / "b" / "inner"
    build_beta(inner)
    assert _post(owner, str(inner), "beta").status_code == 201
    beside = lake["root"] / "beta" / "c"
    build_beta(beside)
    other = join(
        django_user_model.objects.create_user("omar", password="password"), "alpha", "owner"
    )
    assert _post(other, str(beside)).status_code == 201


def test_the_admin_checks_read_roots_and_registrations_as_the_commands_do(lake, tmp_path):
    from audit.admin import ProjectAdminForm, TableAdminForm

    alpha = project_named("alpha")
    inside_beta = str(lake["root"] / "beta" / "b" / "x")

    def project_form(roots):
        data = {"name": "alpha", "slug": alpha.slug, "read_roots": dumped(roots)}
        return ProjectAdminForm(data=data, instance=alpha)

    assert not project_form([str(tmp_path / "elsewhere")]).is_valid()
    assert not project_form([inside_beta]).is_valid()
    good = project_form([str(lake["root"] / "clones") + "/"])
    assert good.is_valid(), good.errors
    assert good.cleaned_data["read_roots"] == [str(lake["root"] / "clones")]

    table = TableAdminForm(
        data={"uri": inside_beta, "name": "x", "project": alpha.pk, "status": "ok"}
    )
    assert not table.is_valid() and "not under an allowed root" in str(table.errors["uri"])
