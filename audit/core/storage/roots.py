"""Which paths may be read: the allowed roots (settings.AUDIT_ALLOWED_ROOTS) and what lies in them.

Two questions, one rule. `check_allowed(uri, roots)` answers for a table URI a user typed (the
CLI, the API and the workers call it through audit/trust/paths.py). `resolve_data_file(path,
table_uri, roots)` answers for a data file an `add` action names, before the witness opens it:
a log is written by whoever can write the table, so its paths are untrusted input, and a file
read there has its rows shown to every user who can see the finding. The roots a table's
files are read in are its `ReadScope`: its own location, the read roots its project was
granted, minus the tables of other projects inside them (`table_scope`).

Both resolve before comparing: local paths through `..` and symlinks (os.path.realpath),
`file:` URIs and percent-encoding decoded; remote URIs must name a listed scheme and bucket and
may not contain `..` segments, credentials, a port, queries or percent-encoded separators. The
caller opens the *resolved* location, never the raw text, so what was checked is what is read.

Not covered: the small window between the check and the open (a symlink swapped in between).
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload
from urllib.parse import unquote, urlsplit

from audit.core.errors import DeltaAuditError
from audit.core.scrub import scrub_parameters

REMOTE_SCHEMES = frozenset({"s3", "s3a", "gs", "gcs", "abfs", "abfss", "az", "azure"})
# Percent-encodings of characters that change how a path is split or resolved:
# "." "/" "\" "%" and NUL. A table root never needs them.
_ENCODED_SEPARATORS = re.compile(r"%(2e|2f|5c|25|00)", re.IGNORECASE)
# In a remote data file's path "%2F" and "%25" are legitimate (Hive-style partition folders
# escape "/" and "%"), but an encoded dot, backslash or NUL, even encoded twice, may be read as
# a dot segment or separator by an HTTP client: never legitimate.
_ENCODED_DOTS = re.compile(r"%(25)*(2e|5c|00)", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

# Longer paths are cut where they are shown (Hive-style folders of many partition columns
# reach 500 characters).
SHOWN_PATH_LIMIT = 1000
# abfss://container@account...: the part before "@" names a container, not a user.
_CONTAINER_SCHEMES = frozenset({"abfs", "abfss", "wasb", "wasbs"})
_CONTAINER = re.compile(r"[a-z0-9](?:[a-z0-9-]{1,61}[a-z0-9])?")

# What a finding's witness says about a data file that was refused (never opened).
REFUSED = "witness not read: path outside the allowed roots"


class UriNotAllowed(DeltaAuditError):
    """The URI is malformed or outside every allowed root."""


def not_under_roots(uri: str) -> UriNotAllowed:
    """The refusal of a table URI outside every root, in the one wording every refusal of a
    well-formed URI uses (a URI inside another project's table gets it too: the answer must
    not tell the two apart)."""
    return UriNotAllowed(f"{_show(uri.strip())} is not under an allowed root (AUDIT_ALLOWED_ROOTS)")


@dataclass(frozen=True, slots=True)
class ReadScope(Sequence[str]):
    """Where one table's reads may go: `roots` (its own location first, then the read roots
    its project was granted), except inside `excluded` (other projects' tables). A sequence
    of its roots, so it goes wherever read roots go; DataFiles also honours the exclusions."""

    roots: tuple[str, ...]
    excluded: tuple[str, ...] = ()

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self.roots[index]

    def __len__(self) -> int:
        return len(self.roots)

    def __iter__(self) -> Iterator[str]:
        return iter(self.roots)

    def excludes(self, location: str) -> bool:
        """Whether `location` (normalised as `resolve_data_file` finds it) lies in an
        excluded location."""
        return any(within(location, other) for other in self.excluded)


def as_scope(roots: Sequence[str] | None, table_uri: str) -> ReadScope:
    """`roots` as a ReadScope (None: the table's own location only)."""
    if isinstance(roots, ReadScope):
        return roots
    return ReadScope(tuple(roots) if roots is not None else (table_uri,))


def location_of(uri: str) -> str | None:
    """`uri` normalised as a table location (resolved local path, normalised remote URI), or
    None when it is malformed."""
    try:
        text = _basic_checks(uri)
        scheme = _scheme(text)
        if scheme in REMOTE_SCHEMES:
            return _normalise_remote(text, scheme)
        if scheme in ("", "file"):
            return _normalise_local(text)
    except DeltaAuditError:
        return None
    return None


def within(location: str, outer: str) -> bool:
    """Whether the normalised `location` is `outer` or lies under it (whole path segments)."""
    return location == outer or location.startswith(outer.rstrip("/") + "/")


def ancestors(location: str) -> list[str]:
    """The folders above a normalised location, nearest first, down to "/" or the bucket."""
    scheme, sep, rest = location.partition("://")
    if not sep:  # a local path: "/a/b" -> "/a", "/"
        parts = [p for p in location.split("/") if p]
        return ["/" + "/".join(parts[:i]) for i in range(len(parts) - 1, -1, -1)]
    parts = [p for p in rest.split("/") if p]  # "s3://b/x/y" -> "s3://b/x", "s3://b"
    return [f"{scheme}://" + "/".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]


def table_scope(own: str, granted: Sequence[str] = (), others: Sequence[str] = ()) -> ReadScope:
    """The ReadScope of the table at `own`: its location, then the `granted` roots that do not
    lie in one of `others` (other projects' table locations); excluded: the `others` inside
    those roots, except one holding the table itself (its own files stay readable). Every
    entry normalised; malformed ones are dropped."""
    here = location_of(own) or own
    other_locations = [o for o in (location_of(x) for x in others) if o is not None]
    roots = [here]
    for root in granted:
        found = location_of(root)
        taken = found is None or found in roots
        if not taken and not any(within(found, o) for o in other_locations):
            roots.append(found)
    excluded = [
        o for o in other_locations if not within(here, o) and any(within(o, r) for r in roots)
    ]
    return ReadScope(tuple(roots), tuple(sorted(set(excluded))))


@dataclass(frozen=True, slots=True)
class DataFile:
    """Where a data file really is, and the allowed root that lets it be read."""

    location: str  # an absolute, resolved local path, or a normalised remote URI
    root: str  # the allowed root it lies in, normalised like `location`
    local: bool


def check_allowed(uri: str, roots: Sequence[str]) -> str:
    """The normalised form of `uri` if it lies under one of `roots`; else UriNotAllowed.

    Local results are absolute, resolved paths; remote results are `scheme://bucket/path`
    without a trailing slash.
    """
    text = _basic_checks(uri)
    scheme = _scheme(text)
    if scheme in REMOTE_SCHEMES:
        normalised = _normalise_remote(text, scheme)
        if _remote_root_of(normalised, roots) is not None:
            return normalised
    elif scheme in ("", "file"):
        normalised = _normalise_local(text)
        if _local_root_of(normalised, roots) is not None:
            return normalised
    else:
        raise UriNotAllowed(f"unsupported URI scheme {scheme!r} in {_show(text)}")
    raise not_under_roots(text)


def resolve_data_file(
    path: str, table_uri: str, roots: Sequence[str], memo: dict[str, str] | None = None
) -> DataFile:
    """Where the data file `path` of the table at `table_uri` lies, and in which allowed root.

    `path` is an add action's path as the log reader gives it (URL-decoded once): relative to
    the table root, an absolute local path, a `file:` URI, or a remote URI (shallow clones).
    UriNotAllowed (message: REFUSED, never the path) when it resolves outside every root or
    cannot be resolved safely; the caller then must not open it.

    `memo`: where one reader of a table (a pass's DataFiles) keeps the resolved table root and
    roots between calls: a local file then costs one `realpath` (its own), not three. The
    file's own path is resolved every time (a symlink in the table folder must not escape).
    """
    try:
        location, local = _locate(path, table_uri, memo)
        where = location if local else _normalise_remote(location, _scheme(location))
        root = _local_root_of(where, roots, memo) if local else _remote_root_of(where, roots)
    except DeltaAuditError:
        raise UriNotAllowed(REFUSED) from None
    if root is None or (isinstance(roots, ReadScope) and roots.excludes(where)):
        raise UriNotAllowed(REFUSED)
    return DataFile(location, root, local)


def _normalised_root(text: str, memo: dict[str, str] | None) -> str:
    """`_normalise_local(text)` of a table root or an allowed root, kept in `memo` if given."""
    if memo is None:
        return _normalise_local(text)
    found = memo.get(text)
    if found is None:
        found = memo[text] = _normalise_local(text)
    return found


def _locate(path: str, table_uri: str, memo: dict[str, str] | None = None) -> tuple[str, bool]:
    if not path or _CONTROL.search(path) or "\\" in path:
        raise UriNotAllowed("malformed data file path")
    scheme = _scheme(path)
    if scheme in REMOTE_SCHEMES:
        return _remote_location(path, scheme), False
    if scheme or path.startswith("file:"):
        if not path.startswith("file:"):
            raise UriNotAllowed(f"unsupported URI scheme {scheme!r}")
        return _normalise_local(_basic_checks(path), strip_log=False), True
    if path.startswith("/"):
        return os.path.realpath(path), True
    # Relative: against the table root, resolved like the root itself.
    table = _basic_checks(table_uri)
    table_scheme = _scheme(table)
    if table_scheme in REMOTE_SCHEMES:
        # `..` segments are refused by _remote_location (object stores have no directories).
        base = _normalise_remote(table, table_scheme)
        return _remote_location(f"{base}/{path.lstrip('/')}", table_scheme), False
    if table_scheme not in ("", "file"):
        raise UriNotAllowed(f"unsupported URI scheme {table_scheme!r}")
    return os.path.realpath(os.path.join(_normalised_root(table, memo), path)), True


def _remote_location(uri: str, scheme: str) -> str:
    """`uri` checked like a table URI, kept in its raw (still encoded) spelling to be opened."""
    if _ENCODED_DOTS.search(uri):
        raise UriNotAllowed("encoded dot or separator in a remote data file path")
    _normalise_remote(uri, scheme)  # raises on '..', credentials, a port, a query
    parts = urlsplit(uri)
    segments = [s for s in parts.path.split("/") if s]
    return f"{scheme}://{parts.netloc}/{'/'.join(segments)}"


def _local_root_of(
    path: str, roots: Sequence[str], memo: dict[str, str] | None = None
) -> str | None:
    for root in roots:
        if _scheme(root) not in ("", "file"):
            continue
        try:
            root_path = _normalised_root(root, memo)
        except DeltaAuditError:
            continue
        if path == root_path or path.startswith(root_path.rstrip(os.sep) + os.sep):
            return root_path
    return None


def _remote_root_of(target: str, roots: Sequence[str]) -> str | None:
    """The root `target` (already normalised) lies in."""
    for root in roots:
        scheme = _scheme(root)
        if scheme not in REMOTE_SCHEMES:
            continue
        try:
            root_uri = _normalise_remote(_basic_checks(root), scheme)
        except DeltaAuditError:
            continue
        if target == root_uri or target.startswith(root_uri.rstrip("/") + "/"):
            return root_uri
    return None


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


def _normalise_local(text: str, *, strip_log: bool = True) -> str:
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
    if strip_log and trimmed.endswith(os.sep + "_delta_log"):
        trimmed = os.path.dirname(trimmed)
    return trimmed


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


def shown_path(path: str, limit: int = SHOWN_PATH_LIMIT) -> str:
    """A path from a log or a listing as a finding, page, note or list shows it: the one place
    a data file's path becomes text. A URI loses its user-info, query and fragment (they can
    carry keys or signed tokens); any other path the values of the signed-request parameters
    after a "?" (`?sig=***`: its folders stay whole, a Hive folder `sig=x/` included); control
    characters become "?", and it is cut at `limit` characters."""
    if "://" in path or path.startswith("file:"):
        path = _without_credentials(path)
    else:
        head, mark, query = path.partition("?")
        path = head + scrub_parameters(mark + query)
    path = _CONTROL.sub("?", path)
    return path if len(path) <= limit else path[: limit - 3] + "..."


def _without_credentials(uri: str) -> str:
    """`uri` without query, fragment and user-info (an Azure container name before the "@"
    of abfss://container@account stays). By hand: urlsplit raises on some hostile forms."""
    scheme, sep, rest = uri.partition("://")
    if not sep:  # file:/path
        scheme, _, rest = uri.partition(":")
    scheme, rest = scheme.lower(), re.split(r"[?#]", rest, maxsplit=1)[0]
    authority, slash, tail = rest.partition("/") if sep else ("", "", rest)
    user, at, host = authority.rpartition("@")
    if scheme in _CONTAINER_SCHEMES and at and _CONTAINER.fullmatch(user):
        host = f"{user}@{host}"
    return f"{scheme}://{host}{slash}{tail}" if host else f"{scheme}:{slash}{tail}"


def remote_table_location(table_uri: str) -> str | None:
    """The remote table root spelled as `resolve_data_file` spells locations; None if local."""
    text = table_uri.strip()
    scheme = _scheme(text)
    if scheme not in REMOTE_SCHEMES:
        return None
    try:
        return _remote_location(_normalise_remote(text, scheme), scheme)
    except DeltaAuditError:
        return None
