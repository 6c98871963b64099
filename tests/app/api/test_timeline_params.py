"""The timeline's parameters read without the serializer (routes.timeline_params): the same
window TimelineQuerySerializer validates, or None so the serializer reads and words it."""

from __future__ import annotations

import pytest
from django.http import QueryDict

from audit.api.serializers import TimelineQuerySerializer
from audit.reads.declared import routes

QUERIES = [
    "", "from_version=5", "to_version=9", "from_version=0&to_version=0",
    "from_version=3&to_version=2", "from_version=10&to_version=2000&max_points=2",
    "max_points=1", "max_points=2", "max_points=10000", "max_points=10001",
    "from_version=-1", "from_version=01", "from_version=1.0", "from_version=%201",
    "from_version=", "from_version=1&from_version=2", "from_version=\u0661\u0662",
    "from_version=9223372036854775807", "from_version=9223372036854775808",
    "to_version=99999999999999999999", "max_points=abc", "other=1&from_version=4",
    "from_version=4&to_version=4&max_points=500", "from_version=+4",
]  # fmt: skip


def _serializer(query: str):
    serializer = TimelineQuerySerializer(data=QueryDict(query))
    if not serializer.is_valid():
        return None
    data = serializer.validated_data
    return data.get("from_version"), data.get("to_version"), data["max_points"]


@pytest.mark.parametrize("query", QUERIES)
def test_it_reads_what_the_serializer_validates_or_leaves_it_to_it(query):
    fast = routes.timeline_params(QueryDict(query))
    if fast is not None:
        assert fast == _serializer(query)
    # What the fast read refuses, the serializer reads (or refuses, with its own words).


def test_it_reads_every_plain_window_itself():
    for query in ("", "from_version=5&to_version=9", "max_points=10000", "to_version=0"):
        assert routes.timeline_params(QueryDict(query)) == _serializer(query) is not None
    for query in ("max_points=1", "from_version=3&to_version=2", "from_version=1.0"):
        assert routes.timeline_params(QueryDict(query)) is None
