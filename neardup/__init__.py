"""neardup: find near-duplicate documents, source files and sets among millions.

Shingles → MinHash signatures → LSH banding → exact verification → clusters.
``neardup.find(...)`` is ``neardup find ...``; see the README for both. The
stages are modules: ``neardup.minhash.minhash(sets, K)`` computes signatures,
``neardup.lsh`` bands them, ``neardup.allpairs`` is the exact join.
"""

from . import allpairs, lsh, minhash, pairs, synthetic, verify
from ._core.version import VERSION
from .api import dedup, find, tune
from .index import Index
from .lsh import BandPlan, choose_bands, s_curve
from .minhash import Signatures, load_signatures
from .pipeline import FindConfig, FindResult, find_sets, find_texts
from .shingling import ShingleOptions, ShingleSets, shingle
from .sinks import read_results
from .text import cleaning
from .verify import exact_jaccard

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
    "s_curve", "shingle", "synthetic", "tune", "verify",
]
