"""numba kernels defined at import, built on first use: ``import neardup`` loads no numba.

Importing numba takes 0.35-0.45 s (on 2 shared cores), a third of what ``import
neardup`` cost when every stage module decorated its kernels with ``numba.njit`` at
import, and ``neardup --help`` paid it too. Here a kernel module writes::

    from ._core.jit import njit, prange

    @njit(cache=True)
    def _kernel(values, out):
        for k in prange(values.size):
            ...

and gets a :class:`Kernel`: a stand-in that imports numba (:func:`load_numba`),
builds the dispatcher and runs it on the first call. The dispatcher compiles a copy
of the function whose globals name the real things: other kernels' dispatchers for
the kernels it calls, ``numba.prange`` for :func:`prange` (named as a global, as
above: ``jit.prange`` would reach numba as this module's function). numba resolves globals
when it compiles, and the kernels a module defines are all bound by then. The copy
keeps the function's code, file, name and first line, so its cache entries are the
ones ``numba.njit`` on the function would write.

Within :func:`interpreted` a kernel runs its Python source instead (numba is neither
imported nor asked to compile): for an input so small that compiling would take
hundreds of times longer than the loops, as the pipeline decides
(``neardup.pipeline.kernels_for``). The source is the same loops on the same numpy
types, and the results are the compiled kernels' (tests/pipeline/test_interpreted.py).
Anything else a dispatcher has
(``signatures``, ``py_func`` of the copy through ``dispatcher``) is reached through
:attr:`Kernel.dispatcher`; ``kernel.signatures`` reads it without building one.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

_INTERPRETED = contextvars.ContextVar("neardup_interpreted", default=False)


def is_interpreted() -> bool:
    """Whether kernels run their Python source here (inside :func:`interpreted`)."""
    return _INTERPRETED.get()


def interpreted_if(condition: bool):
    """:func:`interpreted` when ``condition``, else a context that changes nothing."""
    return interpreted() if condition else contextlib.nullcontext()


@contextmanager
def interpreted() -> Iterator[None]:
    """Within: every kernel runs its Python source; nothing is compiled."""
    token = _INTERPRETED.set(True)
    try:
        with np.errstate(over="ignore"):  # the hashes' uint64 wraparound, silent as in numba
            yield
    finally:
        _INTERPRETED.reset(token)


def prange(*args):
    """``range`` in Python; ``numba.prange`` in a kernel (a parallel loop with parallel=True)."""
    return range(*args)


@functools.cache
def load_numba() -> types.ModuleType:
    """Import numba, once, with what neardup adds to it: the archive cache locator
    (before any kernel is built, so a wheel on sys.path caches too) and the clock that
    times compiles for the stage lines.

    OpenMP's threads (numba's threading layer where libgomp is found) wait for the next
    parallel loop asleep, not spinning, unless the user's environment says otherwise:
    between two kernels a run reads its next chunk in another thread, which the
    spinning took the cores from (1M documents: 5 % fewer CPU-seconds, 3.6 % less wall).
    libgomp reads the variable when numba first loads it, after this import."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import numba

    from . import numba_cache, progress

    numba_cache.register()
    progress.time_compiles()
    return numba


def load_target() -> None:
    """numba imported (:func:`load_numba`) and its CPU target made ready: its entry points
    run and its registries loaded (dozens of modules, scipy's among them), which a
    process's first kernel call does before it loads the kernel's cached code, about a
    second of CPU. Runs no kernel and starts no thread of numba's."""
    load_numba()
    from numba.core import entrypoints
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target

    with global_compiler_lock:
        entrypoints.init_all()
        cpu_target.target_context.refresh()


class Kernel:
    """A numba kernel that imports numba and builds its dispatcher when first called."""

    def __init__(self, py_func: Callable, options: dict):
        self.py_func = py_func
        self.options = options
        self._dispatcher = None
        self.__name__ = py_func.__name__
        self.__qualname__ = py_func.__qualname__
        self.__doc__ = py_func.__doc__
        self.__module__ = py_func.__module__

    @property
    def dispatcher(self):
        """The numba dispatcher (built, not compiled, on first use)."""
        if self._dispatcher is None:
            numba = load_numba()
            dispatcher = numba.njit(**self.options)(_resolved(self.py_func, numba))
            if self.options.get("cache"):
                from . import prebuilt

                dispatcher._cache = prebuilt.cache_for(dispatcher)
            self._dispatcher = dispatcher
        return self._dispatcher

    @property
    def signatures(self) -> list:
        """The signatures compiled (or loaded from the cache) so far; [] before any call."""
        return [] if self._dispatcher is None else self._dispatcher.signatures

    def __call__(self, *args):
        if _INTERPRETED.get():
            return self.py_func(*args)
        return self.dispatcher(*args)

    def __repr__(self) -> str:
        return f"<neardup kernel {self.__module__}.{self.__qualname__}>"


def njit(py_func: Callable | None = None, **options):
    """``numba.njit`` on first use: ``@njit``, ``@njit(cache=True)``, ``njit(**o)(f)``."""
    if py_func is not None:
        return Kernel(py_func, options)
    return lambda func: Kernel(func, options)


def _resolved(py_func: Callable, numba: types.ModuleType) -> Callable:
    """A copy of ``py_func`` whose globals hold dispatchers for kernels, numba's prange."""
    names = _global_names(py_func.__code__)
    namespace = dict(py_func.__globals__)
    for name in names:
        value = namespace.get(name)
        if isinstance(value, Kernel):
            namespace[name] = value.dispatcher
        elif value is prange:
            namespace[name] = numba.prange
    copy = types.FunctionType(py_func.__code__, namespace, py_func.__name__,
                              py_func.__defaults__, py_func.__closure__)
    copy.__qualname__ = py_func.__qualname__
    copy.__module__ = py_func.__module__
    copy.__doc__ = py_func.__doc__
    copy.__kwdefaults__ = py_func.__kwdefaults__
    return copy


def _global_names(code: types.CodeType) -> set[str]:
    """The names ``code`` and the code nested in it may look up as globals."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names
