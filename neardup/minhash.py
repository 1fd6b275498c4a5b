"""MinHash signatures: each shingle set becomes K minima, all documents at once.

For a random hash function h, P[min h(A) = min h(B)] = J(A, B) (Broder 1997), so
the share of equal positions among K independent minima estimates J with
standard error sqrt(J (1 - J) / K): 0.035 at J = 0.8, K = 128.

Hash family ``affine32``: h_k(x) = (a_k · x + b_k) mod 2^32 with a_k odd and b_k
random 32-bit words drawn from ``seed``, applied to x after MurmurHash3's
finalizer. Each h_k is a bijection of the 32-bit space; the finalizer makes even
structured keys (consecutive item ids) uniform, so h_k acts as a random
permutation for the minimum. Without it, arithmetic progressions bias the
estimate (measured: 0.46 for a true 0.54). The tests check the estimate against
the binomial error bound over many pairs.
Kept to 32 bits on purpose: the K products vectorize 16 lanes wide, which makes
this ~3.5× faster than 64-bit multiply-shift. 64-bit shingle hashes are folded
to 32 bits (x xor x >> 32) first. Different minima collide with probability
2^-32: negligible.

Hash family ``oph``: one-permutation hashing (Li, Owen and Zhang 2012) with
optimal densification (Shrivastava 2017, ICML). Each shingle is hashed once,
h(x) = top 32 bits of splitmix64(x + key(seed)); its bin is (h · K) >> 32 and bin k
keeps the smallest h that falls into it. One pass over the shingles, O(S + nK)
instead of affine32's O(S·K). The minimum of A ∪ B in a bin lies in A ∩ B with
probability J, so each filled bin is one sample of J, drawn without replacement:
error about sqrt(J (1 - J) / K · (1 - (K - 1) / (|A ∪ B| - 1))), below affine32's
for sets larger than K. A bin left empty (sets not much larger than K) takes the
value of the first filled bin along a probe sequence p(k, 1), p(k, 2), ... that
depends on k and the seed only. Two sets probe the same sequence, and the first
bin filled in A ∪ B holds a common minimum with probability J; values of
different bins never coincide (a bin is a range of h), so the estimate stays
unbiased. Sets much smaller than K fill few bins, and the copies add error:
measured on 5-shingle sets at K = 128, 1.2-1.3× affine32's, still unbiased.

Hash family ``superminhash``: SuperMinHash (Ertl 2017, "SuperMinHash - A New
Minwise Hashing Algorithm for Jaccard Similarity Estimation", arXiv:1706.05698).
Each shingle x draws a random permutation π_x of the K registers (Fisher-Yates)
and a uniform r_j for each position j; register π_x(j) is offered j + r_j and
keeps the smallest offer. Per register this is classic MinHash (the smallest
offer over A ∪ B lies in A ∩ B with probability J), so the estimator is the same
share of equal registers, unbiased. But one shingle's offers go to K different
registers, positions sampled without replacement, which makes the registers
negatively correlated: the error is below affine32's sqrt(J (1 - J) / K) for
every set, by most when |A ∪ B| is not much larger than K (measured: 0.7× the
standard deviation for two 50-shingle sets at K = 128) and tends to it for large
sets. Offers of position j can only win a register that holds nothing below j,
so the kernel fills by positions: position 0 of every shingle (one hash each,
like oph), then position 1 of every shingle, and so on until every register
holds an offer; later positions cannot win. The result is the paper's (the
tests compare it with a literal transcription of its algorithm). Cost: one hash
per shingle, then n steps for each further position a set of n shingles needs,
about (K / n) ln K of them: sets much larger than K ln K (620 at K = 128) cost
what oph costs; smaller ones about K ln K steps more. Measured at K = 128: 1.6-2×
oph's time on the Go tree, 4-6× faster than affine32 there; about affine32's
time on 196-shingle documents; 3× affine32's on sets of ~20 shingles. Shingle
x's draws: s = splitmix64's finalizer of (x xor key(seed)), draw 0 = s, draw j =
mix64(s + j · golden); a draw's high 32 bits are r_j, its low 32 bits pick the
swap partner j + (low · (K - j)) >> 32 (Lemire's multiply). A register holds
(j << 32) | r_j; the signature keeps the high 32 bits of mix64(register xor a
second key): uniform (b-bit signatures stay unbiased), and distinct offers
collide with probability 2^-32.

b-bit MinHash (Li and König 2010) keeps only the low ``bits`` bits of each
minimum. Unequal minima then agree by chance with probability ≈ 2^-bits, so the
raw share of agreements E is corrected: Ĵ = (E - 2^-bits) / (1 - 2^-bits).

Signatures saved with :meth:`Signatures.save` record family, K, seed and bits;
:func:`load_signatures` refuses a file whose parameters differ from the ones
expected, since signatures of different families are not comparable.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

from ._core.hashing import mix64
from ._core.jit import njit, prange
from ._core.kernels import sized_kernel

HASH_FAMILIES = ("affine32", "oph", "superminhash")
# the most accurate of the three and, on sets much longer than K, the fastest (BENCHMARKS.md)
DEFAULT_FAMILY = "superminhash"
_EMPTY = np.uint32(0xFFFFFFFF)


@dataclass(frozen=True)
class Signatures:
    """An n × K matrix of minima and the parameters that produced it."""

    matrix: np.ndarray  # (n, K) uint32, or uint16/uint8 for b-bit signatures
    family: str
    num_perm: int
    seed: int
    bits: int = 32

    @property
    def n(self) -> int:
        return self.matrix.shape[0]

    def params(self) -> dict:
        return {"family": self.family, "num_perm": self.num_perm, "seed": self.seed,
                "bits": self.bits}

    def save(self, path: str | os.PathLike) -> None:
        """Write an .npz holding the matrix and the parameters (JSON)."""
        with open(path, "wb") as f:
            np.savez(f, matrix=self.matrix, params=np.array(json.dumps(self.params())))

    def estimate(self, i: np.ndarray, j: np.ndarray, chunk: int = 1 << 16) -> np.ndarray:
        """Estimated Jaccard of the pairs (i[p], j[p]), b-bit corrected."""
        i = np.asarray(i, dtype=np.int64)
        j = np.asarray(j, dtype=np.int64)
        out = np.empty(i.size, dtype=np.float64)
        for lo in range(0, i.size, chunk):
            hi = min(lo + chunk, i.size)
            equal = self.matrix[i[lo:hi]] == self.matrix[j[lo:hi]]
            out[lo:hi] = equal.mean(axis=1)
        if self.bits < 32:
            chance = 2.0 ** -self.bits
            out = np.clip((out - chance) / (1.0 - chance), 0.0, 1.0)
        return out

    def b_bit(self, bits: int) -> Signatures:
        """Keep the low ``bits`` bits of each minimum (1 ≤ bits ≤ 16)."""
        if not 1 <= bits <= 16:
            raise ValueError(f"bits must be between 1 and 16, got {bits!r}")
        if self.bits < 32:
            raise ValueError("signatures are already b-bit")
        dtype = np.uint8 if bits <= 8 else np.uint16
        low = (self.matrix & np.uint32((1 << bits) - 1)).astype(dtype)
        return Signatures(low, self.family, self.num_perm, self.seed, bits)


def load_signatures(path: str | os.PathLike, *, family: str | None = None,
                    num_perm: int | None = None, seed: int | None = None,
                    bits: int | None = None) -> Signatures:
    """Load signatures saved by :meth:`Signatures.save`, refusing a parameter mismatch."""
    with np.load(path, allow_pickle=False) as data:
        params = json.loads(str(data["params"]))
        matrix = data["matrix"]
    expected = {"family": family, "num_perm": num_perm, "seed": seed, "bits": bits}
    wrong = [f"{k}: file has {params[k]!r}, expected {v!r}"
             for k, v in expected.items() if v is not None and params[k] != v]
    if wrong:
        raise ValueError(f"signatures in {os.fspath(path)} are not comparable: " + "; ".join(wrong))
    return Signatures(matrix, params["family"], params["num_perm"], params["seed"],
                      params["bits"])


def hash_parameters(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The K (a, b) pairs of the affine32 family for ``seed``: a odd, both 32-bit."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2**32, size=num_perm, dtype=np.uint32, endpoint=False) | np.uint32(1)
    b = rng.integers(0, 2**32, size=num_perm, dtype=np.uint32, endpoint=False)
    return a, b


def minhash(sets, num_perm: int = 128, seed: int = 1,
            family: str = DEFAULT_FAMILY) -> Signatures:
    """MinHash signatures of every set in a :class:`~neardup.shingling.ShingleSets`.

    An empty set gets the all-0xFFFFFFFF signature; callers set such documents
    aside before banding, since empty sets would all look identical.
    """
    if family not in HASH_FAMILIES:
        raise ValueError(f"family must be one of {HASH_FAMILIES}, got {family!r}")
    if not isinstance(num_perm, int) or num_perm < 1:
        raise ValueError(f"num_perm must be a positive integer, got {num_perm!r}")
    matrix = np.empty((sets.n, num_perm), dtype=np.uint32)
    if family == "oph":
        shingle_key, probe_key = family_keys(seed)
        _oph_minhash(sets.offsets, sets.values, shingle_key, probe_key, matrix)
    elif family == "superminhash":
        shingle_key, output_key = family_keys(seed)
        _superminhash(sets.offsets, sets.values, shingle_key, output_key, matrix)
    else:
        a, b = hash_parameters(num_perm, seed)
        _affine_minhash(sets.offsets, sets.values, a, b, matrix)
    return Signatures(matrix, family, num_perm, seed)


def family_keys(seed: int) -> tuple[np.uint64, np.uint64]:
    """Two 64-bit keys drawn from ``seed``: oph uses them for the shingle hash and the
    densification probes, superminhash for the shingle draws and the output mix."""
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 2**64, size=2, dtype=np.uint64, endpoint=False)
    return keys[0], keys[1]


@njit(inline="always")
def _fmix32(h):
    """MurmurHash3's 32-bit finalizer (a bijection): makes structured keys uniform."""
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(16)
    return np.uint32(h)


@sized_kernel(work=lambda offsets, values, *_: values.size)
def _affine_minhash(offsets, values, a, b, out):
    # per document: mix its shingles once, then one min-reduction per hash function over
    # them; the inner loop runs over contiguous 32-bit lanes and vectorizes (1.4x faster
    # than updating K running minima per shingle)
    shift = np.uint64(32)
    low32 = np.uint64(0xFFFFFFFF)
    for d in prange(offsets.size - 1):
        lo, hi = offsets[d], offsets[d + 1]
        mixed = np.empty(hi - lo, dtype=np.uint32)
        for p in range(lo, hi):
            x64 = np.uint64(values[p])
            mixed[p - lo] = _fmix32((x64 ^ (x64 >> shift)) & low32)
        for k in range(a.size):
            ak, bk = np.uint64(a[k]), np.uint64(b[k])
            m = _EMPTY
            for p in range(mixed.size):
                v = np.uint32((ak * np.uint64(mixed[p]) + bk) & low32)
                if v < m:
                    m = v
            out[d, k] = m


# after this many probes of an empty bin (each finds a filled one with probability
# ≥ 1/K, so reaching it has probability < e^-32), scan the bins k+1, k+2, ...
_PROBES_PER_BIN = 32


@sized_kernel(work=lambda offsets, values, *_: values.size)
def _oph_minhash(offsets, values, shingle_key, probe_key, out):
    # two passes per document: hash every shingle (vectorizes), then one branch-free min
    # per shingle into its bin (a branch here mispredicts: 2.5x slower on the Go tree)
    num_bins = out.shape[1]
    k64 = np.uint64(num_bins)
    shift = np.uint64(32)
    for d in prange(offsets.size - 1):
        lo, hi = offsets[d], offsets[d + 1]
        row = out[d]
        row[:] = _EMPTY
        if hi == lo:
            continue
        hashes = np.empty(hi - lo, dtype=np.uint32)
        for p in range(lo, hi):
            hashes[p - lo] = np.uint32(mix64(np.uint64(values[p]) + shingle_key) >> shift)
        for q in range(hashes.size):
            h = hashes[q]
            k = (np.uint64(h) * k64) >> shift
            row[k] = min(row[k], h)
        # bin k holds h in [k·2^32/K, (k+1)·2^32/K): values of different bins never agree,
        # and only the last bin can hold 0xFFFFFFFF, the empty marker
        filled = row != _EMPTY
        if not filled[num_bins - 1]:
            filled[num_bins - 1] = np.any(hashes == _EMPTY)
        if filled.all():
            continue
        for k in range(num_bins):
            if filled[k]:
                continue
            # optimal densification: probe bins p_k(1), p_k(2), ... until a filled one;
            # p_k(t) = top bits of a_k·t + b_k (multiply-shift, 2-universal), a_k, b_k from
            # k and the seed only, so every set probes the same sequence
            a_k = mix64(probe_key + np.uint64(2 * k)) | np.uint64(1)
            b_k = mix64(probe_key + np.uint64(2 * k + 1))
            found = -1
            for attempt in range(1, _PROBES_PER_BIN * num_bins + 1):
                j = (((a_k * np.uint64(attempt) + b_k) >> shift) * k64) >> shift
                if filled[j]:
                    found = np.int64(j)
                    break
            if found < 0:
                for step in range(1, num_bins):
                    if filled[(k + step) % num_bins]:
                        found = (k + step) % num_bins
                        break
            row[k] = row[found]  # a filled bin: its own minimum, never a copy


# superminhash: a register holds (j << 32) | r, the smallest offer so far; all ones = none yet
_NO_OFFER = np.uint64(0xFFFFFFFFFFFFFFFF)
_DRAW_STEP = np.uint64(0x9E3779B97F4A7C15)  # splitmix64's increment (the golden ratio)
# the element-by-element pass goes up to the position that leaves a register without an
# offer with this probability; if one is left, it runs again to about twice that position
_MISS_PROBABILITY = 0.05


@sized_kernel(work=lambda offsets, values, *_: values.size)
def _superminhash(offsets, values, shingle_key, output_key, out):
    num_registers = out.shape[1]
    k64 = np.uint64(num_registers)
    shift = np.uint64(32)
    low32 = np.uint64(0xFFFFFFFF)
    for d in prange(offsets.size - 1):
        lo, hi = offsets[d], offsets[d + 1]
        row = out[d]
        if hi == lo:
            row[:] = _EMPTY
            continue
        # draw 0 of every shingle, which is also the seed of its later draws
        seeds = np.empty(hi - lo, dtype=np.uint64)
        for t in range(hi - lo):
            seeds[t] = mix64(np.uint64(values[lo + t]) ^ shingle_key)
        registers = np.full(num_registers, _NO_OFFER, dtype=np.uint64)
        # position 0: π(0) is draw 0's swap partner, offered 0 + r_0 (branch-free min)
        for t in range(seeds.size):
            k = ((seeds[t] & low32) * k64) >> shift
            registers[k] = min(registers[k], seeds[t] >> shift)
        missing = 0
        for k in range(num_registers):
            missing += registers[k] == _NO_OFFER
        if missing == 0:
            pass  # every register holds an offer below 1: no later position can win
        elif 2 * seeds.size >= num_registers:
            _fill_position_by_position(seeds, registers, missing)
        else:
            _fill_shingle_by_shingle(seeds, registers, missing)
        for k in range(num_registers):
            row[k] = np.uint32(mix64(registers[k] ^ output_key) >> shift)


@njit(cache=True)
def _fill_position_by_position(seeds, registers, missing):
    # positions 1, 2, ... for all shingles at once, until no register is left without an
    # offer. Shingle t's Fisher-Yates state after position j is the list of its moves:
    # position moved_to[u, t] took the value moved_value[u, t] at step u. Each pass over the
    # shingles is a flat loop (the draws vectorize); a set this large needs few positions
    num_registers = registers.size
    n = seeds.size
    shift = np.uint64(32)
    low32 = np.uint64(0xFFFFFFFF)
    capacity = 8
    moved_to = np.empty((capacity, n), dtype=np.int32)
    moved_value = np.empty((capacity, n), dtype=np.int32)
    for t in range(n):
        # step 0 swapped positions 0 and π(0): position π(0) now holds 0
        moved_to[0, t] = np.int32(((seeds[t] & low32) * np.uint64(num_registers)) >> shift)
        moved_value[0, t] = 0
    draws = np.empty(n, dtype=np.uint64)
    target = np.empty(n, dtype=np.int32)
    j = 0
    while missing > 0:
        j += 1
        if j == capacity:
            capacity *= 2
            grown = np.empty((capacity, n), dtype=np.int32)
            grown[:j] = moved_to[:j]
            moved_to = grown
            grown = np.empty((capacity, n), dtype=np.int32)
            grown[:j] = moved_value[:j]
            moved_value = grown
        offset = np.uint64(j) * _DRAW_STEP
        span = np.uint64(num_registers - j)
        jj = np.int32(j)
        partner = moved_to[j]
        at_j = moved_value[j]
        for t in range(n):
            draw = mix64(seeds[t] + offset)
            draws[t] = draw
            k = jj + np.int32(((draw & low32) * span) >> shift)
            partner[t] = k
            target[t] = k
            at_j[t] = jj
        # what positions j and partner hold now: their last move, if any
        for u in range(j):
            to = moved_to[u]
            value = moved_value[u]
            for t in range(n):
                m = to[t]
                at_j[t] = value[t] if m == jj else at_j[t]
                target[t] = value[t] if m == partner[t] else target[t]
        # swap: register target[t] = π(j) is offered j + r_j; partner takes what j held
        top = np.uint64(j) << shift
        for t in range(n):
            k = target[t]
            held = registers[k]
            missing -= held == _NO_OFFER
            registers[k] = min(held, top | (draws[t] >> shift))


@njit(cache=True)
def _fill_shingle_by_shingle(seeds, registers, missing):
    # a set much smaller than K needs many positions: each shingle runs its Fisher-Yates
    # shuffle up to ``bound`` on a shared permutation array, restored after each shingle
    num_registers = registers.size
    n = seeds.size
    k64 = np.uint64(num_registers)
    shift = np.uint64(32)
    low32 = np.uint64(0xFFFFFFFF)
    # each missing register is reached at positions 1..bound by a shingle with probability
    # about bound / (K - 1): all are, but with _MISS_PROBABILITY
    bound = np.int64(np.ceil((num_registers - 1)
                             * (1.0 - np.exp(np.log(_MISS_PROBABILITY / missing) / n))))
    bound = min(max(bound, 1), num_registers - 1)
    permutation = np.arange(num_registers)
    moved = np.empty(num_registers, dtype=np.int64)
    while missing > 0:
        for t in range(n):
            k = np.int64(((seeds[t] & low32) * k64) >> shift)
            permutation[k] = 0
            moved[0] = k
            state = seeds[t]
            for j in range(1, bound + 1):
                state += _DRAW_STEP
                draw = mix64(state)
                k = j + np.int64(((draw & low32) * np.uint64(num_registers - j)) >> shift)
                target = permutation[k]
                permutation[k] = permutation[j]
                moved[j] = k
                offer = (np.uint64(j) << shift) | (draw >> shift)
                registers[target] = min(registers[target], offer)
            for j in range(bound + 1):
                permutation[moved[j]] = moved[j]
        missing = 0
        for k in range(num_registers):
            missing += registers[k] == _NO_OFFER
        # at bound K - 1 every shingle offers to every register: none can be missing
        bound = min(2 * bound + 1, num_registers - 1)
