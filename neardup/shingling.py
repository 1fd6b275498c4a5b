"""Shingling: documents become sets of hashed shingles, stored column-wise (CSR).

A shingle is k consecutive characters (``kind="char"``) or n consecutive tokens
(``kind="word"``, or the tokens of any tokenizer plugged in through ``tokenize``).
Each shingle is hashed to a 64-bit integer by a rolling mix over its tokens and
kept as 32 or 64 bits. A document's shingle set is the sorted, unique array of
those hashes; all documents together are one :class:`ShingleSets`:
``offsets`` (int64[n + 1]) and ``values`` (uint32 or uint64), document ``d``
owning ``values[offsets[d]:offsets[d + 1]]``.

Hashing runs in numba kernels over code-point arrays: Python touches each
document once (normalize), never each token or shingle. The default word tokens
(``\\w+`` runs) are found by a kernel too, with a lookup table of the code points
``\\w`` matches (:class:`WordChars`); the kernel also applies the default
normalization, lowering ASCII itself and leaving Python only the non-ASCII runs
(:func:`fold_non_ascii`). A ``tokenize`` callable (code tokenizers, cleaners' token
steps) returns Python lists, which are hashed in bulk.

A document shorter than one shingle (fewer than k characters or n tokens, but
not empty) becomes a single shingle of all it has, so short strings
are still comparable. Hash collisions between distinct shingles happen with
probability about S^2 / 2^33 for 32-bit values (S distinct shingles); each
collision can only raise a Jaccard similarity by about 1/|A ∪ B|.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ._core.hashing import GOLDEN, mix64
from ._core.jit import njit, prange
from ._core.kernels import sized_kernel

SHINGLE_KINDS = ("char", "word")
HASH_BITS = (32, 64)
WORD_PATTERN = re.compile(r"\w+")


def check_csr(offsets: np.ndarray, values: np.ndarray, *, from_zero: bool = False) -> None:
    """ValueError unless ``offsets`` (1-d, n + 1 long) ends at ``values.size``; with
    ``from_zero``, also unless it starts at 0 and never decreases."""
    if offsets.ndim != 1 or offsets.size == 0:
        raise ValueError("offsets must be a 1-d array of length n + 1")
    if from_zero and (int(offsets[0]) != 0 or np.any(np.diff(offsets) < 0)):
        raise ValueError("offsets must start at 0 and never decrease")
    if int(offsets[-1]) != values.size:
        raise ValueError(f"offsets end at {int(offsets[-1])} but there are {values.size} values")


@dataclass(frozen=True)
class ShingleSets:
    """Shingle sets of n documents in CSR form.

    ``values[offsets[d]:offsets[d + 1]]`` is document d's set: sorted, unique.
    """

    offsets: np.ndarray  # int64[n + 1]
    values: np.ndarray  # uint32 or uint64, sorted and unique within each document

    def __post_init__(self) -> None:
        check_csr(self.offsets, self.values)

    @property
    def n(self) -> int:
        return self.offsets.size - 1

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def __len__(self) -> int:
        return self.n

    def get(self, d: int) -> np.ndarray:
        return self.values[self.offsets[d] : self.offsets[d + 1]]

    def subset(self, index: np.ndarray) -> ShingleSets:
        """The sets of the documents at ``index``, in that order."""
        index = np.asarray(index, dtype=np.int64)
        sizes = self.sizes[index]
        offsets = np.zeros(index.size + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        values = np.empty(int(offsets[-1]), dtype=self.values.dtype)
        _gather_segments(self.offsets, self.values, index, offsets, values)
        return ShingleSets(offsets, values)

    @staticmethod
    def from_sets(sets: Iterable[Iterable[int]], dtype=np.uint64) -> ShingleSets:
        """Build from Python iterables of integers (tests, small inputs)."""
        arrays = [np.unique(np.asarray(list(s), dtype=dtype)) for s in sets]
        offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
        np.cumsum([a.size for a in arrays], out=offsets[1:])
        values = np.concatenate(arrays) if arrays else np.empty(0, dtype=dtype)
        return ShingleSets(offsets, values.astype(dtype, copy=False))

    @staticmethod
    def concat(parts: Sequence[ShingleSets]) -> ShingleSets:
        if not parts:
            return ShingleSets(np.zeros(1, dtype=np.int64), np.empty(0, dtype=np.uint32))
        sizes = np.concatenate([p.sizes for p in parts])
        offsets = np.zeros(sizes.size + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return ShingleSets(offsets, np.concatenate([p.values for p in parts]))


def normalize_light(text: str) -> str:
    """The default normalization: Unicode NFKC, case folding, whitespace collapsed.

    Case folding can leave text that composes differently ("ß\u0301" folds to
    "ss\u0301"), so it is followed by NFC: normalizing twice changes nothing.
    """
    return " ".join(fold_light(text).split())


def fold_light(text: str) -> str:
    """NFC(casefold(NFKC(text))): :func:`normalize_light` without the whitespace collapse.

    ASCII text is NFKC and NFC already and folds like ``str.lower``, so it takes
    one C call (``str.isascii`` reads a flag CPython keeps on the string).
    Word tokens of this text and of ``normalize_light(text)`` are the same:
    collapsing whitespace never joins or splits a ``\\w+`` run.
    """
    if text.isascii():
        return text.lower()
    # mostly-ASCII text is usually normalized already: the quick checks cost a quarter
    # of a normalization
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    text = text.casefold()
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


def word_tokens(text: str) -> list[str]:
    """Words: maximal runs of Unicode letters, digits and underscores."""
    return WORD_PATTERN.findall(text)


_CODE_POINTS = 0x110000
_ASCII_FOLD = np.array([ord(chr(c).lower()) for c in range(128)], dtype=np.uint32)
_LAST_SPACE = 0x3000  # no code point above it is whitespace (test_shingling checks all)


class WordChars:
    """``word[c]``: ``\\w`` matches code point c (``re``: ``str.isalnum()`` or "_").

    Filled in lazily: a corpus meets a few thousand of the 1.1 million code points,
    and looking up all of them takes about 0.4 s. ``known[c]`` says c was looked up.
    """

    def __init__(self) -> None:
        self.word = np.zeros(_CODE_POINTS, dtype=np.bool_)
        self.known = np.zeros(_CODE_POINTS, dtype=np.bool_)
        self._lock = threading.Lock()
        self.learn(range(128))

    def learn(self, code_points: Iterable[int]) -> None:
        with self._lock:
            for c in code_points:
                c = int(c)
                if not self.known[c]:
                    self.word[c] = chr(c).isalnum() or c == 0x5F
                    self.known[c] = True


@functools.cache
def word_chars() -> WordChars:
    """The process's :class:`WordChars` (it only grows)."""
    return WordChars()


def fold_non_ascii(text: str, starts: np.ndarray, ends: np.ndarray, cache: dict) -> str:
    """``fold_light(text)`` but for the case of ASCII letters outside ``[starts, ends)``.

    The spans cover every non-ASCII run with the character before it. An ASCII
    character starts a normalization segment (it never composes with what precedes
    it) and folds to ``str.lower()``, so folding each span on its own and lowering
    the ASCII in between (the word kernel does that) gives ``fold_light(text)``.
    Spans repeat ("é", "—"), so their folds are cached.
    """
    pieces = []
    last = 0
    for a, b in zip(starts.tolist(), ends.tolist()):
        span = text[a:b]
        folded = cache.get(span)
        if folded is None:
            folded = cache[span] = fold_light(span)
        pieces += (text[last:a], folded)
        last = b
    pieces.append(text[last:])
    return "".join(pieces)


@dataclass(frozen=True)
class ShingleOptions:
    """How documents become shingle sets.

    kind: "char" (k consecutive characters) or "word" (n consecutive tokens).
    size: k or n.
    hash_bits: 32 or 64; 32 halves memory, collisions stay negligible below ~10^8 shingles.
    normalize: text -> text before tokenizing (default: NFKC, casefold, collapse spaces);
        None keeps text as is.
    tokenize: text -> list of tokens for kind "word" (default: \\w+ runs). Code
        tokenizers and cleaning chains plug in here.
    seed: seeds the shingle hash; sets built with different seeds are not comparable.
    """

    kind: str = "char"
    size: int = 5
    hash_bits: int = 32
    normalize: Callable[[str], str] | None = normalize_light
    tokenize: Callable[[str], list[str]] | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in SHINGLE_KINDS:
            raise ValueError(f"shingle kind must be one of {SHINGLE_KINDS}, got {self.kind!r}")
        if not isinstance(self.size, int) or self.size < 1:
            raise ValueError(f"shingle size must be a positive integer, got {self.size!r}")
        if self.hash_bits not in HASH_BITS:
            raise ValueError(f"hash_bits must be 32 or 64, got {self.hash_bits!r}")


def shingle(texts: Sequence[str], options: ShingleOptions | None = None) -> ShingleSets:
    """Shingle sets of ``texts``, one per text, in order."""
    options = options or ShingleOptions()
    token_values, token_offsets = token_hashes(texts, options)
    return shingle_token_arrays(
        token_values, token_offsets, options.size, options.hash_bits, options.seed
    )


def token_hashes(texts: Sequence[str], options: ShingleOptions):
    """The tokens of each text as :func:`shingle` reads them, before any n-gram: word
    tokens hashed to uint64, or code points (uint32) for ``kind="char"``; (values,
    offsets int64[n + 1]) in CSR form, in order."""
    normalize = options.normalize
    fast_words = options.kind == "word" and options.tokenize in (None, word_tokens)
    if fast_words and normalize in (None, normalize_light, fold_light):
        # the kernel folds as it tokenizes; whitespace collapsing never changes \w+ runs
        token_values, token_offsets = word_token_hashes(texts, options.seed,
                                                        fold=normalize is not None)
    elif options.kind == "char" and normalize is normalize_light:
        token_values, token_offsets = normalized_code_points(texts)
    else:
        if normalize is not None:
            texts = [normalize(t) for t in texts]
        if options.kind == "char":
            token_values, token_offsets = _code_points(texts)  # uint32: no 8-byte copy
        else:
            tokenize = options.tokenize or word_tokens
            # a tokenizer that hashes its own tokens (the Go lexer kernel) makes no string
            # per token: same arrays as hash_tokens of its token lists
            token_hashes = getattr(tokenize, "token_hashes", None)
            token_values, token_offsets = (
                token_hashes(texts, options.seed) if token_hashes is not None
                else hash_tokens([tokenize(t) for t in texts], options.seed))
    return token_values, token_offsets


def hash_tokens(token_lists: Sequence[Sequence[str]], seed: int = 0):
    """Hash every token of every document in bulk.

    Returns (token_hashes uint64[T], offsets int64[n + 1]) in CSR form. Python
    joins each document's tokens once; the per-token hashing runs in numba over
    the code points of the joined text.
    """
    doc_counts = np.fromiter((len(toks) for toks in token_lists), dtype=np.int64,
                             count=len(token_lists))
    doc_offsets = np.zeros(len(token_lists) + 1, dtype=np.int64)
    np.cumsum(doc_counts, out=doc_offsets[1:])
    flat = [tok for toks in token_lists for tok in toks]
    lengths = np.fromiter(map(len, flat), dtype=np.int64, count=len(flat))
    tok_offsets = np.zeros(len(flat) + 1, dtype=np.int64)
    np.cumsum(lengths, out=tok_offsets[1:])
    code_points = np.frombuffer("".join(flat).encode("utf-32-le"), dtype=np.uint32)
    hashes = _hash_segments(code_points, tok_offsets, np.uint64(seed & 0xFFFFFFFFFFFFFFFF))
    return hashes, doc_offsets


def shingle_token_arrays(
    token_values: np.ndarray,
    token_offsets: np.ndarray,
    size: int,
    hash_bits: int = 32,
    seed: int = 0,
) -> ShingleSets:
    """Shingle sets from tokens already as integers (CSR): n-gram hash, sort, unique."""
    seed64 = np.uint64(seed & 0xFFFFFFFFFFFFFFFF)
    if token_values.dtype != np.uint32:  # code points stay 4 bytes; the kernel widens
        token_values = token_values.astype(np.uint64, copy=False)
    lengths = np.diff(token_offsets)
    counts = np.where(lengths < size, np.minimum(lengths, 1), lengths - size + 1)
    raw_offsets = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=raw_offsets[1:])
    # 32-bit shingles keep the high half of each 64-bit hash
    raw = np.empty(int(raw_offsets[-1]), dtype=np.uint32 if hash_bits == 32 else np.uint64)
    _ngram_hashes(token_values, token_offsets, raw_offsets, size, seed64,
                  np.uint64(64 - hash_bits), raw)
    counts = sort_unique_segments(raw, raw_offsets)
    offsets = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    values = np.empty(int(offsets[-1]), dtype=raw.dtype)
    compact_segments(raw, raw_offsets, offsets, values)
    return ShingleSets(offsets, values)


def window_hashes(token_values: np.ndarray, token_offsets: np.ndarray, size: int,
                  seed: int = 0, whole_short: bool = True):
    """The 64-bit hash of every window of ``size`` consecutive tokens, in place order, not
    sorted nor made unique: (uint64[W], int64[n + 1]) in CSR form; window s of document d
    starts at its token s. The hashes are :func:`shingle_token_arrays`' 64-bit shingles.
    ``whole_short``: a document of fewer tokens (not none) has one window of all it has,
    as in a shingle set; False: it has none."""
    seed64 = np.uint64(seed & 0xFFFFFFFFFFFFFFFF)
    if token_values.dtype != np.uint32:
        token_values = token_values.astype(np.uint64, copy=False)
    lengths = np.diff(token_offsets)
    full = np.maximum(lengths - size + 1, 0)
    counts = np.where(lengths < size, np.minimum(lengths, 1), full) if whole_short else full
    offsets = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    out = np.empty(int(offsets[-1]), dtype=np.uint64)
    _ngram_hashes(token_values, token_offsets, offsets, size, seed64, np.uint64(0), out)
    return out, offsets


# Up to this many segments are sorted one numpy call each (10 ms at most): a small input
# then never compiles numba's sort, 2.4 s on a cold cache.
FEW_SEGMENTS = 10_000


def sort_unique_segments(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Sort each CSR segment of ``values`` in place; int64[n]: distinct values in each.

    Long segments (shingles of a document) and few segments go to numpy's sort,
    vectorized and several times faster than numba's, at one Python step per segment;
    many short ones (item sets) stay in one numba loop.
    """
    n = offsets.size - 1
    if n > FEW_SEGMENTS and values.size < 64 * n:
        _sort_segments(values, offsets)
        return _distinct_counts(values, offsets)
    bounds = offsets.tolist()
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        values[lo:hi].sort()
    return _distinct_counts(values, offsets)


def _code_points(texts: Sequence[str]):
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    code_points = np.frombuffer("".join(texts).encode("utf-32-le"), dtype=np.uint32)
    return code_points, offsets


def normalized_code_points(texts: Sequence[str]):
    """The code points of each ``normalize_light(text)``: (uint32[C], int64[n + 1]) in CSR.

    Python folds only the texts that are not ASCII (NFKC, case folding, NFC); a kernel
    decodes the UTF-8 of all of them, lowers ASCII letters and collapses whitespace
    (``str.split``'s: every ``str.isspace`` character) into one space, trimmed at both
    ends, instead of three Python passes a text.
    """
    encoded = [(t if t.isascii() else fold_light(t)).encode("utf-8", "surrogatepass")
               for t in texts]
    data, doc_offsets = utf8_buffer(encoded)
    return _collapsed_code_points(data, doc_offsets, _ASCII_FOLD, _space_table())


@functools.cache
def _space_table() -> np.ndarray:
    """bool per code point up to U+3000, the last one ``str.isspace`` holds true."""
    return np.array([chr(c).isspace() for c in range(_LAST_SPACE + 1)], dtype=np.bool_)


def word_token_hashes(texts: Sequence[str], seed: int = 0, fold: bool = False):
    """The ``\\w+`` tokens of each text, hashed: (uint64[T], int64[n + 1]) in CSR form.

    Equal to ``hash_tokens([word_tokens(t) for t in texts], seed)``, or with ``fold``
    to the same of ``fold_light(t)``, with no Python per token: the texts go to the
    kernel as one UTF-8 buffer (a copy for ASCII text, 4× smaller than UTF-32),
    decoded to code points as it scans, in parallel over documents. With ``fold``
    the kernel lowers ASCII letters itself; Python folds only the non-ASCII runs
    (:func:`fold_non_ascii`), which the kernel finds.
    """
    chars = word_chars()
    encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
    non_ascii = np.flatnonzero([not t.isascii() for t in texts])
    if fold and non_ascii.size:
        data, doc_offsets = utf8_buffer([encoded[d] for d in non_ascii])
        span_offsets, starts, ends = _non_ascii_spans(data, doc_offsets)
        cache = {}
        for k, d in enumerate(non_ascii.tolist()):
            lo, hi = span_offsets[k], span_offsets[k + 1]
            folded = fold_non_ascii(texts[d], starts[lo:hi], ends[lo:hi], cache)
            encoded[d] = folded.encode("utf-8", "surrogatepass")
        chars.learn(map(ord, set("".join(cache.values()))))  # all the non-ASCII there is
    data, doc_offsets = utf8_buffer(encoded)
    if non_ascii.size and not fold:
        chars.learn(_unseen_code_points(data, doc_offsets, non_ascii, chars.known))
    return _word_token_hashes(data, doc_offsets, fold, _ASCII_FOLD, chars.word,
                              np.uint64(seed & 0xFFFFFFFFFFFFFFFF))


def utf8_buffer(encoded: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Byte strings as one uint8 buffer and int64[n + 1] offsets, for the UTF-8 kernels."""
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
    doc_offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(lengths, out=doc_offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), doc_offsets


# ---------------------------------------------------------------- numba kernels

@njit(cache=True)
def _hash_segments(code_points, offsets, seed):
    n = offsets.size - 1
    out = np.empty(n, dtype=np.uint64)
    for t in range(n):
        h = mix64(seed ^ GOLDEN)
        for p in range(offsets[t], offsets[t + 1]):
            h = mix64(h + np.uint64(code_points[p]) * GOLDEN + np.uint64(1))
        out[t] = h
    return out


@njit(inline="always")
def utf8_at(data, p):
    """(code point, bytes) of the UTF-8 sequence starting at data[p] (input is valid)."""
    b0 = np.uint32(data[p])
    if b0 < 0x80:
        return b0, 1
    if b0 < 0xE0:
        return ((b0 & 0x1F) << 6) | (np.uint32(data[p + 1]) & 0x3F), 2
    if b0 < 0xF0:
        return (((b0 & 0x0F) << 12) | ((np.uint32(data[p + 1]) & 0x3F) << 6)
                | (np.uint32(data[p + 2]) & 0x3F)), 3
    return (((b0 & 0x07) << 18) | ((np.uint32(data[p + 1]) & 0x3F) << 12)
            | ((np.uint32(data[p + 2]) & 0x3F) << 6) | (np.uint32(data[p + 3]) & 0x3F)), 4


@sized_kernel(work=lambda data, *_: data.size)
def _unseen_code_points(data, doc_offsets, docs, learned):
    seen = np.zeros(learned.size, dtype=np.bool_)
    for k in prange(docs.size):  # racing writes all store True
        p = doc_offsets[docs[k]]
        while p < doc_offsets[docs[k] + 1]:
            cp, width = utf8_at(data, p)
            p += width
            if not learned[cp]:
                seen[cp] = True
    return np.flatnonzero(seen)


@sized_kernel(work=lambda data, *_: data.size)
def _non_ascii_spans(data, doc_offsets):
    """Per document, [start, end) in code points of each non-ASCII run and the one
    character before it (CSR: span_offsets, starts, ends)."""
    n = doc_offsets.size - 1
    counts = np.zeros(n, dtype=np.int64)
    for d in prange(n):
        c = 0
        previous_ascii = True
        for p in range(doc_offsets[d], doc_offsets[d + 1]):
            lead = data[p] >= 0xC0  # first byte of a non-ASCII character
            if lead and previous_ascii:
                c += 1
            if lead or data[p] < 0x80:
                previous_ascii = not lead
        counts[d] = c
    span_offsets = np.zeros(n + 1, dtype=np.int64)
    for d in range(n):
        span_offsets[d + 1] = span_offsets[d] + counts[d]
    starts = np.empty(span_offsets[n], dtype=np.int64)
    ends = np.empty(span_offsets[n], dtype=np.int64)
    for d in prange(n):
        k = span_offsets[d]
        index = -1  # code point index of the character at p
        inside = False
        for p in range(doc_offsets[d], doc_offsets[d + 1]):
            b = data[p]
            if b >= 0x80 and b < 0xC0:
                continue  # continuation byte
            index += 1
            if b >= 0xC0 and not inside:
                starts[k] = max(index - 1, 0)
                inside = True
            elif b < 0x80 and inside:
                ends[k] = index
                k += 1
                inside = False
        if inside:
            ends[k] = index + 1
    return span_offsets, starts, ends


@njit(inline="always")
def _collapse_document(data, lo, hi, ascii_fold, is_space, out, w, write):
    """Code points of data[lo:hi] with ASCII letters lowered and each inner whitespace run
    one space, trimmed; written from out[w] when ``write``. Returns how many."""
    last_space = is_space.size - 1
    count = 0
    started = False
    pending = False
    p = lo
    while p < hi:
        cp, width = utf8_at(data, p)
        p += width
        if cp <= last_space and is_space[cp]:
            pending = started
            continue
        if pending:
            if write:
                out[w + count] = 0x20
            count += 1
            pending = False
        if write:
            out[w + count] = ascii_fold[cp] if cp < 0x80 else cp
        count += 1
        started = True
    return count


@sized_kernel(work=lambda data, *_: data.size)
def _collapsed_code_points(data, doc_offsets, ascii_fold, is_space):
    n = doc_offsets.size - 1
    none = np.empty(0, dtype=np.uint32)
    counts = np.zeros(n, dtype=np.int64)
    for d in prange(n):  # pass 1: how many code points each document keeps
        counts[d] = _collapse_document(data, doc_offsets[d], doc_offsets[d + 1], ascii_fold,
                                       is_space, none, 0, False)
    offsets = np.zeros(n + 1, dtype=np.int64)
    for d in range(n):
        offsets[d + 1] = offsets[d] + counts[d]
    out = np.empty(offsets[n], dtype=np.uint32)
    for d in prange(n):  # pass 2: write them
        _collapse_document(data, doc_offsets[d], doc_offsets[d + 1], ascii_fold, is_space,
                           out, offsets[d], True)
    return out, offsets


@sized_kernel(work=lambda data, *_: data.size)
def _word_token_hashes(data, doc_offsets, fold, ascii_fold, is_word, seed):
    n = doc_offsets.size - 1
    counts = np.zeros(n, dtype=np.int64)
    for d in prange(n):  # pass 1: tokens per document
        c = 0
        inside = False
        p = doc_offsets[d]
        end = doc_offsets[d + 1]
        while p < end:
            if data[p] < 0x80:
                w = is_word[data[p]]
                p += 1
            else:
                cp, width = utf8_at(data, p)
                w = is_word[cp]
                p += width
            if w and not inside:
                c += 1
            inside = w
        counts[d] = c
    token_offsets = np.zeros(n + 1, dtype=np.int64)
    for d in range(n):
        token_offsets[d + 1] = token_offsets[d] + counts[d]
    out = np.empty(token_offsets[n], dtype=np.uint64)
    start = mix64(seed ^ GOLDEN)  # the token hash of _hash_segments
    for d in prange(n):  # pass 2: hash each run as it ends
        t = token_offsets[d]
        h = start
        inside = False
        p = doc_offsets[d]
        end = doc_offsets[d + 1]
        while p < end:
            if data[p] < 0x80:
                cp = ascii_fold[data[p]] if fold else np.uint32(data[p])
                p += 1
            else:
                cp, width = utf8_at(data, p)
                p += width
            if is_word[cp]:
                h = mix64(h + np.uint64(cp) * GOLDEN + np.uint64(1))
                inside = True
            elif inside:
                out[t] = h
                t += 1
                h = start
                inside = False
        if inside:
            out[t] = h
    return out, token_offsets


@sized_kernel(work=lambda *args: args[-1].size)
def _ngram_hashes(tokens, offsets, out_offsets, size, seed, shift, out):
    start = mix64(seed ^ np.uint64(0x632BE59BD9B4E019))
    for d in prange(offsets.size - 1):
        lo = offsets[d]
        width = min(size, offsets[d + 1] - lo)
        for s in range(out_offsets[d + 1] - out_offsets[d]):
            h = start
            for p in range(lo + s, lo + s + width):
                h = mix64(h + np.uint64(tokens[p]) * GOLDEN + np.uint64(1))
            out[out_offsets[d] + s] = h >> shift


@sized_kernel(work=lambda values, *_: values.size)
def _sort_segments(values, offsets):
    for d in prange(offsets.size - 1):
        lo, hi = offsets[d], offsets[d + 1]
        if hi > lo:
            values[lo:hi] = np.sort(values[lo:hi])


@njit(cache=True)
def _distinct_counts(sorted_values, offsets):
    n = offsets.size - 1
    counts = np.zeros(n, dtype=np.int64)
    for d in range(n):
        lo, hi = offsets[d], offsets[d + 1]
        if hi > lo:
            c = 1
            for p in range(lo + 1, hi):
                if sorted_values[p] != sorted_values[p - 1]:
                    c += 1
            counts[d] = c
    return counts


@sized_kernel(work=lambda values, *_: values.size)
def compact_segments(values, offsets, new_offsets, out):
    n = offsets.size - 1
    for d in prange(n):
        lo, hi = offsets[d], offsets[d + 1]
        if hi == lo:
            continue
        w = new_offsets[d]
        out[w] = values[lo]
        w += 1
        for p in range(lo + 1, hi):
            if values[p] != values[p - 1]:
                out[w] = values[p]
                w += 1


@sized_kernel(work=lambda *args: args[-1].size)
def _gather_segments(offsets, values, index, new_offsets, out):
    for k in prange(index.size):
        d = index[k]
        lo = offsets[d]
        w = new_offsets[k]
        for p in range(offsets[d + 1] - lo):
            out[w + p] = values[lo + p]


def set_fingerprints(sets: ShingleSets, seed: int = 0) -> np.ndarray:
    """uint64[n]: a hash of each whole set, equal for identical sets.

    Different sets collide with probability 2^-64 per pair; callers that must be
    exact confirm a match with the sets themselves.
    """
    out = np.empty(sets.n, dtype=np.uint64)
    _fingerprints(sets.offsets, sets.values, np.uint64(seed & 0xFFFFFFFFFFFFFFFF), out)
    return out


@sized_kernel(work=lambda offsets, values, *_: values.size)
def _fingerprints(offsets, values, seed, out):
    for d in prange(offsets.size - 1):
        h = mix64(seed ^ np.uint64(offsets[d + 1] - offsets[d]))
        for p in range(offsets[d], offsets[d + 1]):
            h = mix64(h + np.uint64(values[p]) * GOLDEN + np.uint64(1))
        out[d] = h
