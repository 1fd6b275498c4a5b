"""Ctrl-C and SIGTERM: noted when they arrive, acted on between batches.

Python runs a signal handler between two bytecodes of the main thread, and that can be
inside numba's dispatcher (typing a call's arguments, loading a cached kernel): an
exception raised there comes back as ``SystemError: CPUDispatcher(...) returned a
result with an exception set``, or leaves the dispatcher half-built and the process
crashes. So the handlers :func:`deferred` installs only note the signal, and
:func:`check`, called between batches (each shingling batch, each record read, each
stage, each block a segment writer writes), raises it there: :class:`Terminated` for
SIGTERM, ``KeyboardInterrupt`` for SIGINT, and every ``with`` block on the way out
removes what it wrote. Outside :func:`deferred` (the library in a notebook) Python's
own handlers stay and :func:`check` finds nothing to raise.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_pending: list[int] = []  # the signal noted and not yet raised (at most one)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised at a check point so that every ``with`` block cleans up."""


def _note(signum, frame) -> None:
    if not _pending:
        _pending.append(signum)


def check() -> None:
    """Raise the signal noted since the last check, if any (once)."""
    if _pending:
        signum = _pending.pop()
        raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


@contextmanager
def deferred(*, for_life: bool = False):
    """``with deferred():`` SIGINT and SIGTERM are noted, raised by :func:`check`.

    ``for_life``: the block is the command of this process; after it, the work done
    and the interpreter exiting, both signals are ignored (Python's exit resets any
    handler to the default, a death by signal, but leaves SIG_IGN), so the exit code
    stays the command's. Otherwise the previous handlers come back. Only in the main
    thread (where Python delivers signals); elsewhere a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _note) for s in SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, signal.SIG_IGN if for_life else handler)
        _pending.clear()
