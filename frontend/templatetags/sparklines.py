"""Inline SVG sparklines: a writer's commits per week as bars (no script, no external file:
the page's CSP allows neither inline script nor inline style, and neither is used here)."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

register = template.Library()

WIDTH, HEIGHT, GAP = 96, 22, 1


@register.simple_tag
def sparkline(points: list[dict[str, Any]], label: str = "commits per week") -> SafeString:
    """Bars of `points` ({"week", "commits"}, oldest first), scaled to the busiest; the
    counts are the image's accessible name and each bar's title."""
    counts = [int(p.get("commits") or 0) for p in points]
    if not counts:
        return format_html('<span class="muted">—</span>')
    top = max(counts) or 1
    bar = (WIDTH - GAP * (len(counts) - 1)) / len(counts)
    rects = format_html_join(
        "",
        '<rect class="{}" x="{}" y="{}" width="{}" height="{}"><title>{}: {}</title></rect>',
        (
            (
                "spark-bar" if n else "spark-zero",
                f"{i * (bar + GAP):.1f}",
                f"{HEIGHT - max(n / top * HEIGHT, 1.0):.1f}",
                f"{bar:.1f}",
                f"{max(n / top * HEIGHT, 1.0):.1f}",
                point.get("week", ""),
                n,
            )
            for i, (point, n) in enumerate(zip(points, counts, strict=True))
        ),
    )
    summary = f"{label}, oldest first: " + ", ".join(str(n) for n in counts)
    return format_html(
        '<svg class="sparkline" role="img" aria-label="{}" viewBox="0 0 {} {}" width="{}" '
        'height="{}">{}</svg>',
        summary,
        WIDTH,
        HEIGHT,
        WIDTH,
        HEIGHT,
        rects,
    )
