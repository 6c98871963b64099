"""The history page's rows, rendered in Python: 50 rows of ten cells through Django's template
engine (an include per parameter list, filters per cell) cost ~15 ms of CPU a page, the whole
budget of a cold page at 20 clients on 2 cores; these strings cost a tenth of it.

Every value from a log (user names, operations, parameters, metrics, job ids, finding
summaries) goes through `escape`; the markup around it is constant.
"""

from __future__ import annotations

from html import escape as _escape
from typing import Any
from urllib.parse import quote

from django import template
from django.utils.safestring import SafeString, mark_safe

from audit.core import numbers
from audit.core.wording import names

register = template.Library()

_DASH = '<span class="muted">—</span>'


def escape(value: Any) -> str:
    """Django's `escape` (the same characters), without its lazy-string wrapper: ~400 values a
    page."""
    return _escape(str(value), quote=True)


@register.simple_tag
def history_rows(rows: list[dict[str, Any]], table_id: int) -> SafeString:
    """The <tr>s of the history table (frontend/history.html)."""
    base = f"/tables/{int(table_id)}/"
    return mark_safe("".join(_row(row, base) for row in rows))  # noqa: S308 (escaped)


def _row(c: dict[str, Any], base: str) -> str:
    version = int(c["version"])
    moment = numbers.ms_datetime(c["timestamp"])
    when = moment.strftime("%Y-%m-%d %H:%M:%S") if moment else "—"
    user = c["user"]
    user_cell = (
        f'<a href="?user={escape(quote(str(user), safe=""))}">{escape(user)}</a>' if user else _DASH
    )
    operation = c["operation"] or ""
    words = names.operation_name(operation)
    op = f"<strong>{escape(words)}</strong>"
    if operation and words.lower() != operation.lower():
        op += f' <span class="ident">{escape(operation)}</span>'
    if c.get("metadata_changed"):  # the schema page compares it with the version before
        compare = f"&amp;compare={version - 1}" if version else ""
        op += f'<div class="small"><a href="{base}schema/?version={version}{compare}">metadata changed: the schema</a></div>'
    run = "".join(
        f'<div><span class="muted">{escape(label)}</span> <span class="mono">{escape(value)}</span></div>'
        for label, value in c["run"]
    )
    engine = escape(c["engine_info"] or c["engine"] or "")
    read = _DASH if c["read_version"] is None else escape(c["read_version"])
    blind = {None: _DASH, True: "yes", False: "no"}.get(c["blind_append"], _DASH)
    metrics = _pairs(c["metrics"], "metrics") or _DASH
    return (
        f'<tr class="history-row" data-version="{version}">'
        f'<td class="num mono"><a href="{base}commits/{version}/">{version}</a></td>'
        f"<td><small>{when}</small></td>"
        f"<td>{user_cell}</td>"
        f"<td>{op}{_pairs(c['parameters'], 'parameters')}</td>"
        f'<td class="small">{run or _DASH}<div class="muted" title="engine">{engine}</div></td>'
        f'<td class="num mono">{read}</td>'
        f'<td class="small">{escape(c["isolation_level"] or "—")}</td>'
        f"<td>{blind}</td>"
        f"<td>{metrics}</td>"
        f"<td>{_findings(c['findings'])}</td>"
        "</tr>"
    )


def _pairs(pairs: dict[str, list[tuple[str, str]]], what: str) -> str:
    if not pairs["shown"]:
        return ""
    out = f'<dl class="pairs">{_dl(pairs["shown"])}</dl>'
    if pairs["more"]:
        out += (
            f'<details class="pairs-more"><summary>{len(pairs["more"])} more {what}</summary>'
            f'<dl class="pairs">{_dl(pairs["more"])}</dl></details>'
        )
    return out


def _dl(items: list[tuple[str, str]]) -> str:
    return "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in items)


def _findings(findings: list[dict[str, Any]]) -> str:
    if not findings:
        return '<span class="muted">none</span>'
    out = []
    for f in findings:
        status = (
            ""
            if f["status"] == "open"
            else f' <span class="muted small">{escape(f["status"])}</span>'
        )
        out.append(
            f'<div><a class="badge sev-{escape(f["severity"])}" href="/findings/{int(f["id"])}/" '
            f'title="{escape(f["summary"])}">{escape(names.kind_name(str(f["kind"])))}</a>{status}</div>'
        )
    return "".join(out)
