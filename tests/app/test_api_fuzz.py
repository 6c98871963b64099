"""Property-based fuzzing of the API from its own OpenAPI schema (schemathesis).

Every operation of our part of /api/ is called with generated requests (valid and invalid
parameters, bodies, cursors), as an administrator with a token, against real ingested tables;
half of the generated requests aim at the real table / commit / finding ids so the handlers'
deep paths run, not only the 404s. The only property: never a 5xx (`not_a_server_error`).
Bounded: a few examples per operation and a global time budget.

A second run is made as a member of another project (the tables are in the default project):
every request aimed at the real ids answers 404 (the table, its commits and its findings do
not exist for that user), and still never a 5xx.
"""

from __future__ import annotations

import time

import pytest
import schemathesis
from django.core.cache import cache
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error

from audit.models import Finding
from audit.reads import analysis
from tests.support import scenarios
from tests.support.ingested import ingest_table
from tests.support.projects import join

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

OUR_PATHS = r"^/api/(tables|findings|conflict-matrix|explain)"
EXAMPLES_PER_OPERATION = 40
BUDGET_SECONDS = 80.0  # 20 operations (health, history, changes, diff)


@pytest.fixture
def real_ids(tmp_path, settings) -> dict[str, int]:
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_API_EXPENSIVE_RATE = ""  # 429s would keep the fuzz from the handlers
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cache.clear()
    analysis._HISTORIES.clear()
    scenarios.build_ws_reorder_matching(str(tmp_path / "reorder"))
    table = ingest_table(str(tmp_path / "reorder"))
    finding = Finding.objects.filter(table=table).first()
    return {"table": table.id, "finding": finding.id, "version": 3}


@pytest.fixture
def wsgi_app():
    """Django's WSGI app, keeping the test's database connection (and transaction) open
    across requests, as django.test.Client does."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield get_wsgi_application()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def test_it_never_answers_with_a_server_error(real_ids, owner, wsgi_app, monkeypatch):
    _run(owner, real_ids, wsgi_app, monkeypatch, EXAMPLES_PER_OPERATION, BUDGET_SECONDS)


def test_another_projects_member_gets_404s_on_the_real_ids(
    real_ids, django_user_model, wsgi_app, monkeypatch
):
    erin = django_user_model.objects.create_user("erin", password="password")
    join(erin, "finance", "owner")
    aimed = _run(erin, real_ids, wsgi_app, monkeypatch, 10, 40.0, other_project=True)
    assert aimed > 20  # requests that named the real table or finding: every one a 404


def _run(user, real_ids, wsgi_app, monkeypatch, examples, budget, other_project=False) -> int:
    from workers.tasks import tail_table

    monkeypatch.setattr(tail_table, "apply_async", lambda *a, **k: None)  # no broker needed
    auth = {"Authorization": f"Token {Token.objects.create(user=user).key}"}
    schema = schemathesis.openapi.from_wsgi(
        "/api/schema/?format=json", wsgi_app, headers=auth
    ).include(path_regex=OUR_PATHS)
    operations = [result.ok() for result in schema.get_all_operations()]
    # A generated id may well be the real table's: remove it only once everything else ran.
    operations.sort(key=lambda op: op.method.upper() == "DELETE")
    assert len(operations) >= 14
    deadline = time.monotonic() + budget
    calls: dict[str, int] = {}
    server_errors: list[str] = []
    seen: list[str] = []  # other_project: what an aimed request answered, when not a 404

    runs = []
    for operation in operations:
        fuzz = _Fuzz(
            auth, real_ids, deadline, calls, server_errors, seen if other_project else None
        )
        fuzz.run(operation, examples)
        runs.append(fuzz)

    assert not server_errors, server_errors
    assert not seen, seen
    assert len(calls) == len(operations), set(o.path for o in operations) - {
        k.split(" ", 1)[1] for k in calls
    }
    return sum(fuzz.aimed for fuzz in runs)


class _Fuzz:
    def __init__(self, auth, real_ids, deadline, calls, server_errors, not_found) -> None:
        self.auth, self.real_ids, self.deadline = auth, real_ids, deadline
        self.calls, self.server_errors, self.not_found = calls, server_errors, not_found
        self.aimed = 0  # requests aimed at the real rows

    def run(self, operation, examples: int) -> None:
        _fuzz(operation, self, examples)


def _fuzz(operation, run: _Fuzz, examples: int) -> None:
    label = f"{operation.method.upper()} {operation.path}"
    auth, real_ids, deadline = run.auth, run.real_ids, run.deadline
    calls, server_errors = run.calls, run.server_errors

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(), aim=st.booleans())
    def check(case, aim):
        if time.monotonic() > deadline and label in calls:
            return  # over budget: every operation still gets its first call
        aimed = bool(aim and case.path_parameters)
        if aimed and (case.method.upper() != "DELETE" or run.not_found is not None):
            _aim_at_real_rows(case, real_ids)
        response = case.call(headers=auth)
        calls[label] = calls.get(label, 0) + 1
        if aimed and run.not_found is not None:
            run.aimed += 1
            if response.status_code != 404:
                run.not_found.append(f"{label} {case.path_parameters} -> {response.status_code}")
        if response.status_code >= 500:
            server_errors.append(
                f"{label} {case.path_parameters} {case.query} {case.body!r:.200} -> "
                f"{response.status_code} {response.text[:300]}"
            )
            return
        case.validate_response(response, checks=[not_a_server_error])

    check()


def _aim_at_real_rows(case, real_ids: dict[str, int]) -> None:
    params = case.path_parameters
    if "id" in params:
        params["id"] = real_ids["finding"] if "/findings/" in case.path else real_ids["table"]
    if "version" in params:
        params["version"] = real_ids["version"]
