"""The 64-bit mixing every hash in neardup is built from (numba, inlined into kernels).

Shingle hashes, MinHash families, band keys, SimHash bits and the Go lexer's token
hashes all call :func:`mix64`; changing it changes every value neardup writes.
"""

from __future__ import annotations

import numpy as np

from .jit import njit

GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / φ: the Weyl step between code points


@njit(inline="always")
def mix64(z):
    """splitmix64's finalizer: a bijection on 64 bits with full avalanche."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))
