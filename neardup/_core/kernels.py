"""Parallel numba kernels that compile their parallel form only when an input pays for it.

numba compiles a kernel the first time it runs and caches the machine code on disk;
only a fresh install (or a new numba) pays that cost. A kernel with ``parallel=True``
(``prange`` loops) costs 3-8x as long to compile as the same loop plain, for numba's
parfor passes and gufunc scheduling. Measured on 2 shared cores, cold cache:

=================  ========  =====
kernel             parallel  plain
=================  ========  =====
pairs._fill_rows   4.2 s     0.5 s
pairs._row_counts  1.2 s     0.2 s
_sort_segments     1.5 s     0.3 s
_superminhash      7.4 s     4.6 s
=================  ========  =====

while on a small input the plain loop runs in milliseconds either way. So each such
kernel is written once, with ``prange``, and compiled in one of two forms on demand:
plain below :data:`PARALLEL_FROM` units of work (elements, bytes or rows the call
touches, as the kernel's ``work`` function counts them), parallel from there. Both
forms give the same results (``prange`` is ``range`` in the plain one); each has its
own cache entry. A run over a small file then compiles only plain kernels, and a
large input, whose run dwarfs the one-time compile, gets both cores. A sample that
stands for a larger input (the planner's) runs under :func:`work_scaled`, so that it
takes the form the whole input's calls will take and a run compiles one form, not both.
"""

from __future__ import annotations

import contextvars
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from . import prebuilt
from .jit import is_interpreted, load_numba, njit

# Units of work from which the parallel form runs. The kernels' plain loops take 1-9 ns
# a unit (measured on the Go tree: word tokens 6.4 ns a byte, n-gram hashes 8.6 ns,
# superminhash 3.1 ns a shingle, fingerprints 3.5 ns), so below this a call takes
# tens of milliseconds, where a second core saves less than the parallel form's extra
# compile (about 1-3 s a kernel on a cold cache) would cost a first run.
PARALLEL_FROM = 16_000_000
_WORK_SCALE = contextvars.ContextVar("neardup_work_scale", default=1.0)


@contextmanager
def work_scaled(factor: float) -> Iterator[None]:
    """Within: each call's work counts ``factor`` times, as for the input a sample stands for."""
    token = _WORK_SCALE.set(float(factor))
    try:
        yield
    finally:
        _WORK_SCALE.reset(token)


class SizedKernel:
    """A ``prange`` kernel callable like the function, run plain or parallel by its work.

    ``work(*args)`` returns the units of work of a call; ``plain`` and ``parallel``
    are the two :class:`neardup._core.jit.Kernel` forms (built, numba imported, on
    first use; usable from other kernels: ``plain`` is).
    """

    def __init__(self, py_func: Callable, work: Callable[..., int]):
        self.py_func = py_func
        self.work = work
        self.parallel = njit(cache=True, parallel=True)(py_func)
        self.plain = njit(cache=True)(_twin(py_func, "plain"))
        self.__name__ = py_func.__name__
        self.__qualname__ = py_func.__qualname__
        self.__doc__ = py_func.__doc__
        self.__module__ = py_func.__module__

    def form(self, *args):
        """The dispatcher that a call with these arguments runs."""
        work = self.work(*args) * _WORK_SCALE.get()
        return self.parallel if work >= PARALLEL_FROM else self.plain

    def __call__(self, *args):
        if prebuilt.building() and not is_interpreted():
            self._compile_both(args)
        return self.form(*args)(*args)

    def _compile_both(self, args: tuple) -> None:
        """Compile (into the prebuilt cache) both forms for these arguments' types, so
        that the shipped kernels serve a small input and a large one alike."""
        numba = load_numba()
        signature = tuple(numba.typeof(arg) for arg in args)
        for form in (self.plain, self.parallel):
            form.dispatcher.compile(signature)


def sized_kernel(work: Callable[..., int]) -> Callable[[Callable], SizedKernel]:
    """Decorator: ``@sized_kernel(work=lambda data, offsets: data.size)``."""
    return lambda py_func: SizedKernel(py_func, work)


def _twin(py_func: Callable, suffix: str) -> Callable:
    """A copy of ``py_func`` under another qualified name: numba names a kernel's cache
    files after it, and keys the entries by signature only, so two forms of one
    function would otherwise read each other's machine code."""
    twin = types.FunctionType(py_func.__code__, py_func.__globals__,
                              f"{py_func.__name__}_{suffix}", py_func.__defaults__,
                              py_func.__closure__)
    twin.__qualname__ = f"{py_func.__qualname__}_{suffix}"
    twin.__module__ = py_func.__module__
    twin.__doc__ = py_func.__doc__
    return twin
