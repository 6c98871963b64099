"""The commits and findings lists as django-filter and the ORM answered them before their SQL
was compiled once (audit/api/list_sql.py): the reference the production path must equal
byte for byte (tests/app/api/test_lists_equal_their_orm_reference.py). `use(monkeypatch)` makes the views build their
rows this way; everything else (permissions, pagination, caching, rendering) stays theirs."""

from __future__ import annotations

import pytest

from audit.api import serializers as s
from audit.api.views import FindingViewSet, TableViewSet


def commit_rows(view: TableViewSet, table_id: int):
    """The FilterSet's rows of the table's commits (its 400 for a bad filter)."""
    queryset = view.filter_queryset(view.get_queryset().filter(table_id=table_id))
    return queryset.values(*s.COMMIT_LIST_FIELDS)


def finding_rows(view: FindingViewSet, visible: list[int] | None):
    """The FilterSet's rows of the findings of the reader's tables (the view's queryset is
    restricted to their projects: `visible` is not needed)."""
    return view.filter_queryset(view.get_queryset()).values(*s.FINDING_LIST_FIELDS)


def use(monkeypatch: pytest.MonkeyPatch) -> None:
    """The views answer by the reference until `monkeypatch` is undone."""
    monkeypatch.setattr(TableViewSet, "commit_rows", commit_rows)
    monkeypatch.setattr(FindingViewSet, "finding_rows", finding_rows)
