"""Sessions and users read by precompiled SQL (frontend/sessions.py): revocation stays exact
across processes. A second process serves pages the way a gunicorn worker does (one
long-lived Django with its connection and its compiled queries); a logout, a password change,
a deactivation or a deleted session row done in this process shows there on the very next
request, and an unrelated change logs nobody out."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.contrib.auth import BACKEND_SESSION_KEY, get_user
from django.contrib.sessions.models import Session
from django.test import Client

from tests.support.paths import ROOT
from tests.support.workers import database_url

# A worker-like server: reads "METHOD PATH COOKIE" lines, answers "STATUS LOCATION" lines.
SERVER = r"""
import io, os, sys
import django
django.setup()
from django.core.handlers.wsgi import WSGIHandler
app = WSGIHandler()
for line in sys.stdin:
    path, cookie = line.rstrip("\n").split("\t")
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": path, "QUERY_STRING": "",
               "SERVER_NAME": "testserver", "SERVER_PORT": "80", "HTTP_HOST": "testserver",
               "HTTP_COOKIE": cookie, "wsgi.input": io.BytesIO(), "wsgi.url_scheme": "http",
               "wsgi.errors": sys.stderr, "SERVER_PROTOCOL": "HTTP/1.1"}
    answer = []
    body = b"".join(app(environ, lambda status, headers: answer.append((status, headers))))
    status, headers = answer[0]
    location = dict(headers).get("Location", "-")
    print(status.split()[0], location, flush=True)
"""


class Worker:
    """Another process with Django loaded, serving requests one line at a time."""

    def __init__(self):
        env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_CONN_MAX_AGE": "600",  # one connection kept, as under gunicorn
            "DJANGO_ALLOWED_HOSTS": "testserver",
            "LOG_LEVEL": "WARNING",
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def get(self, path: str, cookie: str) -> tuple[int, str]:
        self.proc.stdin.write(f"{path}\t{cookie}\n")
        self.proc.stdin.flush()
        status, location = self.proc.stdout.readline().split()
        return int(status), location

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture
def worker():
    w = Worker()
    yield w
    w.close()


def _logged_in(username: str) -> tuple[Client, str]:
    client = Client()
    response = client.post("/login/", {"username": username, "password": "password"})
    assert response.status_code == 302, "logged in"
    return client, f"sessionid={client.cookies['sessionid'].value}"


def _logout(client, user):
    client.post("/logout/")


def _change_password(client, user):
    user.set_password("another password")
    user.save()


def _deactivate(client, user):
    user.is_active = False
    user.save()


def _delete_sessions(client, user):  # what an administrator's "log out everywhere" does
    Session.objects.all().delete()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "revoke", [_logout, _change_password, _deactivate, _delete_sessions], ids=lambda f: f.__name__
)
def test_a_revoked_session_is_refused_by_another_process_on_its_next_request(
    revoke, member, worker, settings
):
    client, cookie = _logged_in("bob")
    # Warm the other process: same session, several pages (its compiled queries are kept).
    for path in ("/", "/findings/", "/explain/"):
        assert worker.get(path, cookie) == (200, "-"), path
    revoke(client, member)
    for path in ("/", "/findings/"):
        status, location = worker.get(path, cookie)
        assert (status, location) == (302, f"/login/?next={path}"), (revoke.__name__, path)


@pytest.mark.django_db(transaction=True)
def test_an_unrelated_change_keeps_the_session_valid_in_another_process(member, worker):
    client, cookie = _logged_in("bob")
    assert worker.get("/", cookie) == (200, "-")
    member.first_name = "Robert"
    member.save()
    Client().post("/login/", {"username": "bob", "password": "password"})  # another session
    assert worker.get("/", cookie) == (200, "-")
    assert worker.get("/findings/", "sessionid=not-a-session-key-at-all") == (
        302,
        "/login/?next=/findings/",
    )


@pytest.mark.django_db
def test_a_session_from_before_the_backend_changed_stays_logged_in(member, client, settings):
    """Sessions written when ModelBackend was the configured backend name it: the same checks,
    so they stay valid (and a user the checks refuse is still refused)."""
    client.force_login(member)
    session = Session.objects.get()
    store = client.session
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store.save()
    assert client.get("/").status_code == 200
    assert Session.objects.get().get_decoded()[BACKEND_SESSION_KEY].endswith("ModelBackend")
    member.is_active = False
    member.save()
    assert client.get("/").status_code == 302
    assert session.session_key


@pytest.mark.django_db
def test_the_user_read_is_the_orm_user(member, rf):
    """Same instance values as ModelBackend's ORM read."""
    from django.contrib.auth.backends import ModelBackend

    from frontend.sessions import UserBackend

    ours, django_s = UserBackend().get_user(member.pk), ModelBackend().get_user(member.pk)
    assert {f.attname: getattr(ours, f.attname) for f in type(member)._meta.concrete_fields} == {
        f.attname: getattr(django_s, f.attname) for f in type(member)._meta.concrete_fields
    }
    assert UserBackend().get_user(member.pk + 1000) is None
    request = rf.get("/")
    request.session = Client().session
    assert not get_user(request).is_authenticated
