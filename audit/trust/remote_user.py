"""Logging in through a reverse proxy (AUDIT_REMOTE_USER_HEADER), as healthchecks does with
Django's RemoteUserMiddleware: the proxy authenticates the user and names them in a header.

Off unless the setting names a header (a `request.META` key such as "HTTP_X_REMOTE_USER").
Any client can send that header, so it is honoured only on requests whose peer address
(REMOTE_ADDR, the TCP peer gunicorn saw) lies in AUDIT_TRUSTED_PROXIES (addresses or CIDRs,
default loopback): from anywhere else it is ignored, as if absent. The proxy must still strip
the header from its own clients' requests, or they could name any user through it.

A user the header names for the first time is refused unless AUDIT_REMOTE_USER_CREATE is on;
then they are created with no project, so they see nothing until made a member
(`manage.py project_member`).
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable

from django.conf import settings
from django.contrib.auth.backends import RemoteUserBackend
from django.contrib.auth.middleware import RemoteUserMiddleware

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@functools.lru_cache(maxsize=8)
def trusted_networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    """AUDIT_TRUSTED_PROXIES as networks (config/settings.py refuses a bad entry at start)."""
    return tuple(ipaddress.ip_network(e.strip(), strict=False) for e in entries if e.strip())


def from_trusted_proxy(address: str, entries: Iterable[str] | None = None) -> bool:
    """Whether a request's peer `address` is one of the trusted proxies (`entries`, default
    AUDIT_TRUSTED_PROXIES). An address that does not parse is not trusted."""
    if entries is None:
        entries = settings.AUDIT_TRUSTED_PROXIES
    try:
        peer = ipaddress.ip_address(address.strip().split("%", 1)[0])
    except (ValueError, AttributeError):
        return False
    # gunicorn bound to [::] sees IPv4 peers as ::ffff:a.b.c.d.
    mapped = peer.ipv4_mapped if isinstance(peer, ipaddress.IPv6Address) else None
    candidates = (peer, mapped) if mapped is not None else (peer,)
    return any(
        a in net
        for net in trusted_networks(tuple(entries))
        for a in candidates
        if a.version == net.version
    )


class HeaderRemoteUser(RemoteUserMiddleware):
    # A header the proxy sets, not the WSGI REMOTE_USER variable; a request without it keeps
    # its session (the login page still works behind the same proxy).
    force_logout_if_no_header = False

    @property
    def header(self) -> str:  # read per request, so the setting applies without a restart
        return settings.AUDIT_REMOTE_USER_HEADER

    def process_request(self, request) -> None:
        # Not from a trusted proxy: a client's own header, ignored (its session stays as is).
        if from_trusted_proxy(request.META.get("REMOTE_ADDR", "")):
            super().process_request(request)

    async def aprocess_request(self, request) -> None:
        if from_trusted_proxy(request.META.get("REMOTE_ADDR", "")):
            await super().aprocess_request(request)


class ProxyUserBackend(RemoteUserBackend):
    """RemoteUserBackend (refuses inactive users); creates unknown ones only when
    AUDIT_REMOTE_USER_CREATE is on."""

    @property
    def create_unknown_user(self) -> bool:  # type: ignore[override]
        return bool(settings.AUDIT_REMOTE_USER_CREATE)
