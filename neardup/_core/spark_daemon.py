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
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import PathFinder


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


if __name__ == "__main__":
    sys.path[:] = installed_first(sys.path)
    from pyspark.daemon import manager

    manager()
