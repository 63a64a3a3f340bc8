"""RequestQueue: the engine's line of pending requests, the running ones, places in line, cancel, move, and a cap.

The server thread pushes, cancels and asks for positions (every heartbeat of every waiting stream asks), the
main thread pops. A position is computed from tickets, not by scanning the line: each push takes the next
ticket, the line only ever leaves from its head (or by a cancel, which is remembered), so a request's place is
its ticket minus the head's, minus the cancels between them. With 1 500 waiting streams a linear scan per
heartbeat made ``GET /queue`` take 3 s. A move (a person reordering the line) is rare: it renumbers the line's
tickets in their new order from the head's, forgets the cancels, and hands out the next ticket right after the
last one.

Neither torch nor HTTP here. Items need an ``id``.
"""

from __future__ import annotations

import bisect
import threading
from collections import deque
from typing import Callable, Generic, Optional, Protocol, TypeVar


class HasId(Protocol):
    id: str


T = TypeVar("T", bound=HasId)


class QueueFull(Exception):
    """The line is at its cap; ``retry_after_s`` is a fair guess at when a place frees up."""

    def __init__(self, limit: int, retry_after_s: int):
        super().__init__(f"the engine's queue is full ({limit} requests waiting); try again later")
        self.limit, self.retry_after_s = limit, retry_after_s


class RequestQueue(Generic[T]):
    def __init__(self, max_pending: int = 0):
        self.max_pending = max_pending  # 0: no cap
        self._running: list = []  # oldest first: more than one while requests share steps (batching.py)
        self._line: deque = deque()  # (ticket, item), oldest first
        self._tickets: dict[str, int] = {}  # id -> ticket, for the items in line
        self._cancelled: list[int] = []  # sorted tickets that left from the middle, all behind the head
        self._next_ticket = 0
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)

    # ------------------------------------------------------------------ server side
    def full(self) -> bool:
        """At the cap now (a hint for refusing early: ``push`` decides under the lock)."""
        return bool(self.max_pending) and len(self._line) >= self.max_pending

    def push(self, item: T, retry_after_s: int) -> int:
        """Put ``item`` at the end of the line; its 1-based place. ``QueueFull`` at the cap."""
        with self._lock:
            if self.max_pending and len(self._line) >= self.max_pending:
                raise QueueFull(self.max_pending, retry_after_s)
            ticket, self._next_ticket = self._next_ticket, self._next_ticket + 1
            self._line.append((ticket, item))
            self._tickets[item.id] = ticket
            self._changed.notify_all()
            return self._position(ticket)

    def remove(self, item_id: str) -> Optional[T]:
        """Take a waiting item out of the line (a cancel); None when it is not waiting."""
        with self._lock:
            ticket = self._tickets.pop(item_id, None)
            if ticket is None:
                return None
            removed = None
            for i, (t, item) in enumerate(self._line):  # a cancel is rare; heartbeats never come here
                if t == ticket:
                    removed = item
                    del self._line[i]
                    break
            if self._line and ticket > self._line[0][0]:
                bisect.insort(self._cancelled, ticket)
            self._prune()
            return removed

    def move(self, item_id: str, position: int) -> Optional[int]:
        """Put a waiting item at ``position`` (1-based; past the end: last); its new place, or None when it is
        not waiting (running, finished, cancelled or unknown)."""
        if position < 1:
            raise ValueError("position is 1-based")
        with self._lock:
            ticket = self._tickets.get(item_id)
            if ticket is None:
                return None
            items = [item for _, item in self._line]
            index = next(i for i, (t, _) in enumerate(self._line) if t == ticket)
            item = items.pop(index)
            place = min(position, len(items) + 1)
            items.insert(place - 1, item)
            head = self._line[0][0]
            self._line = deque((head + i, it) for i, it in enumerate(items))
            self._tickets = {it.id: head + i for i, it in enumerate(items)}
            self._cancelled.clear()  # the new tickets are consecutive: no cancel lies between any two
            self._next_ticket = head + len(items)  # and the next push follows the last without a gap
            self._changed.notify_all()
            return place

    def clear(self) -> list[T]:
        """Take every waiting item out of the line at once (cancel all); the running one stays."""
        with self._lock:
            items = [item for _, item in self._line]
            self._line.clear()
            self._tickets.clear()
            self._cancelled.clear()
            return items

    def position(self, item_id: str) -> Optional[int]:
        """1-based place in line; None once it runs or left."""
        with self._lock:
            ticket = self._tickets.get(item_id)
            return None if ticket is None else self._position(ticket)

    def positions(self) -> list[tuple[T, int]]:
        """Every waiting item with its place, in order (what is announced when the line moves)."""
        with self._lock:
            return [(item, i + 1) for i, (_, item) in enumerate(self._line)]

    @property
    def running(self) -> Optional[T]:
        """The oldest running item (the one a page that shows one running follows)."""
        running = self._running
        return running[0] if running else None

    def running_items(self) -> list[T]:
        with self._lock:
            return list(self._running)

    def snapshot(self) -> tuple[Optional[T], list[T]]:
        with self._lock:
            return self.running, [item for _, item in self._line]

    def __len__(self) -> int:
        return len(self._line)

    def wake(self) -> None:
        """Wake a ``pop`` that waits (the engine has other work for its main thread)."""
        with self._lock:
            self._changed.notify_all()

    # ------------------------------------------------------------------ main-thread side
    def pop(self, timeout: float, accept: Optional[Callable[[T], bool]] = None) -> Optional[T]:
        """The head of the line, now running; None when nothing came within ``timeout`` (or ``wake``), or when
        ``accept`` refuses the head (a batch takes only the head that fits it: the line keeps its order)."""
        with self._lock:
            if not self._line:
                self._changed.wait(timeout)
            if not self._line or (accept is not None and not accept(self._line[0][1])):
                return None
            _, item = self._line.popleft()
            del self._tickets[item.id]
            self._prune()
            self._running.append(item)
            return item

    def finished(self, item: T) -> None:
        with self._lock:
            self._running = [r for r in self._running if r is not item]

    def drain(self) -> list[T]:
        """Everything waiting, plus the running items, taken out at once (the engine is stopping)."""
        with self._lock:
            items = [item for _, item in self._line] + list(self._running)
            self._line.clear()
            self._tickets.clear()
            self._cancelled.clear()
            return items

    # ------------------------------------------------------------------ tickets
    def _position(self, ticket: int) -> int:
        head = self._line[0][0]
        return ticket - head - bisect.bisect_left(self._cancelled, ticket) + 1

    def _prune(self) -> None:
        """Cancels at or before the head no longer lie between it and anyone."""
        if not self._line:
            self._cancelled.clear()
            return
        del self._cancelled[: bisect.bisect_right(self._cancelled, self._line[0][0])]
