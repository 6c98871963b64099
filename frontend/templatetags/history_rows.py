"""The history page's rows, rendered in Python from the rows the read gives: 50 rows of ten
cells through Django's template engine (an include per parameter list, filters per cell) cost
~15 ms of CPU a page, the whole budget of a cold page at 20 clients on 2 cores; one f-string a
row and a memo of escaped values cost ~1 ms.

Every value from a log (user names, operations, parameters, metrics, job ids, finding
summaries) goes through `escape`; the markup around it is constant.
"""

from __future__ import annotations

import json
from html import escape as _escape
from typing import Any
from urllib.parse import quote

from django import template
from django.utils.safestring import SafeString, mark_safe

from audit.core import numbers
from audit.core.wording import names

register = template.Library()

_DASH = '<span class="muted">—</span>'
SHOWN_PAIRS = 4  # parameters or metrics shown inline; the rest behind "more"
MAX_VALUE_CHARS = 160
# Who-and-what-wrote-it fields of the provenance, as the Job column shows them.
_RUN_FIELDS = (
    ("job_id", "job"),
    ("job_name", "job name"),
    ("run_id", "run"),
    ("notebook_id", "notebook"),
    ("cluster_id", "cluster"),
)
# Escaped text of the values seen lately: a page repeats its users, operations, engines, metric
# names and small numbers (~400 values a page, most seen on the page before). A pure function
# of the text, shared by every reader; bounded (cleared when full).
_ESCAPED: dict[str, str] = {}
_MEMO_SIZE, _MEMO_TEXT = 8192, 200


def escape(value: Any) -> str:
    """Django's `escape` (the same characters), without its lazy-string wrapper."""
    text = value if type(value) is str else str(value)
    found = _ESCAPED.get(text)
    if found is None:
        found = _escape(text, quote=True)
        if len(text) <= _MEMO_TEXT:
            if len(_ESCAPED) >= _MEMO_SIZE:
                _ESCAPED.clear()
            _ESCAPED[text] = found
    return found


@register.simple_tag
def history_rows(rows: list[dict[str, Any]], table_id: int) -> SafeString:
    """The <tr>s of the history table (frontend/history.html); `rows`: audit.reads.history's."""
    base = f"/tables/{int(table_id)}/"
    return mark_safe("".join([_row(row, base) for row in rows]))  # noqa: S308 (escaped)


@register.simple_tag
def history_filters(filters: list[dict[str, str]], engines: list[str]) -> SafeString:
    """The filter form's fields (frontend/history.html): each value as the reader typed it,
    escaped."""
    out = []
    for f in filters:
        name, value = escape(f["name"]), f["value"]
        out.append(f'<div class="field"><label for="h-{name}">{escape(f["label"])}</label>')
        if f["type"] == "select":
            options = "".join(
                [
                    f'<option value="{escape(e)}"{" selected" if value == e else ""}>{escape(e)}</option>'
                    for e in engines
                ]
            )
            out.append(
                f'<select id="h-{name}" name="{name}"><option value="">any</option>{options}</select>'
            )
        else:
            out.append(
                f'<input type="{escape(f["type"])}" id="h-{name}" name="{name}" value="{escape(value)}" '
                f'placeholder="{escape(f["placeholder"])}" maxlength="200">'
            )
        out.append("</div>")
    return mark_safe("".join(out))  # noqa: S308 (escaped)


def _row(c: dict[str, Any], base: str) -> str:
    version = int(c["version"])
    moment = numbers.ms_datetime(c["timestamp"])
    when = moment.strftime("%Y-%m-%d %H:%M:%S") if moment else "—"
    user = c["user_name"] or c["user_id"]
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
        [
            f'<div><span class="muted">{label}</span> <span class="mono">{escape(value)}</span></div>'
            for label, value in _run(c)
        ]
    )
    engine = escape(c["engine_info"] or c["engine"] or "")
    read = _DASH if c["read_version"] is None else escape(c["read_version"])
    blind = {None: _DASH, True: "yes", False: "no"}.get(c["blind_append"], _DASH)
    metrics = _pairs(c["operation_metrics"], "metrics") or _DASH
    return (
        f'<tr class="history-row" data-version="{version}">'
        f'<td class="num mono"><a href="{base}commits/{version}/">{version}</a></td>'
        f"<td><small>{when}</small></td>"
        f"<td>{user_cell}</td>"
        f"<td>{op}{_pairs(c['operation_parameters'], 'parameters')}</td>"
        f'<td class="small">{run or _DASH}<div class="muted" title="engine">{engine}</div></td>'
        f'<td class="num mono">{read}</td>'
        f'<td class="small">{escape(c["isolation_level"] or "—")}</td>'
        f"<td>{blind}</td>"
        f"<td>{metrics}</td>"
        f"<td>{_findings(c['findings'])}</td>"
        "</tr>"
    )


def _run(c: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, value) of the provenance's run fields; the stored job id when the provenance
    spells the job otherwise."""
    provenance = c.get("provenance")
    if not isinstance(provenance, dict):
        provenance = {}
    run = [(label, str(provenance[k])) for k, label in _RUN_FIELDS if provenance.get(k)]
    if c["job_id"] and not (provenance.get("job_id") or provenance.get("job_name")):
        run.insert(0, ("job", c["job_id"]))  # stored from another spelling of the job
    return run


def _pairs(mapping: Any, what: str) -> str:
    """The first pairs of a JSON object as a <dl>, the rest behind "N more"; values as text cut
    to a readable length."""
    if not isinstance(mapping, dict) or not mapping:
        return ""
    pairs = sorted(mapping.items())
    out = f'<dl class="pairs">{_dl(pairs[:SHOWN_PAIRS])}</dl>'
    if len(pairs) > SHOWN_PAIRS:
        more = pairs[SHOWN_PAIRS:]
        out += (
            f'<details class="pairs-more"><summary>{len(more)} more {what}</summary>'
            f'<dl class="pairs">{_dl(more)}</dl></details>'
        )
    return out


def _dl(items: list[tuple[Any, Any]]) -> str:
    return "".join([f"<dt>{escape(k)}</dt><dd>{escape(_text(v))}</dd>" for k, v in items])


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


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
