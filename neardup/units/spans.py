"""Repeated token spans: exact repeated sequences of at least L tokens, found by sorting.

Lee et al. 2022 ("Deduplicating Training Data Makes Language Models Better") remove every
repeated substring of at least L tokens, found with a suffix array over the token ids.
This module finds the same windows by sorting instead: every window of L consecutive
tokens inside one document gets a 64-bit rolling hash of its token ids; the windows are
sorted by (hash, position), packed in one 64-bit key (the hash's high bits over the
position); windows of one hash are split into exact classes by
comparing their token ids (a hash only proposes, the ids decide); the classes' windows
are then merged into removal ranges and, for a listing, into maximal repeated spans.

Equality is token-id equality: two windows are the same iff their L token ids are equal,
position by position. The caller makes ids collision-free (interned tokens, or 64-bit
hashes whose collisions it accepts); no text is compared here. Hash collisions between
windows cost time only (they are resolved by comparing ids), never a wrong answer.

Definitions (``T`` tokens in corpus order: document by document, in input order, and
position by position inside a document; a window is named by its first token's global
index ``g``, and windows never cross a document's end):

- A window's *class* is the set of windows with the same id sequence; its
  *representative* is the class's smallest ``g`` (its first occurrence in corpus order).
- ``keep="first"``: a window is *removed* iff its sequence occurs at an earlier start
  position in corpus order (an earlier document, or an earlier position in the same
  document), i.e. iff it is not its class's representative. The earlier occurrence may
  overlap it: in one document ``a a a a a`` with L = 2 the windows at 1, 2 and 3 repeat
  the one at 0, so tokens 1-4 go and token 0 stays.
- ``keep="none"``: a window is removed iff its class has at least two windows (as C4
  removed every copy).
- A token is removed iff some removed window covers it. A token covered by a kept
  first occurrence can still go when another removed window covers it.
- Removal ranges: each maximal run of removed tokens of one document becomes the byte
  range [start of its first token, end of its last token): cuts fall on token
  boundaries, and the bytes between tokens of a run go with it.
- Repeated spans (the listing): repeated classes (two or more windows) are chained:
  class C continues into class C' iff C' = {g + 1 : g in C}, i.e. every occurrence
  extends by one token into the next window and nothing else shares that next window.
  A maximal chain is one row: its first occurrence (the head class's representative
  through the last class's representative + L tokens), its count (windows in each of
  its classes: occurrences, overlapping ones included) and the distinct documents they
  lie in. Every repeated class lies in exactly one row.

Memory: besides the caller's columns, a call holds one flag a token (removed or not),
one 8-byte key a window of the hash partition being sorted (``passes`` partitions,
hashed again each pass, sorted one after the other: the windows' share is 8 / passes
bytes a token) and 24 bytes for each window of a repeated class (position,
representative, class size), which only boilerplate-heavy corpora make large. Under a
memory limit (:mod:`neardup.units.span_runs`) the same steps run over columns on disk:
:func:`repeated_windows` per hash partition over memory-mapped token ids, and
:func:`covered_tokens`, :func:`token_runs` and :func:`chain_heads` a chunk of documents
(or the repeated classes) at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._core.hashing import mix64
from .._core.jit import njit, prange
from .._core.kernels import sized_kernel
from ..shingling import check_csr

KEEP_POLICIES = ("first", "none")

_BASE = np.uint64(0x100000001B3)  # odd multiplier of the polynomial rolling hash


@dataclass(frozen=True)
class Ragged:
    """One value array per document in CSR form: ``values[offsets[d]:offsets[d + 1]]``."""

    offsets: np.ndarray  # int64[n + 1], from 0, nondecreasing
    values: np.ndarray

    def __post_init__(self) -> None:
        check_csr(self.offsets, self.values, from_zero=True)

    @property
    def n(self) -> int:
        return self.offsets.size - 1

    @staticmethod
    def of(columns) -> Ragged:
        """A :class:`Ragged` from itself or an ``(offsets, values)`` pair."""
        if isinstance(columns, Ragged):
            return columns
        offsets, values = columns
        return Ragged(np.asarray(offsets, dtype=np.int64), np.asarray(values))


@dataclass(frozen=True)
class RepeatedSpans:
    """What :func:`repeated_spans` found.

    ``remove_starts/remove_ends[remove_offsets[d]:remove_offsets[d + 1]]`` are document
    d's removed byte ranges [start, end): sorted, non-overlapping, separated by at least
    one kept token. The ``span_*`` columns list the repeated spans (module docstring), one
    row per maximal chain, in order of first occurrence.
    """

    remove_offsets: np.ndarray  # int64[n_docs + 1]
    remove_starts: np.ndarray  # int64 byte offsets in each document's text
    remove_ends: np.ndarray  # int64
    span_doc: np.ndarray  # int64: the document of the first occurrence
    span_start: np.ndarray  # int64: its byte range in that document
    span_end: np.ndarray  # int64
    span_tokens: np.ndarray  # int64: its length in tokens
    span_count: np.ndarray  # int64: occurrences (overlapping ones included)
    span_documents: np.ndarray  # int64: distinct documents the occurrences lie in
    tokens_removed: int  # tokens covered by a removed window
    bytes_removed: int  # sum of remove_ends - remove_starts
    windows: int  # windows of min_tokens tokens in the corpus
    windows_removed: int  # of which removed under the keep policy

    @property
    def n_docs(self) -> int:
        return self.remove_offsets.size - 1


def repeated_spans(token_starts, token_ends, token_ids, min_tokens: int, keep: str = "first",
                   passes: int = 1) -> RepeatedSpans:
    """Remove repeated windows of ``min_tokens`` tokens; list the maximal repeated spans.

    ``token_starts``, ``token_ends`` and ``token_ids`` are :class:`Ragged` (or
    ``(offsets, values)`` pairs) with one offsets array: per document in input order, each
    token's start and end byte offset in that document's UTF-8 text (sorted,
    non-overlapping) and its 64-bit id. Exact: windows are equal iff their ids are equal
    (module docstring for the definitions). ``passes`` splits the sort into that many hash
    partitions (same result, less peak memory). Deterministic: the result depends on the
    inputs only.
    """
    starts, ends, ids = (Ragged.of(c) for c in (token_starts, token_ends, token_ids))
    _check(starts, ends, ids, min_tokens, keep, passes)
    offsets = starts.offsets
    length = int(min_tokens)
    values = ids.values if ids.values.dtype.itemsize == 8 else ids.values.astype(np.int64)
    ids_u64 = np.ascontiguousarray(values).view(np.uint64)
    found = [repeated_windows(offsets, ids_u64, length, passes, part)
             for part in range(passes)]
    positions, reps, counts = (np.concatenate(column) for column in zip(*found, strict=True))
    order = np.argsort(positions)  # positions are unique: any sort gives one order
    positions, reps, counts = positions[order], reps[order], counts[order]
    if keep == "first":
        removed_windows = positions[reps != positions]
    else:
        removed_windows = positions
    run_offsets, remove_starts, remove_ends, covered = removed_ranges(
        offsets, starts.values, ends.values, removed_windows, length)
    spans = _chains(positions, reps, counts, offsets, length, starts.values, ends.values)
    return RepeatedSpans(run_offsets, remove_starts, remove_ends, *spans,
                         tokens_removed=int(covered.sum()),
                         bytes_removed=int((remove_ends - remove_starts).sum()),
                         windows=int(np.maximum(np.diff(offsets) - length + 1, 0).sum()),
                         windows_removed=int(removed_windows.size))


def removed_ranges(offsets, token_starts, token_ends, removed_windows, min_tokens: int):
    """The removal ranges of the removed windows (module docstring): per document (CSR
    ``offsets`` over the tokens), each maximal run of covered tokens as the bytes [start
    of its first token, end of its last). ``removed_windows``: the windows' first tokens
    (indices into the token arrays), ascending. (run offsets int64[n + 1], starts, ends,
    tokens covered per document int64[n])."""
    offsets = np.asarray(offsets, np.int64)
    removed = covered_tokens(np.asarray(removed_windows, np.int64), offsets[-1], int(min_tokens))
    run_offsets, run_first, run_last = token_runs(removed, offsets)
    covered = np.zeros(offsets[-1] + 1, np.int64)
    np.cumsum(removed, out=covered[1:])
    return (run_offsets, np.asarray(token_starts)[run_first].astype(np.int64),
            np.asarray(token_ends)[run_last].astype(np.int64),
            covered[offsets[1:]] - covered[offsets[:-1]])


def window_hashes(offsets, ids, min_tokens: int):
    """Every window of ``min_tokens`` tokens inside a document (CSR ``offsets`` over the
    uint64 token ``ids``): (its document, its first token's position in that document,
    its 64-bit rolling hash), in document then position order. The hash is the one the
    sort above keys on; equal windows have equal hashes, and a hash only proposes."""
    length = int(min_tokens)
    power = np.uint64(pow(int(_BASE), length, 1 << 64))
    return _window_hashes(np.asarray(offsets, np.int64),
                          np.ascontiguousarray(ids).view(np.uint64), length, power)


@njit(cache=True)
def _window_hashes(offsets, ids, length, power):
    n = offsets.size - 1
    total = 0
    for d in range(n):
        total += max(offsets[d + 1] - offsets[d] - length + 1, 0)
    doc = np.empty(total, np.int64)
    position = np.empty(total, np.int64)
    hashes = np.empty(total, np.uint64)
    k = 0
    for d in range(n):
        first = offsets[d]
        h = np.uint64(0)
        for t in range(first, offsets[d + 1]):
            h = h * _BASE + mix64(ids[t])
            if t - length >= first:
                h -= power * mix64(ids[t - length])
            if t - first + 1 >= length:
                doc[k] = d
                position[k] = t - length + 1 - first
                hashes[k] = h
                k += 1
    return doc, position, hashes


def _check(starts: Ragged, ends: Ragged, ids: Ragged, min_tokens, keep, passes) -> None:
    if keep not in KEEP_POLICIES:
        raise ValueError(f"keep must be one of {', '.join(KEEP_POLICIES)}, not {keep!r}")
    if isinstance(min_tokens, bool) or not isinstance(min_tokens, (int, np.integer)) \
            or min_tokens < 1:
        raise ValueError(f"min_tokens must be an integer of at least 1, not {min_tokens!r}")
    if isinstance(passes, bool) or not isinstance(passes, (int, np.integer)) or passes < 1:
        raise ValueError(f"passes must be an integer of at least 1, not {passes!r}")
    if not (np.array_equal(starts.offsets, ends.offsets)
            and np.array_equal(starts.offsets, ids.offsets)):
        raise ValueError("token_starts, token_ends and token_ids must share one offsets array")
    if ids.values.dtype.kind not in "iu":
        raise ValueError(f"token ids must be integers, not {ids.values.dtype}")
    if starts.values.dtype.kind not in "iu" or ends.values.dtype.kind not in "iu":
        raise ValueError("token starts and ends must be integer byte offsets")
    problem = _token_order(starts.offsets, starts.values, ends.values)
    if problem == 1:
        raise ValueError("each token must have 0 <= start <= end")
    if problem == 2:
        raise ValueError("tokens must be sorted and non-overlapping within each document")


@njit(cache=True)
def _token_order(offsets, starts, ends):
    """0 if every token has 0 <= start <= end and, within its document, starts where the
    one before it ended or later; else 1 (a bad token) or 2 (out of order)."""
    for d in range(offsets.size - 1):
        for t in range(offsets[d], offsets[d + 1]):
            if starts[t] < 0 or starts[t] > ends[t]:
                return 1
            if t > offsets[d] and starts[t] < ends[t - 1]:
                return 2
    return 0


def repeated_windows(offsets, ids, length: int, passes: int, part: int):
    """The windows of hash partition ``part`` of ``passes`` whose class has two windows
    or more: their positions, their classes' representatives and sizes (each int64, by
    hash). ``offsets``: int64[n_docs + 1] into ``ids`` (uint64, one a token; a
    memory-mapped column will do: it is read, never copied). Memory: 8 bytes a window of
    the partition, and 32 for each of its windows that shares a hash."""
    power = np.uint64(pow(int(_BASE), length, 1 << 64))
    shift = np.uint64(max(ids.size.bit_length(), 1))  # bits a window position needs
    keys = _partition_keys(offsets, ids, length, power, shift, np.uint64(passes),
                           np.uint64(part))
    keys.sort()
    bounds, members = _hash_groups(keys, shift)
    del keys
    reps, counts = _exact_classes(bounds, members, ids, length)
    repeated = counts >= 2
    return members[repeated], reps[repeated], counts[repeated]


@sized_kernel(work=lambda offsets, ids, *_: ids.size)
def _partition_keys(offsets, ids, length, power, shift, passes, part):
    """One key per window in hash partition ``part`` of ``passes``: the hash's bits
    above ``shift`` over the window's position (so keys of one hash sort by position).
    Dropping hash bits only adds candidates, which the id comparison splits. A window's
    hash is the sum of mix64(id) * BASE^(L-1-i) over its tokens, mod 2^64, rolled."""
    n = offsets.size - 1
    counts = np.zeros(n, dtype=np.int64)
    for d in prange(n):  # pass 1: the partition's windows per document
        first = offsets[d]
        if passes == np.uint64(1):  # all of them
            counts[d] = max(offsets[d + 1] - first - length + 1, 0)
            continue
        h = np.uint64(0)
        c = 0
        for t in range(first, offsets[d + 1]):
            h = h * _BASE + mix64(ids[t])
            if t - length >= first:
                h -= power * mix64(ids[t - length])
            if t - first + 1 >= length and _partition(h, passes) == part:
                c += 1
        counts[d] = c
    starts = np.zeros(n + 1, dtype=np.int64)
    for d in range(n):
        starts[d + 1] = starts[d] + counts[d]
    keys = np.empty(starts[n], dtype=np.uint64)
    for d in prange(n):  # pass 2: their keys
        first = offsets[d]
        h = np.uint64(0)
        k = starts[d]
        for t in range(first, offsets[d + 1]):
            h = h * _BASE + mix64(ids[t])
            if t - length >= first:
                h -= power * mix64(ids[t - length])
            if t - first + 1 >= length and _partition(h, passes) == part:
                keys[k] = ((h >> shift) << shift) | np.uint64(t - length + 1)
                k += 1
    return keys


@njit(inline="always")
def _partition(h, passes):
    """Which of ``passes`` partitions a hash falls in: its low 32 bits scaled (no division)."""
    return ((h & np.uint64(0xFFFFFFFF)) * passes) >> np.uint64(32)


@njit(cache=True)
def _hash_groups(keys, shift):
    """Of sorted keys, the runs of two or more with one hash: ``members[bounds[k]:
    bounds[k + 1]]`` are run k's window positions, ascending."""
    mask = (np.uint64(1) << shift) - np.uint64(1)
    n_groups = 0
    n_members = 0
    i = 0
    while i < keys.size:  # pass 1: sizes
        j = i + 1
        while j < keys.size and (keys[j] >> shift) == (keys[i] >> shift):
            j += 1
        if j - i >= 2:
            n_groups += 1
            n_members += j - i
        i = j
    bounds = np.empty(n_groups + 1, dtype=np.int64)
    members = np.empty(n_members, dtype=np.int64)
    bounds[0] = 0
    g = 0
    m = 0
    i = 0
    while i < keys.size:  # pass 2: fill
        j = i + 1
        while j < keys.size and (keys[j] >> shift) == (keys[i] >> shift):
            j += 1
        if j - i >= 2:
            for k in range(i, j):
                members[m] = np.int64(keys[k] & mask)
                m += 1
            g += 1
            bounds[g] = m
        i = j
    return bounds, members


@sized_kernel(work=lambda bounds, members, *_: members.size)
def _exact_classes(bounds, members, ids, length):
    """Split each group of one hash into classes of equal id sequences: per member, its
    class's representative (first occurrence) and size. ``firsts[a:]`` holds the group's
    representatives, first occurrence first, so a member is compared with each
    representative once at most (a hash collision adds a class, never a rescan)."""
    reps = np.empty(members.size, dtype=np.int64)
    counts = np.zeros(members.size, dtype=np.int64)
    slots = np.empty(members.size, dtype=np.int64)
    firsts = np.empty(members.size, dtype=np.int64)
    for k in prange(bounds.size - 1):
        a = bounds[k]
        n_classes = 0
        for i in range(a, bounds[k + 1]):
            p = members[i]
            found = -1
            for j in range(n_classes):
                q = members[firsts[a + j]]
                same = True
                for s in range(length):
                    if ids[p + s] != ids[q + s]:
                        same = False
                        break
                if same:
                    found = firsts[a + j]
                    break
            if found < 0:
                firsts[a + n_classes] = i
                n_classes += 1
                found = i
            slots[i] = found
            counts[found] += 1
        for i in range(a, bounds[k + 1]):  # a representative's count is its own slot's
            reps[i] = members[slots[i]]
            counts[i] = counts[slots[i]]
    return reps, counts


@njit(cache=True)
def covered_tokens(removed_windows, n_tokens, length):
    """bool per token: covered by a removed window (``removed_windows``: their first
    tokens, ascending; windows end inside their document)."""
    removed = np.zeros(n_tokens, dtype=np.bool_)
    reach = 0  # tokens before this one are covered as far as the windows seen reach
    for k in range(removed_windows.size):
        g = removed_windows[k]
        for t in range(max(g, reach), g + length):
            removed[t] = True
        reach = max(reach, g + length)
    return removed


@njit(cache=True)
def token_runs(removed, offsets):
    """Per document (CSR), the first and last token of each maximal run of removed ones."""
    n = offsets.size - 1
    run_offsets = np.zeros(n + 1, dtype=np.int64)
    for d in range(n):  # pass 1: runs per document
        c = 0
        for t in range(offsets[d], offsets[d + 1]):
            if removed[t] and (t == offsets[d] or not removed[t - 1]):
                c += 1
        run_offsets[d + 1] = run_offsets[d] + c
    first = np.empty(run_offsets[n], dtype=np.int64)
    last = np.empty(run_offsets[n], dtype=np.int64)
    k = 0
    for d in range(n):  # pass 2: their ends
        for t in range(offsets[d], offsets[d + 1]):
            if removed[t] and (t == offsets[d] or not removed[t - 1]):
                first[k] = t
            if removed[t] and (t == offsets[d + 1] - 1 or not removed[t + 1]):
                last[k] = t
                k += 1
    return run_offsets, first, last


def _chains(positions, reps, counts, offsets, length, token_starts, token_ends):
    """The repeated spans: maximal chains of repeated classes (module docstring).

    ``positions`` (ascending), ``reps`` and ``counts``: every window of a repeated class,
    its class's representative and size."""
    if positions.size == 0:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty, empty, empty, empty
    classes = positions[reps == positions]  # the representatives, ascending
    slot = np.searchsorted(classes, reps)
    following = positions + 1
    at = np.minimum(np.searchsorted(positions, following), positions.size - 1)
    member_doc = np.searchsorted(offsets, positions, side="right") - 1
    # a window extends iff the next window is in its document, repeated, in the class
    # of the next representative and as large (then the shifted class is that class)
    extends = ((positions[at] == following) & (following + length <= offsets[member_doc + 1])
               & (reps[at] == reps + 1) & (counts[at] == counts))
    linked = np.ones(classes.size, dtype=bool)
    linked[slot[~extends]] = False
    heads, last = chain_heads(classes, linked)
    at_head = np.searchsorted(positions, heads)
    documents = _documents_per_class(slot, member_doc, classes.size)
    return (member_doc[at_head], token_starts[heads].astype(np.int64),
            token_ends[last + length - 1].astype(np.int64), last - heads + length,
            counts[at_head], documents[np.searchsorted(classes, heads)])


def chain_heads(classes: np.ndarray, linked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(heads, last): the maximal chains of repeated classes, by representative.

    ``classes``: the repeated classes' representatives, ascending; ``linked``: bool per
    class, every window of it extends into the class of the next representative (then
    that class is ``classes + 1``). A head is a class no linked class precedes; ``last``
    is its chain's last class (the first one not linked, from the head on)."""
    has_predecessor = np.zeros(classes.size, dtype=bool)
    has_predecessor[np.searchsorted(classes, classes[linked] + 1)] = True
    heads = classes[~has_predecessor]
    chain_ends = classes[~linked]
    return heads, chain_ends[np.searchsorted(chain_ends, heads)]


@njit(cache=True)
def _documents_per_class(slot, member_doc, n_classes):
    """Per class, how many distinct documents its windows lie in (members ascend, so one
    class's documents come in nondecreasing order)."""
    documents = np.zeros(n_classes, dtype=np.int64)
    last_doc = np.full(n_classes, -1, dtype=np.int64)
    for i in range(slot.size):
        if last_doc[slot[i]] != member_doc[i]:
            last_doc[slot[i]] = member_doc[i]
            documents[slot[i]] += 1
    return documents
