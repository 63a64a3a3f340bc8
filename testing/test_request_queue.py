"""RequestQueue on its own, no HTTP: FIFO order, places in line as the line moves, cancel, the cap."""

import random
import threading
from dataclasses import dataclass

import pytest

from extensions_built_in.inference_engine.request_queue import QueueFull, RequestQueue


@dataclass(eq=False)
class Item:
    id: str


def filled(n, **kw):
    q = RequestQueue(**kw)
    items = [Item(str(i)) for i in range(n)]
    assert [q.push(item, 5) for item in items] == list(range(1, n + 1))
    return q, items


def places(q, items):
    return {item.id: q.position(item.id) for item in items}


def test_fifo_and_the_running_item():
    q, items = filled(3)
    assert q.running is None and len(q) == 3
    assert q.pop(0) is items[0] and q.running is items[0] and len(q) == 2
    assert q.position("0") is None  # running: no place in line
    q.finished(items[0])
    assert q.running is None
    assert [q.pop(0), q.pop(0)] == items[1:] and q.pop(0) is None


def test_finished_only_clears_the_item_that_runs():
    q, items = filled(2)
    q.pop(0)
    q.finished(items[1])
    assert q.running is items[0]


def test_places_follow_pops_and_cancels():
    q, items = filled(5)
    q.pop(0)  # 0 runs
    assert places(q, items) == {"0": None, "1": 1, "2": 2, "3": 3, "4": 4}
    assert q.remove("2") is items[2]
    assert places(q, items) == {"0": None, "1": 1, "2": None, "3": 2, "4": 3}
    assert q.remove("1") is items[1]  # the head leaves
    assert places(q, items) == {"0": None, "1": None, "2": None, "3": 1, "4": 2}
    q.push(Item("5"), 5)
    assert q.position("5") == 3
    assert [(i.id, p) for i, p in q.positions()] == [("3", 1), ("4", 2), ("5", 3)]
    assert q.pop(0) is items[3]
    assert q.position("4") == 1 and q.position("5") == 2


def test_remove_of_an_unknown_or_running_item_is_none():
    q, items = filled(2)
    q.pop(0)
    assert q.remove("0") is None and q.remove("nope") is None
    assert q.position("1") == 1


def test_the_cap_refuses_with_retry_after_and_frees_up_as_the_line_moves():
    q, items = filled(2, max_pending=2)
    with pytest.raises(QueueFull) as full:
        q.push(Item("x"), retry_after_s=7)
    assert full.value.retry_after_s == 7 and full.value.limit == 2 and "full" in str(full.value)
    assert q.position("x") is None and len(q) == 2
    q.pop(0)  # running does not count against the cap
    assert q.push(Item("y"), 5) == 2


def test_no_cap_when_zero():
    q, _ = filled(300, max_pending=0)
    assert len(q) == 300


def test_drain_takes_everything_including_the_running_item():
    q, items = filled(3)
    q.pop(0)
    assert q.drain() == [items[1], items[2], items[0]]
    assert len(q) == 0 and q.position("1") is None and q.pop(0) is None


def test_drain_with_nothing_running_is_just_the_line():
    q, items = filled(2)
    assert q.drain() == items
    assert q.drain() == []


def test_snapshot():
    q, items = filled(3)
    q.pop(0)
    assert q.snapshot() == (items[0], items[1:])


def test_pop_waits_for_a_push_or_a_wake():
    q = RequestQueue()
    got = []
    t = threading.Thread(target=lambda: got.append(q.pop(30)))
    t.start()
    q.push(Item("a"), 5)
    t.join(10)
    assert not t.is_alive() and got[0].id == "a"
    t = threading.Thread(target=lambda: got.append(q.pop(30)))
    t.start()
    q.wake()
    t.join(10)
    assert not t.is_alive() and got[1] is None


def test_places_match_a_plain_list_through_random_pushes_pops_and_cancels():
    """The ticket arithmetic against the obvious model (list.index) over many random moves."""
    rng = random.Random(0)
    q, model, n = RequestQueue(), [], 0
    for _ in range(3000):
        action = rng.random()
        if action < 0.45:
            item = Item(str(n))
            n += 1
            assert q.push(item, 5) == len(model) + 1
            model.append(item)
        elif action < 0.7 and model:
            assert q.pop(0) is model.pop(0)
        elif model:
            victim = rng.choice(model)
            assert q.remove(victim.id) is victim
            model.remove(victim)
        for i, item in enumerate(model):
            assert q.position(item.id) == i + 1
        assert len(q) == len(model)


def test_move_puts_a_waiting_item_at_its_new_place_and_places_follow():
    q, items = filled(5)
    q.pop(0)  # 0 runs
    q.remove("2")  # a cancel between the head and the tail: its ticket is remembered
    assert [i.id for i, _ in q.positions()] == ["1", "3", "4"]
    assert q.move("4", 1) == 1
    assert [(i.id, p) for i, p in q.positions()] == [("4", 1), ("1", 2), ("3", 3)]
    assert places(q, items[1:]) == {"1": 2, "2": None, "3": 3, "4": 1}
    assert q.move("4", 99) == 3  # past the end: last
    assert [i.id for i, _ in q.positions()] == ["1", "3", "4"]
    assert q.move("3", 1) == 1 and q.move("3", 1) == 1  # already there: nothing changes
    assert [i.id for i, _ in q.positions()] == ["3", "1", "4"]
    q.push(Item("5"), 5)
    assert q.position("5") == 4
    assert q.pop(0) is items[3] and places(q, items[1:] + [Item("5")]) == {"1": 1, "2": None, "3": None, "4": 2, "5": 3}


def test_move_refuses_what_is_not_waiting_and_a_place_below_one():
    q, items = filled(2)
    q.pop(0)
    assert q.move("0", 1) is None  # running
    assert q.move("nope", 1) is None
    with pytest.raises(ValueError):
        q.move("1", 0)
    assert q.position("1") == 1


def test_clear_takes_the_line_and_leaves_the_running_item():
    q, items = filled(4)
    q.pop(0)
    assert q.clear() == items[1:]
    assert q.running is items[0] and len(q) == 0 and q.positions() == [] and q.position("2") is None
    assert q.push(Item("x"), 5) == 1


def test_places_match_a_plain_list_through_random_pushes_pops_cancels_and_moves():
    rng = random.Random(1)
    q, model, n = RequestQueue(), [], 0
    for _ in range(3000):
        action = rng.random()
        if action < 0.4:
            item = Item(str(n))
            n += 1
            assert q.push(item, 5) == len(model) + 1
            model.append(item)
        elif action < 0.6 and model:
            assert q.pop(0) is model.pop(0)
        elif action < 0.8 and model:
            victim = rng.choice(model)
            assert q.remove(victim.id) is victim
            model.remove(victim)
        elif model:
            item, place = rng.choice(model), rng.randint(1, len(model) + 2)
            model.remove(item)
            model.insert(min(place, len(model) + 1) - 1, item)
            assert q.move(item.id, place) == min(place, len(model))
        for i, item in enumerate(model):
            assert q.position(item.id) == i + 1
        assert [i for i, _ in q.positions()] == model


def test_a_batch_takes_only_the_head_that_fits_it_and_several_run_at_once():
    q, items = filled(3)
    first = q.pop(0)
    assert first is items[0]
    assert q.pop(0, accept=lambda item: item.id == "2") is None, "the head (1) does not fit: nobody is passed"
    assert places(q, items[1:]) == {"1": 1, "2": 2}
    joined = q.pop(0, accept=lambda item: item.id == "1")
    assert joined is items[1] and q.running_items() == [items[0], items[1]]
    assert q.running is items[0], "the oldest running one is the one a single-run page follows"
    q.finished(items[0])
    assert q.running is items[1] and q.snapshot() == (items[1], [items[2]])
    assert q.drain() == [items[2], items[1]]


def test_full_is_the_cap_reached_and_never_without_a_cap():
    assert not filled(5)[0].full(), "no cap: never full"
    q, items = filled(2, max_pending=3)
    assert not q.full()
    q.push(Item("x"), 5)
    assert q.full()
    q.pop(0)
    assert not q.full(), "the running one does not count against the line's cap"


def test_a_move_to_a_place_before_the_first_says_places_are_1_based():
    q, items = filled(2)
    with pytest.raises(ValueError, match="^position is 1-based$"):
        q.move(items[1].id, 0)
