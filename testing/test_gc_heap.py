"""The frozen heap (toolkit/gc_heap.py): what it keeps out of collections, what still gets reclaimed, and the
engine freezing between requests once a load changed what is resident. Each test thaws the heap after it: the
test process is shared with every other test's objects."""

import gc
import time
import weakref

import pytest

from testing.engine_harness import EngineHarness, wait_for
from testing.test_pool import run, sd1
from toolkit import gc_heap
from toolkit.models.components.pool import free_memory


class Node:
    def __init__(self):
        self.me = self  # a cycle: only the collector reclaims it


@pytest.fixture(autouse=True)
def thawed_after():
    yield
    gc.unfreeze()


def _garbage_frozen_while_alive() -> weakref.ref:
    node = Node()
    alive = weakref.ref(node)
    gc_heap.freeze()
    del node
    return alive


def test_a_frozen_cycle_waits_for_the_pools_free_memory_which_thaws_first():
    alive = _garbage_frozen_while_alive()
    gc.collect()
    assert alive() is not None  # frozen: collections skip it
    free_memory()  # an eviction's collection
    assert alive() is None


def test_freezing_again_reclaims_what_was_frozen_while_alive():
    """A replaced model's objects were frozen while it served: the next freeze must not keep them forever."""
    alive = _garbage_frozen_while_alive()
    gc_heap.freeze()
    assert alive() is None and gc.get_freeze_count() > 0


def test_the_settler_freezes_once_per_resident_state_and_again_after_a_thaw():
    settler = gc_heap.HeapSettler()
    assert settler.settle(("holder", 1)) and gc.get_freeze_count() > 0 and settler.last_seconds >= 0
    assert not settler.settle(("holder", 1))
    gc_heap.thaw()
    assert gc.get_freeze_count() == 0
    assert settler.settle(("holder", 1))  # a thaw undid it
    assert settler.settle(("holder", 2))  # a load or a compile changed the heap
    gc.unfreeze()
    assert not gc_heap.HeapSettler(enabled=False).settle(("holder", 1)) and gc.get_freeze_count() == 0


def test_the_collector_clock_counts_each_collection_and_its_seconds():
    gc_heap.watch_collector()
    gc_heap.watch_collector()  # once, however often it is asked
    before, seconds = gc_heap.collector_state(), gc_heap.collector_seconds()
    gc.collect()
    after = gc_heap.collector_state()
    assert after["collections"][2] == before["collections"][2] + 1
    assert gc_heap.collector_seconds() > seconds


def test_the_engine_freezes_its_heap_when_idle_after_a_load_and_not_again_for_the_same_model(tmp_path, tiny_cache):
    harness = EngineHarness(tmp_path, freeze_heap=True)
    try:
        first = run(harness, sd1())
        assert first["timings"]["gc_s"] >= 0  # the collector's share of the request, sampling and saving
        health = wait_for(lambda: (h := harness.client.health())["gc"]["frozen"] > 0 and h, 10, "a frozen heap")
        assert health["gc"]["last_freeze_s"] > 0
        gc.unfreeze()  # as an eviction would: the same model's next idle moment freezes again
        run(harness, sd1(seed=8))
        wait_for(lambda: harness.client.health()["gc"]["frozen"] > 0, 10, "the heap frozen again")
        freezes = harness.engine.heap.freezes
        run(harness, sd1(seed=9))  # the same model, nothing loaded: no freeze
        time.sleep(1.0)  # two idle ticks
        assert harness.client.health()["gc"]["frozen"] > 0 and harness.engine.heap.freezes == freezes
    finally:
        harness.close()
