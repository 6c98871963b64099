"""Which table URIs users may register: only those under settings.AUDIT_ALLOWED_ROOTS.

`check_allowed(uri)` is the one gate the CLI, the API and the workers call before touching a
path a user typed; `check_registered(uri)` repeats it right before a stored table's log is
read. The rule itself (resolution of symlinks, `..`, `file:` URIs, remote URI checks) is pure
and lives in audit/core/storage/roots.py, with the same rule for the data files a log names; this
module only supplies the configured roots.

`manage.py audit <uri>` is a local user's tool and reads any table that user can read; it does
not call this gate, but its witness reads data files only under `allowed_roots()` plus the
audited table's own root.
"""

from __future__ import annotations

from audit.core.storage.roots import REMOTE_SCHEMES, UriNotAllowed
from audit.core.storage.roots import check_allowed as _check_allowed

__all__ = ["REMOTE_SCHEMES", "UriNotAllowed", "allowed_roots", "check_allowed", "check_registered"]


def allowed_roots() -> list[str]:
    """settings.AUDIT_ALLOWED_ROOTS, read at each call (tests and reloads may change it)."""
    from django.conf import settings

    return list(settings.AUDIT_ALLOWED_ROOTS)


def check_allowed(uri: str, roots: list[str] | None = None) -> str:
    """The normalised form of `uri` if it lies under one of `roots`; else UriNotAllowed.

    `roots` defaults to settings.AUDIT_ALLOWED_ROOTS. Local results are absolute, resolved
    paths; remote results are `scheme://bucket/path` without a trailing slash.
    """
    return _check_allowed(uri, allowed_roots() if roots is None else roots)


def check_registered(uri: str) -> str:
    """Re-check a stored table URI right before its log is read (tail, analyses, pages).

    Registration resolved the path once; a directory swapped for a symlink afterwards, or a
    root removed from AUDIT_ALLOWED_ROOTS since, must stop the reads, not only new sign-ups.
    """
    try:
        return check_allowed(uri)
    except UriNotAllowed as err:
        raise UriNotAllowed(f"registered table refused: {err}") from None
