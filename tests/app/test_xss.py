"""Hostile log strings are stored as written and escaped on every dashboard page and in the
API (the table: tests/support/hostile_table.py; the browser run: tests/e2e/test_xss_browser.py)."""

from __future__ import annotations

import re

import orjson
import pytest

from audit.models import Commit, Finding
from tests.support import hostile_table as hostile_tables
from tests.support.hostile_table import HOSTILE_OP, IMG_NAME, JS_URL, SCRIPT_USER, TABLE_NAME, TAG
from tests.support.paths import EXCEPTIONS

# The fixture (pytest finds fixtures by attribute).
hostile_table = hostile_tables.hostile_table

pytestmark = pytest.mark.django_db

PAYLOAD_MARKERS = ("<script>window.__xss", "<img src=x onerror", "<svg onload")


def assert_inert(html: str) -> None:
    for marker in PAYLOAD_MARKERS:
        assert marker not in html, marker
    assert not re.search(r"""(href|src|action)\s*=\s*["']?\s*javascript:""", html, re.I)


def test_it_stores_the_hostile_strings_as_they_were_written(hostile_table):
    c3 = Commit.objects.get(table=hostile_table, version=3)
    assert c3.user_name == SCRIPT_USER
    assert IMG_NAME.replace("'", "''") in c3.predicate_raw
    assert Commit.objects.get(table=hostile_table, version=4).operation == HOSTILE_OP
    finding = Finding.objects.get(table=hostile_table, kind="never_existed_snapshot")
    assert any(row.get("name") == IMG_NAME for row in finding.witness["sample_rows"])


def test_it_escapes_log_strings_on_every_page(client, member, hostile_table):
    client.force_login(member)
    finding = Finding.objects.get(table=hostile_table, kind="never_existed_snapshot")
    t = hostile_table.id
    pages = {
        "/": [TABLE_NAME],
        f"/tables/{t}/": [TABLE_NAME],
        f"/tables/{t}/analysis/": [TABLE_NAME],
        f"/tables/{t}/commits/3/": [SCRIPT_USER, IMG_NAME.replace("'", "''"), TAG, JS_URL],
        f"/tables/{t}/commits/4/": [HOSTILE_OP, SCRIPT_USER, JS_URL],
        f"/tables/{t}/commits/2/": [SCRIPT_USER],
        "/findings/": [TABLE_NAME],
        f"/findings/{finding.id}/": [IMG_NAME, JS_URL, TAG],
    }
    for url, shown in pages.items():
        r = client.get(url)
        assert r.status_code == 200, url
        html = r.content.decode()
        assert_inert(html)
        for text in shown:
            # Shown, as text: escaped by the template (JSON dumps escape quotes first).
            escaped = [
                _escape(text),
                _escape(orjson.dumps(text).decode()[1:-1]),
                _escape(text.replace("'", "''")),
            ]
            assert any(e in html for e in escaped), (url, text)


def test_it_escapes_a_hostile_exception_text_on_the_explainer(client, member, hostile_table):
    client.force_login(member)
    text = (EXCEPTIONS / "hostile_script.txt").read_text()
    r = client.post("/explain/", {"text": text, "table": hostile_table.id})
    html = r.content.decode()
    assert_inert(html)
    assert "&lt;img src=x onerror=alert(1)&gt;" in html or "&lt;script&gt;" in html


def test_it_keeps_the_timeline_json_as_data(client, member, hostile_table):
    client.force_login(member)
    r = client.get(f"/api/tables/{hostile_table.id}/timeline/")
    assert r["Content-Type"].startswith("application/json")
    assert HOSTILE_OP in r.json()["operations"]


def _escape(text: str) -> str:
    from django.utils.html import escape

    return escape(text)
