"""The one error type of the core. Its message is a single line meant for users."""

from audit.core.scrub import scrub_error
from audit.core.vocab import StorageCause

# Why a table could not be read, for the CLI, the table page and alert rules.
CAUSES: tuple[str, ...] = tuple(cause.value for cause in StorageCause)


class DeltaAuditError(Exception):
    """A table cannot be read or analysed. `str(err)` is one clear line, no traceback needed.

    `cause` classifies storage failures (one of CAUSES) when known, else None.
    """

    def __init__(
        self,
        message: str,
        *,
        table_uri: str | None = None,
        version: int | None = None,
        cause: str | None = None,
    ):
        self.table_uri = table_uri
        self.version = version
        self.cause = cause
        super().__init__(message)


def one_line(value: str | BaseException, limit: int = 500, empty: str | None = None) -> str:
    """The first non-blank line of a message or exception, white space folded, at most `limit`.

    The one helper for turning an error into the single line users see (CLI, pages, API, task
    results, Spark). Non-printable characters become spaces: log text is untrusted. The line is
    scrubbed (audit/core/scrub.py) before it is cut, so no URL path, signed-request parameter or
    known secret survives, not even in part.
    `empty` is said when there is no text (default: the exception's class name, or "unknown
    error" for a string).
    """
    text = str(value)
    for line in text.splitlines():
        # Most lines are printable already: only the others are rebuilt character by character.
        if not line.isprintable():
            line = "".join(ch if ch.isprintable() else " " for ch in line)
        flat = scrub_error(" ".join(line.split()))
        if flat:
            return flat if len(flat) <= limit else flat[: max(limit - 3, 0)] + "..."
    if empty is not None:
        return empty
    return type(value).__name__ if isinstance(value, BaseException) else "unknown error"
