"""Giving freed heap memory back to the system.

glibc's allocator keeps the memory that many small objects (a corpus's texts as Python
strings, shingling's temporaries) leave when they are freed: the resident set stays as
high as it was, and the next stage's arrays come on top of it. ``malloc_trim(0)`` hands
those pages back. Elsewhere (musl, macOS, Windows) there is no such call and
:func:`release_freed_memory` does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys


@functools.cache
def _malloc_trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim  # glibc only: musl has no such symbol
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_freed_memory() -> bool:
    """Return the heap's free pages to the system (glibc), and Arrow's pool's (which
    keeps the buffers of a column read and converted, hundreds of MB for vectors); whether
    glibc could be asked."""
    if "pyarrow" in sys.modules:
        sys.modules["pyarrow"].default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
