"""The one error type of the core. Its message is a single line meant for users."""

# Why a table could not be read, for the CLI, the table page and alert rules.
CAUSES = ("access_denied", "not_found", "unreachable", "other")


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
