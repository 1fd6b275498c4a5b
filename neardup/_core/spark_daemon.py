"""PySpark's worker daemon, with pyspark imported from its installed package: the daemon
of the local sessions neardup starts (``spark.python.daemon.module``, set by
:func:`neardup.spark.session._session` only).

Spark starts the daemon with its ``pyspark.zip`` first on the Python path. Python caches
no bytecode for modules in a zip, so the daemon compiles pyspark's modules from source
as it starts (1.5 s, before the first Python task can run), and so does every worker it
forks, for the modules a worker imports. Where the zip is the one inside the installed
pyspark package (a local session: the workers run the driver's interpreter), it is
dropped from the path, and pyspark's compiled modules are imported: the same code. A zip
from anywhere else is kept.

A worker forked by the daemon inherits what the daemon imported. Left to itself, each
worker's first task imported pyspark's Arrow serializers (pandas), neardup's stages,
numba (scipy with it), and on its first kernel call numba's CPU target loaded its
registries (dozens of modules) before the kernel's cached code: measured with py-spy on
200k documents, most of the extra time of each worker's first task (the first tasks
took twice as long as the next ones). :func:`preload` does it once, in the daemon,
before it forks, and the heap is frozen for the collector (``gc.freeze``), so the
workers share those pages and their collections skip them. No kernel runs there, so
numba starts no threads (a forked child keeps only the thread that forked); the idle
threads that importing numpy, scipy and pyarrow start (OpenBLAS's, jemalloc's) have
handlers of their own for a fork, as under ``multiprocessing``.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from importlib.machinery import PathFinder

# what a worker of a find imports in its first task: pyspark's worker and Arrow
# serializers, and the modules of neardup's task bodies (named here, not imported:
# neardup's layers keep _core below the engines)
PRELOADED = ("pyspark.worker", "pyspark.sql.pandas.serializers", "neardup.spark.read",
             "neardup.spark.stages", "neardup.spark.write")


def installed_first(path: list[str]) -> list[str]:
    """``path`` without a ``pyspark.zip`` that lies in the ``python/lib`` folder of the
    pyspark package the rest of ``path`` imports (an unchanged copy otherwise)."""
    zips = [p for p in path if os.path.basename(p) == "pyspark.zip"]
    rest = [p for p in path if p not in zips]
    spec = PathFinder.find_spec("pyspark", rest) if zips else None
    if spec is None or not spec.origin:
        return list(path)
    own = os.path.join(os.path.dirname(os.path.realpath(spec.origin)), "python", "lib",
                       "pyspark.zip")
    return [p for p in path if not (p in zips and os.path.realpath(p) == own)]


def preload(modules: tuple[str, ...] = PRELOADED) -> list[str]:
    """Import ``modules``, import numba as neardup's kernels do and load its CPU
    target's registries (what a kernel's first call does before it loads the kernel's
    cached code), then freeze the heap; returns what could not be imported (a worker
    imports what it needs itself). No kernel runs here."""
    missing = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:
            missing.append(name)
    try:
        from .jit import load_target

        load_target()
    except Exception:
        missing.append("numba")
    gc.collect()
    gc.freeze()
    return missing


if __name__ == "__main__":
    sys.path[:] = installed_first(sys.path)
    preload()
    from pyspark.daemon import manager

    manager()
