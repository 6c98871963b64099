"""A table's head (frontend/_table_head.html: name, badges, storage, stats, tabs), rendered in
Python: the same markup as the template it replaced, whose ~30 conditions, filters and tab
links cost ~1 ms of CPU on every tab of a table (a fifth of a cold history page).

Every value from a log or a writer (name, URI, last error, partition columns, isolation
level) goes through `escape`; the markup around it is constant.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.template.defaultfilters import date, floatformat
from django.template.loader import get_template
from django.utils.safestring import SafeString, mark_safe
from django.utils.timezone import template_localtime

from frontend.templatetags.frontend_tags import thousands
from frontend.templatetags.history_rows import escape

register = template.Library()

# (tab, path under /tables/<id>/, label): the tab named `tab` in the context is the active one.
_TABS = (
    ("timeline", "", "Timeline"),
    ("history", "history/", "History"),
    ("schema", "schema/", "Schema"),
    ("analysis", "analysis/#isolation", "Isolation &amp; conflict matrix"),
    ("", "analysis/#hotspots", "Hotspots"),
    ("", "analysis/#partitioning", "Partitioning"),
    ("writers", "writers/", "Who changed it"),
)


@register.simple_tag(takes_context=True)
def table_head(context: Any) -> SafeString:
    """The head of the table `table` in the context of `table_header` (frontend/views/table.py)."""
    table = context["table"]
    tid = int(table.id)
    name = escape(table.name or table.uri)
    risk, level = table.risk, escape(context.get("risk_level", ""))
    title = f"risk score {escape(risk)} of 100" if risk is not None else "from the open findings"
    score = f" · {floatformat(risk, 0)}" if risk is not None else ""
    status = escape(table.status)
    out = [
        f'<div class="crumbs"><a href="/">Tables</a><span class="sep">/</span>{name}</div>\n'
        '<div class="page-head">\n  <div>\n'
        f'    <h1>{name} <span class="badge risk-{level}" title="{title}">{level} risk{score}</span> '
        f'<span class="badge status-{status}" id="table-status">'
        f"{escape(str(table.get_status_display()).lower())}</span></h1>\n"
        f'    <div class="sub mono">{escape(table.uri)}</div>\n'
        f'    <div class="sub" id="table-storage">Storage: <span class="mono">'
        f"{escape(context.get('storage', ''))}</span></div>\n  </div>\n"
        '  <div class="toolbar">\n'
        f'    <a class="btn" href="/explain/?table={tid}">Explain an exception</a>\n'
        f'    <a class="btn" href="/api/tables/{tid}/">JSON</a>\n  </div>\n</div>\n',
        _alerts(table, context.get("error_cause")),
        _stats(context, table),
        '<nav class="tabs">\n',
    ]
    tab = context.get("tab")
    for name_, path, label in _TABS:
        active = ' class="active"' if name_ and tab == name_ else ""
        out.append(f'  <a href="/tables/{tid}/{path}"{active}>{label}</a>\n')
    out.append(f'  <a href="/findings/?table={tid}&amp;status=all">All findings</a>\n</nav>\n')
    return mark_safe("".join(out))  # noqa: S308 (escaped)


def _alerts(table: Any, cause: Any) -> str:
    if table.status == "gone":
        return (
            '<div class="alert-box"><strong>Gone:</strong> the table\'s _delta_log is no longer '
            "under its root; its history is kept, it is not tailed.</div>\n"
        )
    if table.status == "error" and table.last_error:
        why = f" ({escape(cause)})" if cause else ""
        return (
            f'<div class="alert-box"><strong>Ingestion error{why}:</strong> '
            f"{escape(table.last_error)}</div>\n"
        )
    return ""


def _stat(label: str, value: str, ident: str = "", kind: str = "", cls: str = "") -> str:
    stat = f"stat {kind}" if kind else "stat"
    attrs = f' class="value{cls}"' + (f' id="{ident}"' if ident else "")
    return (
        f'  <div class="{stat}"><div class="label">{label}</div><div{attrs}>{value}</div></div>\n'
    )


def _stats(context: Any, table: Any) -> str:
    lag = context.get("lag")
    if lag is None:
        lag_text = "—"
    elif lag:
        lag_text = f"{thousands(lag)} <small>behind</small>"
    else:
        lag_text = "0 <small>in sync</small>"
    out = ['<div class="stats">\n']
    out.append(_stat("Version", thousands(table.last_seen_version), "stat-version", cls=" mono"))
    out.append(_stat("Tail lag", lag_text, "stat-lag"))
    if table.backfill_target_version is not None:
        backfill = get_template("frontend/_backfill.html").render({"table": table})
        out.append(_stat("Backfill", backfill, "stat-backfill"))
    when = template_localtime(table.last_commit_at) if table.last_commit_at else None
    last = (
        f'<small title="{date(when, "Y-m-d H:i:s")} UTC">{date(when, "Y-m-d H:i")}</small>'
        if when
        else "—"
    )
    out.append(_stat("Last commit", last))
    for severity, label, kind in (
        ("critical", "Critical", "critical"),
        ("warning", "Warnings", "warning"),
        ("info", "Info", ""),
    ):
        value = escape(getattr(table, f"n_{severity}", ""))
        out.append(_stat(label, value, f"stat-{severity}", kind))
    snapshot = context.get("snapshot") or {}
    columns = snapshot.get("partition_columns") if isinstance(snapshot, dict) else None
    parts = ", ".join([escape(c) for c in columns]) if columns else "unpartitioned"
    out.append(_stat("Partitioned by", f'<small class="mono">{parts}</small>'))
    properties = snapshot.get("properties") if isinstance(snapshot, dict) else None
    level = properties.get("delta.isolationLevel") if isinstance(properties, dict) else None
    out.append(_stat("Isolation", f'<small class="mono">{escape(level or "default")}</small>'))
    out.append("</div>\n")
    return "".join(out)
