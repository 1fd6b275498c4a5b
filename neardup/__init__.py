"""neardup: find near-duplicate documents, source files and sets among millions.

Shingles → MinHash signatures → LSH banding → exact verification → clusters.
``neardup.find(...)`` is ``neardup find ...``; see the README for both.
"""

from .api import dedup, find, tune
from .lsh import BandPlan, choose_bands, s_curve
from . import allpairs, cleaning, code, lsh, minhash, synthetic, verify
from .minhash import Signatures, load_signatures
from .pipeline import FindConfig, FindResult, find_sets, find_texts
from .shingling import ShingleOptions, ShingleSets, shingle
from .verify import exact_jaccard

__version__ = "0.1.0"

# modules: neardup.minhash.minhash(sets, K) computes signatures, neardup.lsh bands them
__all__ = [
    "BandPlan", "FindConfig", "FindResult", "ShingleOptions", "ShingleSets", "Signatures",
    "choose_bands", "dedup", "exact_jaccard", "find", "find_sets", "find_texts",
    "load_signatures", "s_curve", "shingle", "tune",
]
