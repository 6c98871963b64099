"""`young_gc`: the one-shot audit frees its own cyclic garbage without walking the history."""

from __future__ import annotations

import gc
import weakref

import pytest

from audit.core.history.summary import paused_gc, young_gc


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def _dropped_cycle() -> weakref.ref:
    """A two-object cycle nobody references any more: only the cyclic collector frees it."""
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def _churn() -> None:
    """Allocate enough containers that the collector's youngest generation runs, if enabled."""
    kept = [[] for _ in range(50_000)]
    del kept


@pytest.fixture
def collector_state():
    enabled = gc.isenabled()
    yield
    gc.unfreeze()  # young_gc freezes for good: give the other tests their collector back
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_cyclic_garbage_made_under_young_gc_is_freed_and_not_under_paused_gc(collector_state):
    with paused_gc():
        paused = _dropped_cycle()
        _churn()
        assert paused() is not None  # the pause the one-shot run keeps while loading
        with young_gc():
            young = _dropped_cycle()
            _churn()
            assert young() is None
        assert not gc.isenabled()  # the outer pause is back


def test_what_was_alive_before_is_frozen_and_not_walked_again(collector_state):
    with paused_gc():
        before = [_Node() for _ in range(3)]
        with young_gc():
            assert gc.get_freeze_count() >= len(before)
            tracked = {id(o) for o in gc.get_objects()}
            assert not any(id(o) in tracked for o in before)
            inside = _Node()
            assert id(inside) in {id(o) for o in gc.get_objects()}


def test_it_leaves_the_collector_as_it_found_it():
    # The suite calls the command in process: a freeze left behind kept every later object
    # out of the collector and turned paused_gc's own freeze off (the suite ran ~4x slower).
    thresholds, enabled = gc.get_threshold(), gc.isenabled()
    assert gc.get_freeze_count() == 0
    with young_gc():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == thresholds and gc.isenabled() == enabled
