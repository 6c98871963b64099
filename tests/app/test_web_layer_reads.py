"""No query outside audit/reads/ in the web layer: the API's views, the pages and the alert
pages ask a declared read (docs/architecture.md, "reads/ is the one query layer").

An AST scan of every module of the web layer (audit/api/, frontend/, audit/alerting/views.py,
audit/alerting/api.py) for what runs SQL: the ORM's managers (`.objects`, `_default_manager`),
a queryset's methods that build or run a query, a related manager's rows, a cursor or a
connection, raw SQL. Names of queryset methods that are also other things' methods (`.get` of
a dict, `.count` of a list) are left out, and `.values()` without names is a dict's: the
scan reads calls, not types, so it flags `x.filter(...)` on any receiver.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WEB_LAYER = [
    *sorted((ROOT / "audit" / "api").glob("*.py")),
    *sorted((ROOT / "frontend").rglob("*.py")),
    ROOT / "audit" / "alerting" / "views.py",
    ROOT / "audit" / "alerting" / "api.py",
]
# Attributes that are the ORM or a database connection wherever they appear.
ORM_ATTRIBUTES = {"objects", "_default_manager", "_base_manager"}
# Calls that run SQL wherever they appear.
SQL_CALLS = {"cursor", "raw", "extra", "execute", "executemany"}
# Queryset methods that build or run a query.
QUERY_METHODS = {
    "filter", "exclude", "values", "values_list", "annotate", "aggregate", "select_related",
    "prefetch_related", "order_by", "only", "defer", "exists", "bulk_create", "bulk_update",
    "update_or_create", "get_or_create", "in_bulk", "iterator", "distinct", "first", "last",
    "latest", "earliest", "delete",
}  # fmt: skip
# Names imported from django.db that only a query layer needs.
DB_NAMES = {"connection", "connections", "transaction", "Q", "F", "Count", "Sum", "Subquery",
            "OuterRef", "Exists", "RawSQL", "Case", "When"}  # fmt: skip


def violations(path: Path) -> list[str]:
    """`path:line what` for each query the module writes itself."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    shown = path.relative_to(ROOT)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("django.db"):
            for alias in node.names:
                if alias.name in DB_NAMES:
                    found.append(f"{shown}:{node.lineno} imports {alias.name} from django.db")
        if isinstance(node, ast.Attribute) and node.attr in ORM_ATTRIBUTES:
            found.append(f"{shown}:{node.lineno} .{node.attr}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            found += [f"{shown}:{node.lineno} {what}" for what in _query_call(node)]
    return found


def _query_call(node: ast.Call) -> list[str]:
    name = node.func.attr
    if name in SQL_CALLS:
        return [f".{name}(...)"]
    # `.values()` without names is a dict's (a queryset's needs them to mean anything here).
    if name in QUERY_METHODS and not (name == "values" and not node.args):
        return [f".{name}(...)"]
    # A related manager's rows: `obj.<relation>.all()`.
    if name == "all" and isinstance(node.func.value, ast.Attribute):
        return [f".{node.func.value.attr}.all()"]
    return []


def test_the_web_layer_asks_reads_and_writes_no_query():
    found = [line for path in WEB_LAYER for line in violations(path)]
    assert not found, "queries outside audit/reads/:\n" + "\n".join(found)


def test_the_scan_sees_each_kind_of_query(tmp_path):
    """The scan is not blind: each way of writing a query is caught."""
    module = tmp_path / "view.py"
    module.write_text(
        "from django.db import connection\n"
        "from django.db.models import Q\n"
        "def view(request):\n"
        "    Table.objects.all()\n"
        "    rows.filter(id=1)\n"
        "    rows.values('id')\n"
        "    finding.flips.all()\n"
        "    User._default_manager.get(pk=1)\n"
        "    with connection.cursor() as c:\n"
        "        c.execute('SELECT 1')\n"
        "    Table.objects.raw('SELECT 1')\n"
        "    rows.values()\n"
    )
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        found = violations(module)
    finally:
        ROOT = saved
    text = "\n".join(found)
    for what in ("connection", " Q ", ".objects", ".filter(", ".values(", ".flips.all()",
                 "._default_manager", ".cursor", ".raw"):  # fmt: skip
        assert what.strip() in text, (what, text)
