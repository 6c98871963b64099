"""Turn an object-store failure into a one-line `DeltaAuditError` that says the cause.

object_store, pyarrow and the servers word the same failure in many ways ("403 Forbidden",
"lacked the necessary privileges", "InvalidAccessKeyId", "AuthenticationFailed", ...). The
message never repeats the raw error text for the known causes (it can hold signed URLs or SAS
tokens); for other failures it keeps a scrubbed first line: no query strings, no secrets.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from audit.core import scrub as scrubber
from audit.core.errors import DeltaAuditError
from audit.core.vocab import StorageCause

# The causes under the names this module has always exported.
ACCESS_DENIED = StorageCause.ACCESS_DENIED
NOT_FOUND = StorageCause.NOT_FOUND
UNREACHABLE = StorageCause.UNREACHABLE
OTHER = StorageCause.OTHER

_PATTERNS: tuple[tuple[StorageCause, re.Pattern[str]], ...] = (
    (
        ACCESS_DENIED,
        re.compile(
            r"\b40[13]\b|forbidden|unauthori[sz]ed|access ?denied|lacked the necessary privileges"
            r"|invalidaccesskeyid|signaturedoesnotmatch|authenticationfailed|authorizationfailure"
            r"|authorizationpermissionmismatch|permission ?denied|invalid_grant|expiredtoken"
            r"|invalidclienttokenid|credentials? (?:were )?(?:not|invalid)",
            re.I,
        ),
    ),
    (
        UNREACHABLE,
        re.compile(
            r"error sending request|connection refused|connect(?:ion)? (?:error|timed out|reset)"
            r"|failed to connect|dns error|failed to lookup|name or service not known"
            r"|timed? ?out|unreachable|max_retries|curlcode|couldn't connect",
            re.I,
        ),
    ),
    (
        NOT_FOUND,
        re.compile(
            r"\b404\b|not found|nosuchbucket|nosuchkey|containernotfound|blobnotfound"
            r"|does not exist|no such file|pathnotfound|filesystemnotfound",
            re.I,
        ),
    ),
)
_LABELS = {
    ACCESS_DENIED: "access denied",
    NOT_FOUND: "not found",
    UNREACHABLE: "storage endpoint unreachable",
    OTHER: "storage error",
}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# object_store refuses an http:// endpoint unless told to allow it; the request never leaves,
# and its retry wording would otherwise read as an unreachable endpoint.
_PLAIN_HTTP = re.compile(r"url scheme is not allowed|builder error", re.I)
PLAIN_HTTP_HINT = (
    "use an https:// endpoint, or set AWS_ALLOW_HTTP=true "
    '(allow_http = "true" in the root\'s options of AUDIT_STORAGE_CONFIG)'
)


def plain_http_refused(err: BaseException) -> bool:
    """Whether `err` is object_store refusing an http:// endpoint (allow_http not set)."""
    text = str(err)
    return bool(_PLAIN_HTTP.search(text)) and "http://" in text


def classify(err: BaseException) -> StorageCause:
    """One of access_denied, not_found, unreachable, other."""
    if isinstance(err, FileNotFoundError):
        return NOT_FOUND
    if isinstance(err, PermissionError):
        return ACCESS_DENIED
    if isinstance(err, ConnectionError | TimeoutError):
        return UNREACHABLE
    text = _ANSI.sub("", str(err))
    for cause, pattern in _PATTERNS:
        if pattern.search(text):
            return cause
    return OTHER


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """The first meaningful line of `text`, scrubbed (audit/core/scrub.py) of URL paths, signed
    parameters, the given `secrets` and this process's own."""
    lines = [ln.strip(" ↳\t") for ln in _ANSI.sub("", text).splitlines()]
    first = next((ln for ln in lines if ln), "")
    return scrubber.scrub(first, {*secrets, *scrubber.process_secrets()})[:300]


def storage_error(
    err: BaseException,
    uri: str,
    action: str,
    *,
    where: str = "",
    secrets: Iterable[str] = (),
) -> DeltaAuditError:
    """A DeltaAuditError for `err` raised while `action` (e.g. "listing _delta_log") on `uri`.

    `where` is the redacted root/credential description, so the user sees which credential
    was refused without seeing it.
    """
    cause = classify(err)
    context = f" ({where})" if where else ""
    if plain_http_refused(err):
        cause = UNREACHABLE
        message = (
            f"{uri}: plain http to the storage endpoint was refused while {action}{context}: "
            + PLAIN_HTTP_HINT
        )
    elif cause == OTHER:
        detail = scrub(str(err), secrets) or err.__class__.__name__
        message = f"{uri}: storage error while {action}{context}: {detail}"
    elif cause == NOT_FOUND:
        message = f"{uri}: not found while {action}{context}"
    else:
        message = f"{uri}: {_LABELS[cause]} while {action}{context}"
    return DeltaAuditError(message, table_uri=uri, cause=cause)


def label(cause: str | None) -> str:
    """Words for a cause, for pages ("access denied")."""
    return _LABELS.get(cause or "", "")
