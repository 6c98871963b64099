"""Every route the URL resolver knows, and a route's URL with its parameters filled in: the
walks over every page and endpoint (tests/app/test_projects_walk.py, test_secret_paths.py)."""

from __future__ import annotations

import re

from django.urls import URLPattern, URLResolver, get_resolver


def routes() -> list[str]:
    """Every route of the URL resolver (the admin's aside) as its pattern text."""

    def walk(patterns, prefix: str):
        for p in patterns:
            if isinstance(p, URLResolver):
                yield from walk(p.url_patterns, prefix + str(p.pattern))
            else:
                assert isinstance(p, URLPattern)
                yield prefix + str(p.pattern)

    return [r for r in walk(get_resolver().url_patterns, "") if not r.startswith("admin/")]


_PARAM = re.compile(r"\(\?P<(\w+)>[^)]*\)|<(?:\w+:)?(\w+)>")


def url_of(route: str, values: dict) -> tuple[str, set[str]]:
    """The URL of `route` with its parameters filled in, and the parameters' keys."""
    used: set[str] = set()

    def fill(match: re.Match) -> str:
        name = match[1] or match[2]
        before = route[: match.start()]
        key = name
        if name == "pk":
            key = before.rstrip("/").rsplit("/", 1)[-1].lstrip("^") + "/pk"
        assert key in values, f"a route with a parameter the walk does not know: {route}"
        used.add(key)
        return str(values[key])

    text = _PARAM.sub(fill, route.replace("(/.*)?", ""))
    text = text.replace("^", "").replace("$", "").replace("\\.", ".").replace("/?", "/")
    return "/" + text, used
