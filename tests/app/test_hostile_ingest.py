"""Hostile values never crash the shell: the ingest stores a hostile log or marks the table in
error with one line; the API and the pages answer or give a 400, never a 500.

The property tests draw one edit of a real table's commit file (tests/support/hostile_logs.py):
any value or line, or a deletion vector descriptor of a table that has them. The copy is tailed
into the test database (SQLite, or PostgreSQL with DATABASE_URL) and every page and endpoint of
the stored table is asked for (tests/support/table_pages.py). Derandomized, so CI runs the same
examples.
"""

from __future__ import annotations

import itertools
import json
import tempfile
from pathlib import Path

import pytest
from django.core.cache import cache
from django.test import Client
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from audit.core.errors import DeltaAuditError
from audit.ingest.tables import register_table
from audit.models import Table
from audit.reads import analysis
from audit.tail.orphan_scans import scan_table
from audit.tail.step import tail_once
from tests.support.clients import session_client
from tests.support.hostile_logs import (
    DV_WRONG_TYPES,
    HOSTILE_LINES,
    Edit,
    dv_edits,
    dv_tables,
    edits,
    hostile_copy,
    small_tables,
)
from tests.support.ingested import ingest_table
from tests.support.logutil import commit_file, copy_table
from tests.support.logutil import table as delta_table
from tests.support.table_pages import answers

pytestmark = pytest.mark.django_db

TABLES = small_tables()
DV_TABLES = dv_tables()
_names = itertools.count()

PROPERTY = settings(
    # No shrinking: a failing example is printed as drawn; shrinking one took minutes.
    phases=[Phase.explicit, Phase.generate],
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture
def hostile_root(settings):
    with tempfile.TemporaryDirectory() as root:
        settings.AUDIT_ALLOWED_ROOTS = [root]
        yield Path(root)


def _stores_and_answers(root: Path, user, table: Path, edit: Edit) -> None:
    """Tail the edited copy until it has caught up (or is in error with one line), then every
    page and endpoint of the stored table answers as it should."""
    copy = hostile_copy(table, root / f"t{next(_names)}", edit)
    try:
        registered, _ = register_table(str(copy))
    except DeltaAuditError:
        return  # refused with one line: not a readable table
    result = tail_once(registered.id)
    while result.more:
        result = tail_once(registered.id)
    registered.refresh_from_db()
    if result.status == "error":
        assert registered.status == Table.Status.ERROR
        assert result.message and "\n" not in result.message
    else:
        # Nothing it could not use stopped it: every commit of the log is stored, and the
        # periodic data scan reads it too (its findings are pages too).
        assert registered.status == Table.Status.OK
        assert registered.last_seen_version == registered.latest_version_in_log
        assert not scan_table(registered).error.startswith("internal error")
    cache.clear()  # the pages of an earlier example's table of the same id
    assert answers(session_client(user), registered) == {}


# The review's cases, run every time: an add of the largest size with numRecords 1e400 beside
# the table's files (their sum is past 64 bits); a commit of the year 3170843 that read v-7; a
# commit recorded in the year 3170843 whose file time says 2023 (the data scan words the times
# that resolve to another version).
BASIC = delta_table("golden/basic-with-inserts-updates")
REVIEWED = [Edit(1, 0, 0, new_line=line) for line in HOSTILE_LINES[-2:]]
REVIEWED.append(Edit(1, 0, 0, value=10**17, key="timestamp"))
# Found by an undirected run: a schema whose "fields" is a number (the analysis page's advice).
NUMBER_FIELDS = Edit(0, 1, 0, new_line=next(x for x in HOSTILE_LINES if '\\"fields\\": 5' in x))


@pytest.mark.slow
@settings(PROPERTY, max_examples=40)
@given(table=st.sampled_from(TABLES), edit=edits())
@example(table=BASIC, edit=REVIEWED[0])
@example(table=BASIC, edit=REVIEWED[1])
@example(table=BASIC, edit=REVIEWED[2])
@example(table=BASIC, edit=NUMBER_FIELDS)
def test_it_stores_a_hostile_log_or_marks_it_in_error_and_answers_every_page(
    hostile_root: Path, member, table: Path, edit: Edit
):
    _stores_and_answers(hostile_root, member, table, edit)


# A descriptor whose fields are lists and numbers where text belongs (the loader's cache keyed
# on them: "unhashable type: 'list'").
DV_SMALL = delta_table("spark/table-with-dv-small")
WRONG_TYPES = Edit(0, 0, 0, value=DV_WRONG_TYPES, dv=True)


@pytest.mark.slow
@settings(PROPERTY, max_examples=25)
@given(table=st.sampled_from(DV_TABLES), edit=dv_edits())
@example(table=DV_SMALL, edit=WRONG_TYPES)
@example(table=DV_SMALL, edit=Edit(0, 0, 0, value=[], key="pathOrInlineDv", dv=True))
# An offset past 64 bits (pyarrow's seek raised OverflowError before the vectors' bounds).
@example(
    table=delta_table("golden/dv-partitioned-with-checkpoint"),
    edit=Edit(0, 0, 0, value=2**64 - 1, key="offset", dv=True),
)
def test_it_stores_hostile_deletion_vector_descriptors_and_answers_every_page(
    hostile_root: Path, member, table: Path, edit: Edit
):
    _stores_and_answers(hostile_root, member, table, edit)


def _edit_commit_info(path: Path, version: int, key: str, value: object) -> None:
    file = commit_file(path, version)
    lines = file.read_text().splitlines()
    action = json.loads(lines[0])
    action["commitInfo"]["operationMetrics"][key] = value
    lines[0] = json.dumps(action)
    file.write_text("\n".join(lines) + "\n")


@pytest.fixture
def unicode_retries(hostile_root: Path) -> Table:
    """basic-with-inserts-updates whose UPDATE (v1) records num_retries "²"."""
    path = copy_table("golden/basic-with-inserts-updates", hostile_root)
    _edit_commit_info(path, 1, "num_retries", "²")
    cache.clear()
    analysis._HISTORIES.clear()
    yield ingest_table(path, name="retries")
    cache.clear()
    analysis._HISTORIES.clear()


def test_it_answers_the_writers_of_a_unicode_digit_retry_count(unicode_retries, member):
    response = session_client(member).get(f"/api/tables/{unicode_retries.id}/writers/")
    assert response.status_code == 200
    assert [w["recorded_retries"] for w in response.json()["writers"]["writers"]] == [0]


@pytest.mark.parametrize("query", [{"from": "0", "to": "①"}, {"from": "²", "to": "1"}])
def test_it_answers_400_to_unicode_digit_versions_on_the_diff_page(unicode_retries, member, query):
    client = Client()
    client.force_login(member)
    response = client.get(f"/tables/{unicode_retries.id}/diff/", query)
    assert response.status_code == 400
    assert "Give two versions" in response.content.decode()


@pytest.mark.parametrize(
    ("path", "query"),
    [("diff", {"from": "0", "to": "①"}), ("diff", {"from": "²", "to": "1"})]
    + [("health", {"version": v}) for v in ("²", "①", "١", str(10**27), "-1")],
)
def test_it_answers_400_to_unicode_digit_versions_in_the_api(unicode_retries, member, path, query):
    response = session_client(member).get(f"/api/tables/{unicode_retries.id}/{path}/", query)
    assert response.status_code == 400
    assert "\n" not in response.json()["error"]


@pytest.mark.parametrize(
    ("path", "query"),
    [
        ("timeline", {"from_version": "١"}),
        ("timeline", {"to_version": "²"}),
        ("commits", {"min_version": "١"}),
        ("commits", {"max_version": "①"}),
    ],
)
def test_it_answers_400_to_non_ascii_digits_in_lists_and_the_timeline(
    unicode_retries, member, path, query
):
    response = session_client(member).get(f"/api/tables/{unicode_retries.id}/{path}/", query)
    assert response.status_code == 400


def _append_commit(path: Path, version: int, *actions: dict) -> None:
    # The stdlib json writes them: orjson refuses integers past 64 bits, which is the point.
    text = "\n".join(json.dumps(a) for a in actions) + "\n"
    commit_file(path, version).write_text(text)


def test_it_stores_hostile_changes_as_json_both_databases_take(hostile_root: Path, member):
    """NULs in property names and values and in protocol features: the change rows store
    (PostgreSQL's text and jsonb refuse NUL) and read back exactly as the sanitised JSON."""
    from audit.health.models import TableChange

    path = copy_table("golden/basic-with-inserts-updates", hostile_root)
    meta = json.loads(commit_file(path, 0).read_text().splitlines()[1])["metaData"]
    meta["configuration"] = {"delta.appendOnly": "false", "note\x00": "a\x00b", "n": 10**27}
    info = {"timestamp": 2**70, "operation": "SET TBLPROPERTIES", "readVersion": 1}
    _append_commit(path, 2, {"commitInfo": info}, {"metaData": meta})
    protocol = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["r\x00"]}
    protocol["writerFeatures"] = ["w\x00", "appendOnly"]
    _append_commit(path, 3, {"commitInfo": {**info, "timestamp": 1}}, {"protocol": protocol})
    registered, _ = register_table(str(path))
    result = tail_once(registered.id)
    assert result.status != "error", result.message
    changes = list(TableChange.objects.filter(table=registered).order_by("version", "kind"))
    assert [(c.version, c.kind) for c in changes] == [(2, "properties"), (3, "protocol")]
    properties, protocol_change = changes
    assert "\x00" not in json.dumps(properties.after) + properties.summary
    assert "\x00" not in json.dumps(protocol_change.after) + protocol_change.summary
    response = session_client(member).get(f"/api/tables/{registered.id}/changes/")
    assert response.status_code == 200
    body = response.json()
    stored = {c["kind"]: c for c in (body["changes"] if isinstance(body, dict) else body)}
    assert stored["properties"]["after"] == properties.after
    assert stored["protocol"]["after"] == protocol_change.after
