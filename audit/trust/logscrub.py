"""Log records are scrubbed where they are made, in every process that runs Django (web,
workers, commands): the message and the traceback's text go through audit/core/scrub.py.

Error texts quote what they were given (signed URLs, a Slack URL whose path is its credential,
Authorization headers), and so do some libraries' own debug lines (urllib3 logs each request's
path). A record factory sees every record once, whoever logs it and whichever handler prints
it, so no call site has to remember.
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

from audit.core.scrub import scrub_error


def scrub_record(record: logging.LogRecord) -> logging.LogRecord:
    """`record` with its message, and the text of its exception if any, scrubbed."""
    try:
        message = record.getMessage()
    except Exception:  # a bad format string: logging reports that itself when it emits
        return record
    clean = scrub_error(message)
    if clean != message:
        record.msg, record.args = clean, ()
    if record.exc_info and record.exc_info[1] is not None:
        # Formatters use exc_text when it is set, instead of formatting exc_info again.
        text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        record.exc_text = scrub_error(text)
    return record


def install() -> None:
    """Make every new log record scrubbed (once per process; idempotent)."""
    previous = logging.getLogRecordFactory()
    if getattr(previous, "scrubs", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        return scrub_record(previous(*args, **kwargs))

    factory.scrubs = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)
