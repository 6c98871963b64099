"""A JSON renderer on orjson: the API's hot lists spend a good part of their time encoding.

Values orjson does not know (sets, decimals, bytes, lazy translations...) go through the one
JSON fallback, `audit.core.jsonsafe.json_default`.
"""

from __future__ import annotations

import orjson
from rest_framework.renderers import JSONRenderer

from audit.core.jsonsafe import json_default, json_text

_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


class ORJSONRenderer(JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        if data is None:
            return b""
        try:
            return orjson.dumps(data, default=json_default, option=_OPTIONS)
        except TypeError:  # a sum of log numbers past 64 bits: the one sanitiser spells it
            return json_text(data).encode()
