"""The one error type of the core. Its message is a single line meant for users."""


class DeltaAuditError(Exception):
    """A table cannot be read or analysed. `str(err)` is one clear line, no traceback needed."""

    def __init__(self, message: str, *, table_uri: str | None = None, version: int | None = None):
        self.table_uri = table_uri
        self.version = version
        super().__init__(message)
