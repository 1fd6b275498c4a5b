"""Stage timing and progress on stderr; silent with ``quiet``.

A progress line goes through :func:`say`: to the ``neardup`` logger (:data:`LOGGER`, level
INFO) when logging is set up to show it there (``logging.basicConfig(level=logging.INFO)``,
or a handler on ``logging.getLogger("neardup")``), else straight to stderr, as the command
line prints it. ``quiet`` (the library's default) says nothing either way.

A stage's time includes numba compiling the kernels it runs for the first time (on a
fresh install, or after an upgrade; later runs load them from the cache). numba's
``numba:compile`` events are timed, so the first compile is announced once and each
stage line says how much of it was compiling instead of blaming the stage. The clock
listens from when numba is loaded (:func:`time_compiles`), not from ``import neardup``.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from contextlib import contextmanager

from . import interrupt

LOGGER = logging.getLogger("neardup")


def say(line: str) -> None:
    """A progress line (its caller is not quiet): a record of :data:`LOGGER` at INFO when a
    handler would show it, else printed to stderr."""
    if LOGGER.isEnabledFor(logging.INFO) and LOGGER.hasHandlers():
        LOGGER.info(line)
    else:
        print(line, file=sys.stderr, flush=True)


class _CompileClock:
    """Wall seconds spent compiling kernels in this process (nested compiles once)."""

    def __init__(self):
        self.seconds = 0.0
        self.announce = False  # a timer that prints is running: say it once
        self._local = threading.local()

    def on_start(self, ev):
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            self._local.started = time.perf_counter()
            if self.announce:
                self.announce = False
                say("[neardup] compiling kernels on first use (up to a minute, once: later "
                    "runs load them from the cache) ...")
        self._local.depth = depth + 1

    def on_end(self, ev):
        self._local.depth -= 1
        if self._local.depth == 0:
            self.seconds += time.perf_counter() - self._local.started


COMPILE_NOTE_SECONDS = 0.05  # a stage line names compiling that took at least this long
# a long loop with no bar to show (stderr is not a terminal: a log, a pipe) says how far
# it has come this often
PROGRESS_EVERY = 10.0
COMPILING = _CompileClock()
_listening: list[object] = []  # numba's listener that feeds COMPILING, once registered


def time_compiles() -> None:
    """Feed numba's ``numba:compile`` events to :data:`COMPILING` (once; imports numba)."""
    if _listening:
        return
    from numba.core import event

    class Listener(event.Listener):
        def on_start(self, ev):
            COMPILING.on_start(ev)

        def on_end(self, ev):
            COMPILING.on_end(ev)

    _listening.append(Listener())
    event.register("numba:compile", _listening[0])


class StageTimer:
    """Times named stages; prints a line per stage to stderr unless quiet.

    ``compile_seconds``: the part of the stages' time numba spent compiling kernels.
    """

    _announced = False

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self.seconds: dict[str, float] = {}
        self.compile_seconds = 0.0
        self._steady = _Steady(None)
        if not quiet and not StageTimer._announced:
            StageTimer._announced = True
            COMPILING.announce = True

    @contextmanager
    def stage(self, name: str, detail: str = "", keep: bool = True,
              documents: int | None = None):
        """Time stage ``name`` (``detail``: what it works on, for its first line);
        ``keep``: add its time to ``seconds`` (False: its work records its own, as the
        results folder's writer does); ``documents``: how many it works on, for the
        lines a long stage says between its first and last (see :meth:`bar`)."""
        interrupt.check()  # a stage boundary: where Ctrl-C and SIGTERM are acted on
        if "numba" in sys.modules:  # loaded some other way than a neardup kernel
            time_compiles()
        if not self.quiet:
            say(f"[neardup] {name}{': ' + detail if detail else ''} ...")
        start = time.perf_counter()
        compiled = COMPILING.seconds
        self._steady = _Steady(documents)
        self.began(name)
        try:
            yield
            interrupt.check()
        finally:
            ran = self.ran(name)
            elapsed = time.perf_counter() - start
            compiling = COMPILING.seconds - compiled
            if keep:
                self.seconds[name] = self.seconds.get(name, 0.0) + elapsed
            self.compile_seconds += compiling
            if not self.quiet:
                note = (f" ({compiling:.2f} s of it compiling kernels, once)"
                        if compiling >= COMPILE_NOTE_SECONDS and compiling > 0 else "")
                say(f"[neardup] {name} done in {elapsed:.2f} s{note}{ran}")

    def began(self, name: str) -> None:
        """Called as stage ``name`` starts (an engine's timer watches its own work here)."""

    def ran(self, name: str) -> str:
        """Called as stage ``name`` ends: what the engine ran in it, for the end line
        (" (3 Spark jobs, 12 tasks)"), or ""."""
        return ""

    def bar(self, iterable, total: int, desc: str, sizes=None):
        """A tqdm bar on stderr for long loops over batches (none when quiet); between
        two batches, Ctrl-C and SIGTERM are acted on (:func:`interrupt.check`).

        Where stderr is not a terminal (no bar is drawn there), a line instead every
        :data:`PROGRESS_EVERY` seconds while the loop runs: "[neardup] shingle: 3,000
        of 5,000 documents done (12 s)", ``sizes`` being the documents of each batch
        (the stage's ``documents`` the whole; batches without ``sizes``)."""
        if self.quiet or (total <= 1 and sys.stderr.isatty()):  # a bar for one: a flicker
            return checked(iterable)
        if sys.stderr.isatty():
            from tqdm import tqdm

            return checked(tqdm(iterable, total=total, desc=f"[neardup] {desc}",
                                unit="batch", file=sys.stderr, leave=False))
        return self._steady.lines(checked(iterable), desc, sizes)


class _Steady:
    """How far a stage has come over its loops (several: one per route of the texts): the
    loop counts what each batch held as it asks for the next; a thread says the count
    every PROGRESS_EVERY seconds, also while one long batch runs (the loop pays one
    addition per batch, no clock)."""

    def __init__(self, documents: int | None):
        self.total = documents
        self.done = 0
        self.began = self.said = time.perf_counter()  # the stage's start, its last line

    def lines(self, iterable, desc: str, sizes):
        stop = threading.Event()
        unit = "batches" if sizes is None else "documents"
        of = f" of {self.total:,}" if self.total is not None and sizes is not None else ""

        def tell():  # counted from the stage's last line: its loops may each be short
            while not stop.wait(max(0.0, self.said + PROGRESS_EVERY - time.perf_counter())):
                self.said = time.perf_counter()
                say(f"[neardup] {desc}: {self.done:,}{of} {unit} done "
                    f"({self.said - self.began:.0f} s)")

        teller = threading.Thread(target=tell, name="neardup-progress", daemon=True)
        teller.start()
        try:
            for k, item in enumerate(iterable):
                yield item  # its work is done when the loop asks for the next
                self.done += 1 if sizes is None else int(sizes[k])
        finally:
            stop.set()
            teller.join()


def checked(iterable):
    """``iterable``, with Ctrl-C and SIGTERM acted on before each item."""
    for item in iterable:
        interrupt.check()
        yield item
