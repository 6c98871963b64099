"""A JSON renderer on orjson: the API's hot lists spend a good part of their time encoding."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import orjson
from rest_framework.renderers import JSONRenderer

_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def _default(value: Any) -> Any:
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)  # lazy translations, paths, anything else DRF would str()


class ORJSONRenderer(JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        if data is None:
            return b""
        return orjson.dumps(data, default=_default, option=_OPTIONS)
