"""The store boundary of numbers: every integer a row gets, inside its column's range.

Numbers read from a log are bounded to 64 bits when read (audit.core.numbers.log_int), but
what the core derives from them is not: two adds of size 2**62 total 2**63, a staged commit
far ahead makes a lag past any column. A value past its column stops the row (SQLite:
OverflowError; PostgreSQL: "out of range"), and with it the chunk and every later commit of
the table. `fit_columns` is the one clamp every writer of rows whose integers are derived
from log numbers calls (Commit, Finding, HealthPoint, TableHealth, the Table's progress). Rows
that store only numbers as read (`numbers.log_int`: a TableChange's version and time) need none.

The ranges are Django's for each field type (PostgreSQL's: 32 bits for an IntegerField) on
both databases, though SQLite would take 64 bits anywhere: the same row on both, so both
answer the same.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.db import models
from django.db.backends.base.operations import BaseDatabaseOperations

from audit.core.numbers import clamp


@cache
def _ranges(model: type[models.Model]) -> tuple[tuple[str, int, int], ...]:
    """(name, low, high) of each integer field of `model` (not keys: they are ours)."""
    known = BaseDatabaseOperations.integer_field_ranges
    return tuple(
        (field.attname, *known[field.get_internal_type()])
        for field in model._meta.concrete_fields
        if field.get_internal_type() in known and not field.primary_key
    )


def fit_columns(model: type[models.Model], values: dict[str, Any]) -> dict[str, Any]:
    """`values` (attribute name -> value) with each int of an integer column clamped into the
    column's range, in place (and returned); anything else (None, an expression) as it is.
    Once per stored commit: a loop over the model's few integer fields."""
    for name, low, high in _ranges(model):
        value = values.get(name)
        if type(value) is int and not low <= value <= high:
            values[name] = clamp(value, low, high)
    return values
