"""The two reads of who a dashboard request is (`frontend.sessions`): its session row and its
user row, each one indexed read by SQL compiled once per process (through the ORM each cost
~0.3-0.5 ms of Python to build and compile, a third of a cached page's CPU)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from audit.reads.prepared import Prepared, fetch_sql


def _session_sql() -> str:
    from django.contrib.sessions.models import Session

    quote = connection.ops.quote_name
    meta = Session._meta
    data, key, expires = (quote(meta.get_field(f).column)
                          for f in ("session_data", "session_key", "expire_date"))  # fmt: skip
    return f"SELECT {data} FROM {quote(meta.db_table)} WHERE {key} = %s AND {expires} > %s"


def session_data(model: Any, key: str) -> str | None:
    """The encoded data of the unexpired session `key` (None: deleted or expired), the key
    and expiry checked in SQL as Django's `db` backend does."""
    expires = model._meta.get_field("expire_date")
    now = expires.get_db_prep_value(timezone.now(), connection, prepared=False)
    rows = fetch_sql("session", _session_sql, [key, now])
    return rows[0][0] if rows else None


_user_by_pk = Prepared(lambda pk: get_user_model()._default_manager.filter(pk=pk))


def user_by_id(user_id: Any) -> Any | None:
    """The user with this id (every column), or None."""
    users = _user_by_pk(get_user_model()._meta.pk.get_prep_value(user_id))
    return users[0] if users else None
