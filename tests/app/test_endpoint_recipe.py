"""The recipe of docs/architecture.md and docs/api.md for a new endpoint, followed by its
paths: every route of the API's router is a declared read (audit/reads/declared/routes.py) naming
the router's action, it is in the OpenAPI schema with its declared filters, it passes its
access gate (another project's object answers exactly as a missing one), and a cached read
is on the fast path's routes."""

from __future__ import annotations

import re

import pytest
import yaml
from django.core.management import call_command
from django.urls import resolve

from audit.api import fast_path
from audit.api.urls import router, urlpatterns
from audit.models import Finding, Incident, Table
from audit.reads.declared import routes
from tests.support.clients import token_client
from tests.support.projects import into

GROUPS = {"pk": "{id}", "version": "{version}"}


def route_of(pattern: str) -> str:
    """`^tables/(?P<pk>[0-9]{1,18})/commits/$` -> `tables/{id}/commits/`."""
    route = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: GROUPS[m[1]], pattern)
    return route.removeprefix("^").removesuffix("$")


def api_routes() -> set[str]:
    routes = {route_of(str(url.pattern)) for url in router.urls}
    plain = {str(url.pattern) for url in urlpatterns if url.name in ("conflict-matrix", "explain")}
    return routes | plain


def test_every_route_of_the_router_is_a_declared_read():
    assert api_routes() == set(routes.BY_ROUTE)
    for route, read in routes.BY_ROUTE.items():
        match = resolve("/api/" + route.replace("{id}", "1").replace("{version}", "2"))
        actions = getattr(match.func, "actions", None)
        if actions is not None:  # a viewset's route: the declaration names its action
            name = actions.get("get") or actions.get("post")
            lists_of = {"findings/": "findings", "incidents/": "incidents"}
            wanted = lists_of.get(route, name) if name == "list" else name
            singular = {"findings/": "finding", "incidents/": "incident"}
            for prefix, one in singular.items():
                wanted = one if name == "retrieve" and route.startswith(prefix) else wanted
            assert read.name == wanted, (route, read.name, actions)
        scopes = (routes.TABLE, routes.PROJECTS, routes.FINDING, routes.INCIDENT, routes.USER)
        assert read.scope in scopes


def test_every_declared_read_is_in_the_schema_with_its_filters(tmp_path):
    out = tmp_path / "schema.yml"
    call_command("spectacular", "--file", str(out))
    paths = yaml.safe_load(out.read_text())["paths"]
    for route, read in routes.BY_ROUTE.items():
        assert f"/api/{route}" in paths, route
        if read.list is not None:
            operation = paths[f"/api/{route}"]["get"]
            names = {p["name"] for p in operation["parameters"]}
            assert {p.name for p in read.list.params} <= names, route


def test_every_cached_read_is_on_the_fast_path():
    served = {read.route for _, read in fast_path._ROUTES}
    assert served == {route for route, read in routes.BY_ROUTE.items() if read.cached}
    assert {"tables/", "findings/", "tables/{id}/commits/"} <= served


@pytest.mark.django_db
def test_every_table_and_finding_route_passes_its_gate(member):
    """Another project's table or finding answers, on every declared route and method, the
    body a missing one answers (the gate runs before any role check or work)."""
    theirs = Table.objects.create(uri="/data/theirs", name="theirs", status="ok")
    into(theirs, "elsewhere")
    finding = Finding.objects.create(
        table=theirs, kind="conflict_hotspot", severity="info", version=0, key="k",
        summary="s", last_seen="2026-01-01T00:00:00Z",
    )  # fmt: skip
    incident = Incident.objects.create(
        table=theirs, incident_id="0" * 16, cause="other", headline="h", severity="info",
        status="open", first_version=0, last_version=0, first_seen=finding.last_seen,
        last_seen=finding.last_seen,
    )  # fmt: skip
    client = token_client(member)
    scopes = (routes.TABLE, routes.FINDING, routes.INCIDENT)
    gated = [r for r in routes.READS if r.scope in scopes]
    assert len(gated) >= 18
    for read in gated:
        present = {routes.FINDING: finding.id, routes.INCIDENT: incident.id}.get(
            read.scope, theirs.id
        )
        for method in ("get", "post", "delete"):
            answers = [
                getattr(client, method)("/api/" + read.route.format(id=pk, version=0))
                for pk in (present, 999_999)
            ]
            assert answers[0].status_code == 404, (read.route, method)
            assert answers[0].content == answers[1].content, (read.route, method)
