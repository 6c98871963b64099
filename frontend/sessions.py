"""Who a dashboard request is: the session and its user, each one precompiled indexed read.

Every logged-in page and status poll reads its session row and its user row from the database
(aim: pages under 50 ms p95). Through the ORM each read cost ~0.3-0.5 ms of Python to
build and compile the query, a third of a cached page's CPU. Here the SQL is compiled once per
process; what is read, and when, is exactly Django's database session and `ModelBackend`:

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

from django.contrib.auth import BACKEND_SESSION_KEY, get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.db import connection
from django.utils import timezone

from audit.reads.prepared import Prepared, fetch_sql

USER_BACKEND = "frontend.sessions.UserBackend"
_DJANGO_BACKEND = "django.contrib.auth.backends.ModelBackend"


def _session_sql() -> str:
    from django.contrib.sessions.models import Session

    quote = connection.ops.quote_name
    meta = Session._meta
    data, key, expires = (quote(meta.get_field(f).column)
                          for f in ("session_data", "session_key", "expire_date"))  # fmt: skip
    return f"SELECT {data} FROM {quote(meta.db_table)} WHERE {key} = %s AND {expires} > %s"


class SessionStore(DatabaseSessionStore):
    """The `db` session backend whose read is plain SQL compiled once (same row, same check)."""

    def load(self) -> dict:
        key = self.session_key
        if key is None:  # not a valid key (Django refuses short ones): nothing to read
            return {}
        expires = self.model._meta.get_field("expire_date")
        now = expires.get_db_prep_value(timezone.now(), connection, prepared=False)
        rows = fetch_sql("session", _session_sql, [key, now])
        if not rows:  # deleted (logout, flush) or expired: as the db backend, a new key
            self._session_key = None
            return {}
        data = self.decode(rows[0][0])
        if data.get(BACKEND_SESSION_KEY) == _DJANGO_BACKEND:
            # Logged in before UserBackend replaced ModelBackend in the settings: the same
            # checks, so the session stays valid (in memory; it is saved as it was).
            data[BACKEND_SESSION_KEY] = USER_BACKEND
        return data


_user_by_pk = Prepared(lambda pk: get_user_model()._default_manager.filter(pk=pk))


class UserBackend(ModelBackend):
    """`ModelBackend` whose per-request user read is compiled once (same row, same checks:
    an inactive user is no user)."""

    def get_user(self, user_id):
        users = _user_by_pk(get_user_model()._meta.pk.get_prep_value(user_id))
        if not users:
            return None
        return users[0] if self.user_can_authenticate(users[0]) else None
