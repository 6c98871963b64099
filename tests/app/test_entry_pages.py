"""The doors of the product: the API's browsable root, JSON 404s under /api/, the branded
403/404/500 pages with their navigation and reason, the favicon, the top bar's section, and
a log without tracebacks for a client's 403 or 404."""

from __future__ import annotations

import logging

import pytest
from django.test import Client, RequestFactory

from frontend import errors
from tests.support.clients import error_of, session_client, token_client
from tests.support.projects import join

pytestmark = pytest.mark.django_db

NAV = '<nav class="nav" aria-label="Sections">'


def page(client, path: str, status: int, **headers) -> str:
    response = client.get(path, **headers)
    assert response.status_code == status, (path, response.status_code)
    return response.content.decode()


def test_the_api_root_answers_json_to_clients_and_a_page_to_browsers(member):
    client = session_client(member)
    body = client.get("/api/", HTTP_ACCEPT="application/json").json()
    assert body["tables"].endswith("/api/tables/") and body["findings"].endswith("/api/findings/")
    assert {"conflict-matrix", "explain", "alerts", "schema", "docs"} <= set(body)
    assert client.get("/api/").json() == body  # curl's */*: JSON first
    assert token_client(member).get("/api/").json() == body
    html = page(client, "/api/", 200, HTTP_ACCEPT="text/html,application/xhtml+xml,*/*;q=0.8")
    assert NAV in html and 'id="api-endpoints"' in html and "/api/tables/" in html
    assert '<a href="/api/" class="active" aria-current="page">API</a>' in html


def test_unknown_api_paths_answer_json_404s(member):
    client = session_client(member)
    for path in ("/api/nothing/", "/api/nothing", "/api/a/b/c/", "/api/tables/999999/"):
        response = client.get(path)
        assert response.status_code == 404, path
        assert response["Content-Type"].startswith("application/json"), path
        assert error_of(response)
    assert client.get("/api/x/", HTTP_ACCEPT="text/html").json() == client.get("/api/x/").json()
    assert client.get("/api/alerts/rules/").status_code == 200  # alerting's own /api/ routes


def test_a_404_page_keeps_the_navigation_and_names_no_table(member):
    html = page(session_client(member), "/tables/999999/", 404)
    assert NAV in html and 'id="error-reason"' in html
    assert "belongs to a project you are not a member of" in html
    anonymous = page(Client(), "/no/such/page/", 404)
    assert 'href="/login/?next=/no/such/page/"' in anonymous


def test_a_403_page_says_why_and_logs_one_line_without_a_traceback(django_user_model, caplog):
    viewer = join(django_user_model.objects.create_user("vic", password="password"))
    with caplog.at_level(logging.WARNING, logger="django.request"):
        html = page(session_client(viewer), "/alerts/rules/new/", 403)
    assert NAV in html and "Only owners of the project and administrators change" in html
    assert '<a href="/alerts/" class="active" aria-current="page">Alerts</a>' in html
    (record,) = [r for r in caplog.records if r.name == "django.request"]
    assert record.getMessage() == "Forbidden (Permission denied): /alerts/rules/new/"
    assert record.exc_info is None and not record.exc_text


def test_a_server_error_keeps_its_traceback_in_the_log():
    record = logging.LogRecord("django.request", logging.ERROR, "", 0, "boom", (), None)
    record.status_code = 500
    try:
        raise RuntimeError("boom")
    except RuntimeError as err:
        record.exc_info = (type(err), err, err.__traceback__)
    logging.getLogger("django.request").filters[0].filter(record)
    assert record.exc_info is not None


def test_the_500_page_needs_no_database_and_the_api_gets_json():
    html = errors.server_error(RequestFactory().get("/tables/1/")).content.decode()
    assert NAV in html and "Server error" in html and "base.css" in html
    api = errors.server_error(RequestFactory().get("/api/tables/"))
    assert api.status_code == 500 and api["Content-Type"] == "application/json"


def test_the_favicon_is_served():
    response = Client().get("/favicon.ico")
    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
    assert b"<svg" in response.content and "max-age" in response["Cache-Control"]


def test_the_top_bar_marks_the_section_of_the_page(owner):
    client = session_client(owner)
    alerts = page(client, "/alerts/", 200)
    assert (
        '<a href="/alerts/" class="active"' in alerts and '<a href="/" class="active"' not in alerts
    )
    form = page(client, "/alerts/rules/new/", 200)
    assert '<a href="/alerts/" class="active"' in form
    assert '<a href="/" class="active"' in page(client, "/", 200)
    assert '<a href="/findings/" class="active"' in page(client, "/findings/", 200)


def test_a_reader_who_cannot_create_rules_is_told_why(member, owner):
    assert 'id="alerts-role-note"' in page(session_client(member), "/alerts/", 200)
    assert 'id="alerts-role-note"' not in page(session_client(owner), "/alerts/", 200)


def test_healthz_says_the_run_id_it_was_given(settings):
    """scripts/run.sh's proof that the server on its port is its own."""
    settings.AUDIT_RUN_ID = "a1b2c3"
    assert Client().get("/healthz").json() == {"ok": True, "run": "a1b2c3"}


def test_a_form_sent_without_its_csrf_token_gets_the_branded_403(owner):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    response = client.post("/alerts/rules/new/", {"name": "x"})
    html = response.content.decode()
    assert response.status_code == 403 and NAV in html
    assert "reload the page and send it again" in html and "CSRF verification failed" not in html
