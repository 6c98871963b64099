"""Logging in through a reverse proxy (AUDIT_REMOTE_USER_HEADER), as healthchecks does with
Django's RemoteUserMiddleware: the proxy authenticates the user and names them in a header.

Off unless the setting names a header (a `request.META` key such as "HTTP_X_REMOTE_USER"): a
deployment that turns it on must have the proxy strip that header from clients' requests, or
anyone could name any user. A user the header names for the first time is created with no
project, so they see nothing until made a member (`manage.py project_member`).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.backends import RemoteUserBackend
from django.contrib.auth.middleware import RemoteUserMiddleware


class HeaderRemoteUser(RemoteUserMiddleware):
    # A header the proxy sets, not the WSGI REMOTE_USER variable; a request without it keeps
    # its session (the login page still works behind the same proxy).
    force_logout_if_no_header = False

    @property
    def header(self) -> str:  # read per request, so the setting applies without a restart
        return settings.AUDIT_REMOTE_USER_HEADER


class ProxyUserBackend(RemoteUserBackend):
    """RemoteUserBackend (creates unknown users, refuses inactive ones)."""
