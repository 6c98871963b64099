"""AUDIT_REMOTE_USER_HEADER: logging in through a reverse proxy that names the user."""

from __future__ import annotations

import pytest
from django.test import Client

from audit.models import Table
from tests.support.alerting import make_table
from tests.support.projects import into, join

pytestmark = pytest.mark.django_db
HEADER = "HTTP_X_REMOTE_USER"
AUTH = "django.contrib.auth.middleware.AuthenticationMiddleware"


@pytest.fixture
def proxied(settings, fresh_cache):
    """The settings as config/settings.py makes them when the header is configured."""
    settings.AUDIT_REMOTE_USER_HEADER = HEADER
    at = settings.MIDDLEWARE.index(AUTH) + 1
    settings.MIDDLEWARE = [
        *settings.MIDDLEWARE[:at],
        "audit.trust.remote_user.HeaderRemoteUser",
        *settings.MIDDLEWARE[at:],
    ]
    settings.AUTHENTICATION_BACKENDS = [
        *settings.AUTHENTICATION_BACKENDS,
        "audit.trust.remote_user.ProxyUserBackend",
    ]


@pytest.fixture
def ledger() -> Table:
    return into(make_table("ledger", "/lake/fin/ledger"), "finance")


def test_it_logs_in_the_user_the_proxy_names(proxied, ledger, django_user_model):
    join(django_user_model.objects.create_user("erin"), "finance")
    client = Client()
    page = client.get("/", **{HEADER: "erin"})
    assert page.status_code == 200 and b"ledger" in page.content
    api = client.get("/api/tables/", **{HEADER: "erin"})
    assert [t["name"] for t in api.json()["results"]] == ["ledger"]


def test_a_user_the_proxy_names_first_sees_nothing(proxied, ledger, django_user_model):
    client = Client()
    assert client.get("/api/tables/", **{HEADER: "newcomer"}).json()["count"] == 0
    assert django_user_model.objects.filter(username="newcomer").exists()
    assert client.get(f"/tables/{ledger.id}/", **{HEADER: "newcomer"}).status_code == 404


def test_the_header_is_ignored_unless_configured(settings, ledger, django_user_model):
    assert not settings.AUDIT_REMOTE_USER_HEADER
    assert "audit.trust.remote_user.HeaderRemoteUser" not in settings.MIDDLEWARE
    join(django_user_model.objects.create_user("erin"), "finance")
    assert Client().get("/", **{HEADER: "erin"}).status_code == 302  # to the login page
    assert Client().get("/api/tables/", **{HEADER: "erin"}).status_code == 401
