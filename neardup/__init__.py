"""neardup: find near-duplicate documents, source files and sets among millions.

Shingles → MinHash signatures → LSH banding → exact verification → clusters.
``neardup.find(...)`` is ``neardup find ...``; see the README for both. The
stages are modules: ``neardup.minhash.minhash(sets, K)`` computes signatures,
``neardup.lsh`` bands them, ``neardup.allpairs`` is the exact join.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._core.version import VERSION

if TYPE_CHECKING:
    from . import allpairs, code, lsh, minhash, pairs, synthetic, verify
    from .api import contamination, dedup, find, repeats, tune
    from .index import Index
    from .lsh import BandPlan, choose_bands, s_curve
    from .minhash import Signatures, load_signatures
    from .pipeline import FindConfig, FindResult, find_sets, find_texts
    from .shingling import ShingleOptions, ShingleSets, shingle
    from .sinks import read_results
    from .text import cleaning
    from .verify import exact_jaccard

__version__ = VERSION

# Each name is imported on first use, so that ``import neardup`` stays quick (numpy,
# pyarrow and the stages load with the first name that needs them; numba with the
# first kernel that runs). ``neardup.code`` needs Pygments, the code extra.
_MODULES = {"allpairs": "allpairs", "code": "code", "lsh": "lsh", "minhash": "minhash",
            "pairs": "pairs", "synthetic": "synthetic", "verify": "verify",
            "cleaning": "text.cleaning"}
_NAMES = {"build_index": "api", "contamination": "api", "dedup": "api", "find": "api",
          "repeats": "api", "tune": "api",
          "Index": "index",
          "BandPlan": "lsh", "choose_bands": "lsh", "s_curve": "lsh",
          "Signatures": "minhash", "load_signatures": "minhash",
          "FindConfig": "pipeline", "FindResult": "pipeline", "find_sets": "pipeline",
          "find_texts": "pipeline", "ShingleOptions": "shingling", "ShingleSets": "shingling",
          "shingle": "shingling", "read_results": "sinks", "exact_jaccard": "verify"}


def __getattr__(name: str):
    if name in _MODULES:
        value = importlib.import_module(f"{__name__}.{_MODULES[name]}")
    elif name in _NAMES:
        value = getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
    else:
        raise AttributeError(f"module 'neardup' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "BandPlan", "FindConfig", "FindResult", "Index", "ShingleOptions", "ShingleSets", "Signatures",
    "allpairs", "build_index", "choose_bands", "cleaning", "code", "contamination", "dedup",
    "exact_jaccard", "find",
    "find_sets", "find_texts", "load_signatures", "lsh", "minhash", "pairs", "read_results",
    "repeats", "s_curve", "shingle", "synthetic", "tune", "verify",
]
