"""Finding kinds and operations in words (audit/core/wording/names.py): every kind the audit
can raise has a name a person reads, distinct from its identifier and from every other's."""

from __future__ import annotations

from audit.core.vocab import HEALTH_METRICS, FindingKind, Operation
from audit.core.wording.names import KIND_NAMES, OPERATION_NAMES, kind_name, operation_name


def test_it_names_every_finding_kind_in_words():
    names = [kind_name(k) for k in FindingKind]
    assert set(KIND_NAMES) == set(FindingKind)
    assert len(set(names)) == len(names)  # two kinds never read alike
    for kind, name in zip(FindingKind, names, strict=True):
        assert "_" not in name and name != kind and name[0].isupper(), kind
    assert kind_name("never_existed_snapshot") == "Never-existed snapshot"


def test_it_names_health_kinds_by_their_metric_and_unknown_kinds_by_their_words():
    assert kind_name("health_checkpoint_lag") == "Health: commits since the last checkpoint"
    assert all("_" not in kind_name(f"health_{m}") for m in HEALTH_METRICS)
    assert kind_name("health_new_metric") == "Health: new metric"
    assert kind_name("some_future_kind") == "Some future kind"


def test_it_names_operations_and_leaves_a_log_s_own_as_written():
    assert set(Operation) <= set(OPERATION_NAMES)
    assert operation_name("OPTIMIZE") == "Optimize (compaction)"
    assert operation_name("<img src=x> custom op") == "<img src=x> custom op"
