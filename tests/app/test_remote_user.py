"""AUDIT_REMOTE_USER_HEADER: logging in through a reverse proxy that names the user, honoured
only from AUDIT_TRUSTED_PROXIES (Django's test client comes from 127.0.0.1 unless REMOTE_ADDR
says otherwise); unknown names make users only with AUDIT_REMOTE_USER_CREATE."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.test import Client

from audit.models import Table
from tests.support.alerting import make_table
from tests.support.paths import ROOT
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


def test_a_user_the_proxy_names_first_sees_nothing(proxied, ledger, django_user_model, settings):
    settings.AUDIT_REMOTE_USER_CREATE = True
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


@pytest.mark.parametrize("peer", ["203.0.113.7", "10.0.0.1", "::ffff:203.0.113.7", "", "junk"])
def test_it_ignores_the_header_from_an_address_that_is_no_trusted_proxy(
    proxied, ledger, django_user_model, peer
):
    django_user_model.objects.create_superuser("root", "root@example.org", "password")
    join(django_user_model.objects.create_user("erin"), "finance")
    for name in ("root", "erin", "newcomer"):
        client = Client(REMOTE_ADDR=peer)
        assert client.get("/", **{HEADER: name}).status_code == 302  # to the login page
        assert client.get("/api/tables/", **{HEADER: name}).status_code == 401
        assert client.get("/api/alerts/channels/", **{HEADER: name}).status_code in (401, 403)
    assert not django_user_model.objects.filter(username="newcomer").exists()


def test_it_keeps_a_session_when_a_client_sends_the_header_itself(proxied, ledger, admin):
    client = Client(REMOTE_ADDR="203.0.113.7")
    client.force_login(admin)
    body = client.get("/api/tables/", **{HEADER: "nobody-known"})
    assert body.status_code == 200 and body.json()["count"] == 1  # still the admin's session


@pytest.mark.parametrize(
    ("peer", "honoured"),
    [("10.1.2.3", True), ("::ffff:10.1.2.3", True), ("127.0.0.1", False), ("11.0.0.1", False)],
)
def test_it_honours_the_header_from_the_declared_proxies_only(
    proxied, ledger, django_user_model, settings, peer, honoured
):
    settings.AUDIT_TRUSTED_PROXIES = ["10.0.0.0/8", "2001:db8::/32"]
    join(django_user_model.objects.create_user("erin"), "finance")
    answer = Client(REMOTE_ADDR=peer).get("/api/tables/", **{HEADER: "erin"})
    assert answer.status_code == (200 if honoured else 401)


def test_it_refuses_a_name_it_does_not_know_unless_told_to_create_users(
    proxied, ledger, django_user_model, settings
):
    assert settings.AUDIT_REMOTE_USER_CREATE is False  # the default
    client = Client()
    assert client.get("/api/tables/", **{HEADER: "newcomer"}).status_code == 401
    assert client.get("/", **{HEADER: "newcomer"}).status_code == 302
    assert not django_user_model.objects.filter(username="newcomer").exists()


def test_it_refuses_to_start_with_a_trusted_proxy_that_does_not_parse():
    def start(value: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", "import django; django.setup()"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env={
                "PATH": "/usr/bin:/bin",
                "DJANGO_SETTINGS_MODULE": "config.settings",
                "AUDIT_TRUSTED_PROXIES": value,
            },
        )

    bad = start("10.0.0.0/8,proxy.internal")
    assert bad.returncode != 0
    assert "AUDIT_TRUSTED_PROXIES: not an address or network: 'proxy.internal'" in bad.stderr
    assert start("10.0.0.0/8, 192.168.1.1 ,::1").returncode == 0
