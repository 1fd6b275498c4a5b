"""Compiled kernels cached wherever neardup is installed, a wheel or zip on sys.path too.

numba caches a ``cache=True`` kernel next to its source (``__pycache__``), in the
user's cache folder when that is read-only, or, for a module inside a ``.zip``, by the
zip's path. Inside a wheel on ``sys.path`` (``spark-submit --py-files neardup.whl``), an
``.egg`` or any other archive, no locator applies and the import fails with "cannot
cache function ...: no locator available". :class:`ArchiveCacheLocator`, registered
after numba's own locators, takes those: it finds the archive in the source path and
caches in ``NUMBA_CACHE_DIR``, else the user's cache folder, else the temporary folder,
whichever is writable first. The cache is keyed by the module's content (its SHA-256 in
the archive), not by the archive's path: every copy of one wheel (each Spark executor
gets its own) shares one compiled kernel, and a kernel is recompiled when its module
changes.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from numba.core import caching


class ArchiveCacheLocator(caching._CacheLocator):
    """Cache kernels of modules read from a zip archive of any name (.whl, .egg, .pyz)."""

    def __init__(self, py_func, py_file: str, archive: str, member: str, cache_dir: str):
        self._lineno = py_func.__code__.co_firstlineno
        self._digest = member_digest(archive, member)
        self._cache_path = os.path.join(cache_dir, "archives",
                                        PurePosixPath(member).with_suffix("").as_posix()
                                        .replace("/", "."), self._digest[:16])

    def get_cache_path(self) -> str:
        return self._cache_path

    def get_source_stamp(self):
        return self._digest

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        if os.path.exists(py_file):
            return None  # a plain file: numba's own locators handle it
        found = split_archive_path(py_file)
        if found is None:
            return None
        for cache_dir in cache_folders():
            self = cls(py_func, py_file, *found, cache_dir)
            try:
                self.ensure_cache_path()
            except OSError:
                continue
            return self
        return None


@functools.lru_cache(maxsize=256)
def member_digest(archive: str, member: str) -> str:
    """SHA-256 of one module inside an archive (read once per process)."""
    with zipfile.ZipFile(archive) as opened:
        return hashlib.sha256(opened.read(member)).hexdigest()


def split_archive_path(py_file: str) -> tuple[str, str] | None:
    """(archive, member inside it) for a path through a zip archive, else None."""
    path = Path(py_file)
    for k in range(1, len(path.parts)):
        candidate = Path(*path.parts[:k])
        if candidate.is_file():
            if not zipfile.is_zipfile(candidate):
                return None
            return str(candidate), PurePosixPath(*path.parts[k:]).as_posix()
    return None


def cache_folders() -> list[str]:
    """Where kernels may be cached, first choice first."""
    folders = []
    if os.environ.get("NUMBA_CACHE_DIR"):
        folders.append(os.environ["NUMBA_CACHE_DIR"])
    home_cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                  ".cache")
    folders.append(os.path.join(home_cache, "neardup-numba"))
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    folders.append(os.path.join(tempfile.gettempdir(), f"neardup-numba-{uid}"))
    return folders


def register() -> None:
    """Add :class:`ArchiveCacheLocator` after numba's locators (once)."""
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    if impl is not None and ArchiveCacheLocator not in impl._locator_classes:
        impl._locator_classes = [*impl._locator_classes, ArchiveCacheLocator]
