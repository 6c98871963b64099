"""Cursor pagination over one unique, indexed column, in either direction.

A page costs one index range scan (`WHERE version < :cursor ORDER BY version DESC LIMIT n+1`)
however deep it is, which is what a 1,000,000-commit table needs. `?order=asc|desc` picks the
direction; a malformed or forged cursor is a 400, never a 404 or a 500.
"""

from __future__ import annotations

import base64
from urllib import parse

from django.core.paginator import Paginator
from rest_framework.pagination import Cursor, CursorPagination, PageNumberPagination

from audit.api.exceptions import BadRequest
from audit.core.numbers import INT64_MAX


class OrderedCursorPagination(CursorPagination):
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000
    order_query_param = "order"
    # The column the cursor walks; it must be unique within the filtered rows.
    column = "version"
    default_order = "desc"
    template = None

    def get_ordering(self, request, queryset, view):
        order = request.query_params.get(self.order_query_param, self.default_order)
        if order not in ("asc", "desc"):
            raise BadRequest(
                f"{self.order_query_param} must be asc or desc, got {order[:40]!r}",
                {self.order_query_param: ["asc", "desc"]},
            )
        return (self.column,) if order == "asc" else (f"-{self.column}",)

    def decode_cursor(self, request):
        encoded = request.query_params.get(self.cursor_query_param)
        if encoded is not None:
            # DRF's decoder skips non-base64 characters, so "%%%" would read as "no cursor".
            try:
                text = base64.b64decode(encoded.encode("ascii"), validate=True).decode("ascii")
            except (ValueError, UnicodeError):
                raise BadRequest(
                    "invalid cursor: use the `next`/`previous` links as given"
                ) from None
            tokens = parse.parse_qs(text, keep_blank_values=True)
            if not tokens or not set(tokens) <= {"o", "r", "p"}:
                raise BadRequest("invalid cursor: use the `next`/`previous` links as given")
        try:
            cursor = super().decode_cursor(request)
        except Exception:  # DRF raises NotFound; a bad cursor is the client's mistake
            raise BadRequest("invalid cursor: use the `next`/`previous` links as given") from None
        if cursor is None or cursor.position is None:
            return cursor
        try:
            position = int(cursor.position)
        except (TypeError, ValueError):
            raise BadRequest("invalid cursor: bad position") from None
        if not -INT64_MAX <= position <= INT64_MAX:
            raise BadRequest("invalid cursor: position out of range")
        return Cursor(offset=cursor.offset, reverse=cursor.reverse, position=position)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        parameters.append(
            {
                "name": self.order_query_param,
                "required": False,
                "in": "query",
                "description": f"Order by {self.column}: desc (default) or asc.",
                "schema": {"type": "string", "enum": ["asc", "desc"]},
            }
        )
        return parameters


class CommitCursorPagination(OrderedCursorPagination):
    column = "version"


class FindingCursorPagination(OrderedCursorPagination):
    # Findings are walked by id (newest first by default): the primary key index serves every
    # filter combination, and new findings never shift a page already read.
    column = "id"
    page_size = 50


class FleetPaginator(Paginator):
    """Django's paginator, whose first page is read with one row more: a fleet that fits on
    it (most) is counted by that read, without a COUNT query over the annotated tables (a
    third of a cold tables list's SQL work). The rows are the same slice of the same order."""

    def page(self, number):
        if number != 1 or "count" in self.__dict__:
            return super().page(number)
        rows = list(self.object_list[: self.per_page + 1])
        if len(rows) <= self.per_page:
            self.__dict__["count"] = len(rows)  # the cached_property's value
        return self._get_page(rows[: self.per_page], 1, self)


class TablePagination(PageNumberPagination):
    django_paginator_class = FleetPaginator
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000

    def get_page_number(self, request, paginator):
        raw = request.query_params.get(self.page_query_param) or 1
        if raw in self.last_page_strings:  # ?page=last, as DRF's own get_page_number
            return paginator.num_pages
        try:
            number = int(raw)
        except (TypeError, ValueError):
            raise BadRequest(f"page must be a positive integer, got {str(raw)[:40]!r}") from None
        if number < 1:
            raise BadRequest("page must be a positive integer")
        return number
