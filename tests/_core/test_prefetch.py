"""prefetched: the items of an iterator, in order, made one step ahead in a thread."""

from __future__ import annotations

import threading

import pytest

from neardup._core.prefetch import prefetched


def test_items_come_in_order_and_all_of_them():
    with prefetched(iter(range(1000))) as ahead:
        assert list(ahead) == list(range(1000))
    with prefetched(iter([])) as ahead:
        assert list(ahead) == []


def test_at_most_depth_items_are_made_ahead_of_the_caller():
    made = []

    def items():
        for k in range(10):
            made.append(k)
            yield k

    with prefetched(items(), depth=1) as ahead:
        for k in ahead:
            # item k taken, k + 1 waiting in the hand-off, k + 2 made and blocked on it
            assert len(made) <= k + 3
    assert made == list(range(10))


def test_the_items_are_made_in_another_thread():
    threads = []

    def items():
        threads.append(threading.current_thread())
        yield 1

    with prefetched(items()) as ahead:
        assert list(ahead) == [1]
    assert threads[0] is not threading.current_thread()


@pytest.mark.parametrize("error", [ValueError("bad line"), KeyboardInterrupt()])
def test_an_error_of_the_iterator_comes_where_its_item_would(error):
    def items():
        yield 1
        yield 2
        raise error

    got = []
    with pytest.raises(type(error)):
        with prefetched(items()) as ahead:
            for item in ahead:
                got.append(item)
    assert got == [1, 2]


def test_a_caller_that_stops_early_stops_the_thread_and_closes_the_iterator():
    closed = threading.Event()
    made = []

    def items():
        try:
            for k in range(1_000_000):
                made.append(k)
                yield k
        finally:
            closed.set()

    with pytest.raises(RuntimeError):
        with prefetched(items()) as ahead:
            for k in ahead:
                if k == 3:
                    raise RuntimeError("the caller failed")
    assert closed.is_set()
    assert len(made) <= 6  # the thread stopped at its next item
    assert not any(t.name == "neardup-prefetch" for t in threading.enumerate())
