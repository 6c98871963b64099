"""Token authentication with a short per-process memory of valid tokens (the API's, and a
token's user for /metrics).

Every API request authenticated by DRF's TokenAuthentication costs a query (token joined to
its user) that is a large share of a cached read at 20 concurrent clients. A valid token is
remembered for AUDIT_API_TOKEN_CACHE_SECONDS (default 10) in the process that checked it, so
a revoked token or a deactivated user keeps access for at most that long; 0 turns it off.
Only valid tokens are remembered (an unknown key is checked every time), keyed by a digest of
the key so the key itself is not kept in memory as a dict key.

A token marked read-only (`audit.models.ApiToken`) is refused (403) on any unsafe method here,
before any view or permission runs, so no view can forget the check.
"""

from __future__ import annotations

import hashlib
import threading
import time

from django.conf import settings
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import SAFE_METHODS

from audit.models import ApiToken

_MAX_ENTRIES = 10_000
_remembered: dict[str, tuple[float, object, object]] = {}
_lock = threading.Lock()


class CachedTokenAuthentication(TokenAuthentication):
    def authenticate(self, request):
        found = super().authenticate(request)
        if found is not None and request.method not in SAFE_METHODS and is_read_only(found[1]):
            raise PermissionDenied("this API token is read-only")
        return found

    def authenticate_credentials(self, key):
        seconds = getattr(settings, "AUDIT_API_TOKEN_CACHE_SECONDS", 10)
        if not seconds:
            return super().authenticate_credentials(key)
        digest = hashlib.sha256(key.encode()).hexdigest()
        now = time.monotonic()
        hit = _remembered.get(digest)
        if hit is not None and hit[0] > now:
            return hit[1], hit[2]
        user, token = super().authenticate_credentials(key)  # AuthenticationFailed if invalid
        with _lock:
            if len(_remembered) >= _MAX_ENTRIES:
                _remembered.clear()
            _remembered[digest] = (now + seconds, user, token)
        return user, token


def is_read_only(token) -> bool:
    """Whether the DRF token is marked read-only (asked on unsafe requests only)."""
    return ApiToken.objects.filter(token_id=token.pk, read_only=True).exists()


def forget_tokens() -> None:
    """Drop every remembered token (tests; a token revoked on purpose)."""
    with _lock:
        _remembered.clear()
