"""`Table.of_columns`: a Table of columns read by plain SQL, each value on its own column
whatever the order given, the others deferred (read from the database if asked), and no query
to build it (`Table(...)` fills the project with its default: a get-or-create query)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import Table

pytestmark = pytest.mark.django_db


def test_it_puts_each_value_on_its_column_and_runs_no_query():
    stored = Table.objects.create(uri="/t/a", name="a", status="ok", last_seen_version=7)
    with CaptureQueriesContext(connection) as queries:
        # Given against the model's column order (findings_generation comes after the others).
        table = Table.of_columns(
            findings_generation=3, last_seen_version=7, name="a", uri="/t/a", id=stored.pk
        )
        assert (table.pk, table.uri, table.name) == (stored.pk, "/t/a", "a")
        assert (table.last_seen_version, table.findings_generation) == (7, 3)
        assert str(table) == "a"
    assert not queries.captured_queries
    assert table.status == "ok"  # deferred: read from its row when asked


def test_it_refuses_a_name_that_is_no_column():
    with pytest.raises(AssertionError, match="not columns of Table"):
        Table.of_columns(id=1, project="p")
