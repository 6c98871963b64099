"""The live tail equals the one-shot audit on the hand-built deletion-vector tables too: the
re-check that decodes vectors runs per commit (windows included), dv_integrity only in full
audits (a whole-table kind)."""

from __future__ import annotations

import pytest

from tests.app.test_tail_differential import SEEDS, assert_tail_equals_cli, roots  # noqa: F401
from tests.support import dv_tables as t
from tests.support.tail_views import cli_json

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def _unsound_rebase(path):
    t.create(path)
    winner = t.stored_dv(path, [1])
    t.delete(path, 1, 0, 1, t.remove(), t.add(winner))
    t.delete(path, 2, 0, 2, t.remove(winner), t.add(t.stored_dv(path, [2])))
    t.delete(path, 3, 2, 5, t.remove(), t.add(t.stored_dv(path, [2, 5])))


def _same_row(path):
    t.create(path)
    t.delete(path, 1, 0, 1, t.remove(), t.add(t.stored_dv(path, [1])))
    t.delete(path, 2, 0, 1, t.remove(), t.add(t.stored_dv(path, [1, 3])), rows=2)


@pytest.mark.parametrize("build", [_unsound_rebase, _same_row])
def test_it_tails_deletion_vector_tables_as_the_cli_audits_them(build, roots, monkeypatch):  # noqa: F811
    src = roots / "src"
    build(src)
    kinds = {f["kind"] for f in cli_json(src)["findings"]}
    assert kinds & {"never_existed_snapshot", "missed_conflict"}
    for seed in SEEDS:
        assert_tail_equals_cli(src, roots / f"tail-{seed}", seed, monkeypatch)
