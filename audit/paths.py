"""Which table URIs users may register: only those under settings.AUDIT_ALLOWED_ROOTS.

`check_allowed(uri)` is the one gate the CLI, the API and the workers call before touching a
path a user typed. Local paths are resolved (symlinks, `..`) before the comparison, so a link
or a `../` cannot step outside a root; remote URIs must name a listed scheme and bucket and may
not contain `..` segments, credentials, queries or percent-encoded separators.
`check_registered(uri)` repeats the check right before a stored table's log is read.

Not covered: the small window between the check and the open (a symlink swapped in between);
the read-time re-check bounds it to one tail pass. `manage.py audit <uri>` is a local user's
tool and reads any path that user can read; it does not call this gate.
"""

from __future__ import annotations

import os
import posixpath
import re
from urllib.parse import unquote, urlsplit

from audit.core.errors import DeltaAuditError

REMOTE_SCHEMES = frozenset({"s3", "s3a", "gs", "gcs", "abfs", "abfss", "az", "azure"})
# Percent-encodings of characters that change how a path is split or resolved:
# "." "/" "\" "%" and NUL. A table root never needs them.
_ENCODED_SEPARATORS = re.compile(r"%(2e|2f|5c|25|00)", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class UriNotAllowed(DeltaAuditError):
    """The URI is malformed or outside every allowed root."""


def check_allowed(uri: str, roots: list[str] | None = None) -> str:
    """The normalised form of `uri` if it lies under one of `roots`; else UriNotAllowed.

    `roots` defaults to settings.AUDIT_ALLOWED_ROOTS. Local results are absolute, resolved
    paths; remote results are `scheme://bucket/path` without a trailing slash.
    """
    if roots is None:
        from django.conf import settings

        roots = list(settings.AUDIT_ALLOWED_ROOTS)
    text = _basic_checks(uri)
    scheme = _scheme(text)
    if scheme in REMOTE_SCHEMES:
        normalised = _normalise_remote(text, scheme)
        if any(
            _remote_under(normalised, root) for root in roots if _scheme(root) in REMOTE_SCHEMES
        ):
            return normalised
    elif scheme in ("", "file"):
        normalised = _normalise_local(text)
        if any(_local_under(normalised, root) for root in roots if _scheme(root) in ("", "file")):
            return normalised
    else:
        raise UriNotAllowed(f"unsupported URI scheme {scheme!r} in {_show(text)}")
    raise UriNotAllowed(f"{_show(text)} is not under an allowed root (AUDIT_ALLOWED_ROOTS)")


def check_registered(uri: str) -> str:
    """Re-check a stored table URI right before its log is read (tail, analyses, pages).

    Registration resolved the path once; a directory swapped for a symlink afterwards, or a
    root removed from AUDIT_ALLOWED_ROOTS since, must stop the reads, not only new sign-ups.
    """
    try:
        return check_allowed(uri)
    except UriNotAllowed as err:
        raise UriNotAllowed(f"registered table refused: {err}") from None


def _show(text: str) -> str:
    return repr(text[:200])


def _basic_checks(uri: str) -> str:
    if not isinstance(uri, str) or not uri.strip():
        raise UriNotAllowed("empty table URI")
    text = uri.strip()
    if _CONTROL.search(text):
        raise UriNotAllowed(f"table URI contains control characters: {_show(text)}")
    if _ENCODED_SEPARATORS.search(text):
        raise UriNotAllowed(f"table URI contains percent-encoded separators: {_show(text)}")
    if "\\" in text:
        # A backslash is a separator on Windows and in some object-store clients: never needed.
        raise UriNotAllowed(f"table URI may not contain backslashes: {_show(text)}")
    if len(text) > 1900:
        raise UriNotAllowed("table URI is too long")
    return text


def _scheme(text: str) -> str:
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", text)
    return match.group(1).lower() if match else ""


def _normalise_local(text: str) -> str:
    if text.startswith("file:"):
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
            raise UriNotAllowed(f"file URI must name a local path: {_show(text)}")
        text = unquote(parts.path)
    path = os.path.expanduser(text)
    if not os.path.isabs(path):
        path = os.path.abspath(path)
    resolved = os.path.realpath(path)
    trimmed = resolved.rstrip(os.sep) or os.sep
    if trimmed.endswith(os.sep + "_delta_log"):
        trimmed = os.path.dirname(trimmed)
    return trimmed


def _local_under(path: str, root: str) -> bool:
    try:
        root_path = _normalise_local(root)
    except DeltaAuditError:
        return False
    return path == root_path or path.startswith(root_path.rstrip(os.sep) + os.sep)


def _normalise_remote(text: str, scheme: str) -> str:
    parts = urlsplit(text)
    if parts.query or parts.fragment:
        raise UriNotAllowed(f"table URI may not carry a query or fragment: {_show(text)}")
    if not parts.netloc:
        raise UriNotAllowed(f"remote URI has no bucket: {_show(text)}")
    # s3://user:secret@bucket or s3://bucket:port would dodge the bucket comparison. Azure's
    # abfss://container@account.dfs.core.windows.net legitimately holds one "@".
    max_at = 1 if scheme in ("abfs", "abfss") else 0
    if parts.netloc.count("@") > max_at or ":" in parts.netloc:
        raise UriNotAllowed(f"remote URI may not carry credentials or a port: {_show(text)}")
    raw_path = unquote(parts.path)
    segments = [s for s in raw_path.split("/") if s]
    if any(s in (".", "..") for s in segments) or "\\" in raw_path:
        raise UriNotAllowed(f"remote URI may not contain '.' or '..' segments: {_show(text)}")
    path = posixpath.join("/", *segments) if segments else ""
    if path.endswith("/_delta_log"):
        path = path[: -len("/_delta_log")]
    return f"{scheme}://{parts.netloc}{path if path != '/' else ''}"


def _remote_under(uri: str, root: str) -> bool:
    try:
        root_uri = _normalise_remote(_basic_checks(root), _scheme(root))
    except DeltaAuditError:
        return False
    return uri == root_uri or uri.startswith(root_uri.rstrip("/") + "/")
