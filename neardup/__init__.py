"""neardup: find near-duplicate documents, source files and sets among millions.

Shingles → MinHash signatures → LSH banding → exact verification → clusters.
``neardup.find(...)`` is ``neardup find ...``; see the README for both. The
stages are modules: ``neardup.minhash.minhash(sets, K)`` computes signatures,
``neardup.lsh`` bands them, ``neardup.allpairs`` is the exact join.
"""

from ._core import numba_cache as _numba_cache
from ._core.version import VERSION

_numba_cache.register()  # before any kernel is defined: a wheel on sys.path caches too

from . import allpairs, lsh, minhash, pairs, synthetic, verify  # noqa: E402
from .api import dedup, find, repeats, tune  # noqa: E402
from .index import Index  # noqa: E402
from .lsh import BandPlan, choose_bands, s_curve  # noqa: E402
from .minhash import Signatures, load_signatures  # noqa: E402
from .pipeline import FindConfig, FindResult, find_sets, find_texts  # noqa: E402
from .shingling import ShingleOptions, ShingleSets, shingle  # noqa: E402
from .sinks import read_results  # noqa: E402
from .text import cleaning  # noqa: E402
from .verify import exact_jaccard  # noqa: E402

__version__ = VERSION


def __getattr__(name: str):
    """``neardup.code`` on first use: it needs Pygments, the code extra."""
    if name == "code":
        import importlib

        return importlib.import_module(f"{__name__}.code")
    raise AttributeError(f"module 'neardup' has no attribute {name!r}")

__all__ = [
    "BandPlan", "FindConfig", "FindResult", "Index", "ShingleOptions", "ShingleSets", "Signatures",
    "allpairs", "choose_bands", "cleaning", "code", "dedup", "exact_jaccard", "find",
    "find_sets", "find_texts", "load_signatures", "lsh", "minhash", "pairs", "read_results",
    "repeats", "s_curve", "shingle", "synthetic", "tune", "verify",
]
