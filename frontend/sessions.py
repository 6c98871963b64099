"""Who a dashboard request is: the session and its user, each one precompiled indexed read.

Every logged-in page and status poll reads its session row and its user row from the database
(aim: pages under 50 ms p95). Through the ORM each read cost ~0.3-0.5 ms of Python to
build and compile the query, a third of a cached page's CPU. Here the SQL is compiled once per
process (`audit.reads.sessions`); what is read, and when, is exactly Django's database session and `ModelBackend`:

- the session row is read on every request (key and expiry checked in SQL, as the `db`
  backend does), so a logout or a flush (its row deleted) is seen by every worker process on
  its next request: revocation stays server-side and exact;
- the user row is read on every request, so a password change (the session's auth hash no
  longer matches, checked by `django.contrib.auth.get_user`) and a deactivation
  (`is_active`) take effect on the next request too.

Nothing is kept between requests: no per-process cache of either row (decoding a session is
~10 us and a cache across processes could not be exact). Writing a session (login, messages,
flush, cycle_key) is the `db` backend's own code.
"""

from __future__ import annotations

from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.auth.backends import ModelBackend
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore

from audit.reads import sessions

USER_BACKEND = "frontend.sessions.UserBackend"
_DJANGO_BACKEND = "django.contrib.auth.backends.ModelBackend"


class SessionStore(DatabaseSessionStore):
    """The `db` session backend whose read is plain SQL compiled once (same row, same check)."""

    def load(self) -> dict:
        key = self.session_key
        if key is None:  # not a valid key (Django refuses short ones): nothing to read
            return {}
        encoded = sessions.session_data(self.model, key)
        if encoded is None:  # deleted (logout, flush) or expired: as the db backend, a new key
            self._session_key = None
            return {}
        data = self.decode(encoded)
        if data.get(BACKEND_SESSION_KEY) == _DJANGO_BACKEND:
            # Logged in before UserBackend replaced ModelBackend in the settings: the same
            # checks, so the session stays valid (in memory; it is saved as it was).
            data[BACKEND_SESSION_KEY] = USER_BACKEND
        return data


class UserBackend(ModelBackend):
    """`ModelBackend` whose per-request user read is compiled once (same row, same checks:
    an inactive user is no user)."""

    def get_user(self, user_id):
        user = sessions.user_by_id(user_id)
        if user is None:
            return None
        return user if self.user_can_authenticate(user) else None
