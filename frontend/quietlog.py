"""A client's 403 or 404 is logged as one line, without a traceback.

Django logs a PermissionDenied with its exception, so an ordinary "you may not" filled the log
with a traceback per request. Server errors keep theirs. Installed on the `django.request`
logger by config/settings.py (LOGGING); imports nothing, as logging is configured before apps.
"""

from __future__ import annotations

import logging
from typing import Any

CLIENT_ERRORS = (403, 404)


class QuietClientErrors(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        status: Any = getattr(record, "status_code", None)
        if status in CLIENT_ERRORS:
            # exc_text too: the scrubbing record factory (audit/trust/logscrub.py) formats it.
            record.exc_info, record.exc_text = None, None
        return True
