"""The OpenAPI description of a declared list's filters (audit/reads/declared/lists.py), for
drf-spectacular: one parameter per `Param`, its type and its help text."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter

from audit.reads.declared.lists import ListRead


def list_parameters(read: ListRead) -> list[OpenApiParameter]:
    """The query parameters of `read`'s filters (pagination adds its own)."""
    out = []
    for param in read.params:
        schema, description = param.schema()
        out.append(
            OpenApiParameter(param.name, schema, OpenApiParameter.QUERY, description=description)
        )
    return out
