"""The witness keeps as many sample rows as the shell asks (AUDIT_WITNESS_SAMPLE_ROWS): the
rows of a data file can be personal data, and 0 keeps only the count and the file names."""

from __future__ import annotations

import pytest

from audit.core.audit import audit_history
from audit.core.history.summary import load_history
from tests.support import scenarios


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("stale") / "t")
    facts = scenarios.build_stale_unconditional_delete(path)  # 3 rows survive the DELETE
    return load_history(path), facts


def _witness(history, **kwargs):
    result = audit_history(history, **kwargs)
    (never,) = [f for f in result.findings if f.kind == "never_existed_snapshot"]
    assert never.confirmed
    return never.witness


@pytest.mark.parametrize(("asked", "kept"), [(0, 0), (2, 2), (None, 3), (50, 3)])
def test_it_keeps_the_sample_rows_asked_for_and_always_the_count_and_files(history, asked, kept):
    loaded, facts = history
    witness = _witness(loaded, sample_rows=asked)
    assert witness["row_count"] == 3 and witness["files"]
    assert len(witness["sample_rows"]) == kept
    assert {r["id"] for r in witness["sample_rows"]} <= facts["surviving_ids"]
