"""Per-user (per-token) throttling of the expensive endpoints, so one client cannot starve others.

Expensive: explain (parses up to a megabyte of text and may read a table's history), the
analyses (hotspots, settings, recommendations, writers: a full audit when not cached), every
read of a log or data files (the diff between two versions, the health of a past version) and
the timeline at full zoom (no window, or one wider than AUDIT_API_TIMELINE_CHEAP_SPAN versions). Over the
rate DRF answers 429 with Retry-After. The rate is read from settings on every request, so it
can be changed per deployment (AUDIT_API_EXPENSIVE_RATE) and per test.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.throttling import UserRateThrottle


class ExpensiveRateThrottle(UserRateThrottle):
    """Counts per authenticated user (a token belongs to one user); anonymous ones per IP."""

    scope = "expensive"

    def get_rate(self) -> str | None:
        return settings.AUDIT_API_EXPENSIVE_RATE or None

    def allow_request(self, request: Any, view: Any) -> bool:
        # The rate is looked up per request (not once at construction) so settings apply live.
        self.rate = self.get_rate()
        if self.rate is None:
            return True
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)


class FullZoomTimelineThrottle(ExpensiveRateThrottle):
    """Only the timeline requests that group the whole history (or a very wide window)."""

    def allow_request(self, request: Any, view: Any) -> bool:
        if not is_full_zoom(request.query_params):
            return True
        return super().allow_request(request, view)


class LogReadThrottle(ExpensiveRateThrottle):
    """Only the requests that read the log or data files: the health of a past version
    (`?version=`); the latest version's health is stored and served without reading."""

    def allow_request(self, request: Any, view: Any) -> bool:
        if "version" not in request.query_params:
            return True
        return super().allow_request(request, view)


def is_full_zoom(params: Any) -> bool:
    try:
        low = int(params.get("from_version"))
        high = int(params.get("to_version"))
    except (TypeError, ValueError):
        return True  # an open window reaches the whole history
    return high - low > settings.AUDIT_API_TIMELINE_CHEAP_SPAN
