"""The audit's per-commit views held by column (audit/core/conflicts/audits.py)."""

from __future__ import annotations

from audit.core.audit import audit_history
from audit.core.conflicts.audits import CommitAudits
from audit.core.vocab import ReadVersionFact
from tests.core.test_audit_rules import _reorder_history


def test_it_keeps_objects_only_for_windowed_commits_and_rebuilds_the_others_equal():
    result = audit_history(_reorder_history())
    commits = result.commits
    assert isinstance(commits, CommitAudits)
    # Commits 3 and 5 read an older version; 0, 1, 2 and 4 read the one just before.
    assert sorted(commits._checked) == [3, 5]
    assert list(commits) == [0, 1, 2, 3, 4, 5] and len(commits) == 6
    view = commits[4]
    assert (view.version, view.read_version, view.read_version_fact) == (
        4,
        None,
        ReadVersionFact.UNKNOWN,
    )
    assert list(view.concurrent_versions) == [] and view.conflicts == {}
    assert view.as_dict()["read_scope"]["kind"] == "none"  # a blind append
    assert commits[4] is not view  # rebuilt on each read, not kept
    assert commits[0].as_dict()["read_scope"]["kind"] == "table"  # not re-checked: all of it
    assert commits[3] is commits[3] and list(commits[3].concurrent_versions) == [1, 2]
    by_key = {v: commits[v].as_dict() for v in commits}
    assert {v: a.as_dict() for v, a in commits.items()} == by_key
    assert [a.version for a in commits.values()] == list(commits)
    assert 6 not in commits and commits.get(6) is None
