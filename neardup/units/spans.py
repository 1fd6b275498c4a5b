"""Repeated token spans: exact repeated sequences of at least L tokens, found by sorting.

Lee et al. 2022 ("Deduplicating Training Data Makes Language Models Better") remove every
repeated substring of at least L tokens, found with a suffix array over the token ids.
This module finds the same windows by sorting instead: every window of L consecutive
tokens inside one document gets a 64-bit rolling hash of its token ids; the windows are
sorted by (hash, position); windows of one hash are split into exact classes by
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

Memory: the token ids (8 bytes a token) plus per-token arrays of representatives (8),
class counts (4) and flags; the sort's working set (hash, position and order: 24 bytes a
window) is split into ``passes`` hash partitions sorted one after the other, so it is
1/passes of that. Out-of-core chunking over documents (sorted runs on disk) is not done.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from .._core.hashing import mix64
from .._core.kernels import sized_kernel

KEEP_POLICIES = ("first", "none")

_BASE = np.uint64(0x100000001B3)  # odd multiplier of the polynomial rolling hash


@dataclass(frozen=True)
class Ragged:
    """One value array per document in CSR form: ``values[offsets[d]:offsets[d + 1]]``."""

    offsets: np.ndarray  # int64[n + 1], from 0, nondecreasing
    values: np.ndarray

    def __post_init__(self) -> None:
        if self.offsets.ndim != 1 or self.offsets.size == 0:
            raise ValueError("offsets must be a 1-d array of length n + 1")
        if int(self.offsets[0]) != 0 or np.any(np.diff(self.offsets) < 0):
            raise ValueError("offsets must start at 0 and never decrease")
        if int(self.offsets[-1]) != self.values.size:
            raise ValueError(
                f"offsets end at {int(self.offsets[-1])} but there are {self.values.size} values"
            )

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
    ids_u64 = np.ascontiguousarray(ids.values).view(np.uint64) if ids.values.dtype.itemsize == 8 \
        else ids.values.astype(np.uint64)
    n_tokens = ids_u64.size
    window_starts = _window_starts(offsets, length)
    hashes = _window_hashes(offsets, ids_u64, length, np.uint64(pow(int(_BASE), length, 1 << 64)))
    rep = np.arange(n_tokens, dtype=np.int64)  # at each window start: its class's representative
    count = np.ones(n_tokens, dtype=np.int32)  # at each representative: its class's size
    for part in range(passes):
        members = window_starts if passes == 1 else \
            window_starts[hashes[window_starts] % np.uint64(passes) == np.uint64(part)]
        _classify(members, hashes, ids_u64, length, rep, count)
    del hashes
    doc_of_token = np.repeat(np.arange(offsets.size - 1, dtype=np.int64), np.diff(offsets))
    rep_w = rep[window_starts]
    if keep == "first":
        removed_windows = window_starts[rep_w != window_starts]
    else:
        removed_windows = window_starts[count[rep_w] >= 2]
    removed = _covered(removed_windows, n_tokens, length)
    remove_offsets, remove_starts, remove_ends = _ranges(removed, offsets, doc_of_token,
                                                         starts.values, ends.values)
    spans = _chains(window_starts, rep, count, doc_of_token, length, starts.values, ends.values)
    return RepeatedSpans(remove_offsets, remove_starts, remove_ends, *spans,
                         tokens_removed=int(np.count_nonzero(removed)),
                         bytes_removed=int((remove_ends - remove_starts).sum()),
                         windows=int(window_starts.size),
                         windows_removed=int(removed_windows.size))


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
    if np.any(starts.values > ends.values) or np.any(starts.values < 0):
        raise ValueError("each token must have 0 <= start <= end")
    if not _in_order(starts.offsets, starts.values, ends.values):
        raise ValueError("tokens must be sorted and non-overlapping within each document")


@nb.njit(cache=True)
def _in_order(offsets, starts, ends):
    """Within each document a token starts where the one before it ended, or later."""
    for d in range(offsets.size - 1):
        for t in range(offsets[d] + 1, offsets[d + 1]):
            if starts[t] < ends[t - 1]:
                return False
    return True


def _window_starts(offsets: np.ndarray, length: int) -> np.ndarray:
    """Global index of each window's first token, ascending (documents in order)."""
    per_doc = np.maximum(np.diff(offsets) - length + 1, 0)
    first = np.repeat(offsets[:-1], per_doc)
    before = np.zeros(per_doc.size + 1, dtype=np.int64)
    np.cumsum(per_doc, out=before[1:])
    return first + (np.arange(int(before[-1]), dtype=np.int64) - np.repeat(before[:-1], per_doc))


@sized_kernel(work=lambda offsets, ids, *_: ids.size)
def _window_hashes(offsets, ids, length, power):
    """At each window start: sum of mix64(id) * BASE^(L-1-i) over the window, mod 2^64."""
    hashes = np.zeros(ids.size, dtype=np.uint64)
    for d in nb.prange(offsets.size - 1):
        a = offsets[d]
        h = np.uint64(0)
        for t in range(a, offsets[d + 1]):
            h = h * _BASE + mix64(ids[t])
            if t - length >= a:
                h -= power * mix64(ids[t - length])
            if t - a + 1 >= length:
                hashes[t - length + 1] = h
    return hashes


def _classify(members, hashes, ids, length, rep, count) -> None:
    """Set ``rep`` and ``count`` for the classes of these windows (all of each hash).

    One sort of 64-bit keys: the hash's high bits above the window's position, so equal
    keys' high parts come in position order. Dropping hash bits only adds candidates,
    which the id comparison splits; it never merges two classes.
    """
    if members.size < 2:
        return
    shift = np.uint64(max(int(members[-1]).bit_length(), 1))
    keys = (hashes[members] >> shift << shift) | members.astype(np.uint64)
    keys.sort()
    high = keys >> shift
    shared = np.flatnonzero(high[1:] == high[:-1])  # i: sorted i and i + 1 share a hash
    if shared.size == 0:
        return
    in_group = np.zeros(keys.size, dtype=bool)
    in_group[shared] = True
    in_group[shared + 1] = True
    grouped = np.flatnonzero(in_group)
    sorted_members = (keys[grouped] & ((np.uint64(1) << shift) - np.uint64(1))).astype(np.int64)
    group_high = high[grouped]
    bounds = np.flatnonzero(np.concatenate(([True], group_high[1:] != group_high[:-1], [True])))
    _exact_classes(bounds.astype(np.int64), sorted_members, ids, length, rep, count,
                   np.empty(sorted_members.size, dtype=np.int64))


@sized_kernel(work=lambda bounds, members, *_: members.size)
def _exact_classes(bounds, members, ids, length, rep, count, scratch):
    """Split each group of one hash (``members[bounds[k]:bounds[k + 1]]``, ascending
    positions) into classes of equal id sequences; ``scratch[a:]`` holds the group's
    representatives, first occurrence first, so a member is compared with each
    representative once at most (a collision adds a class, never a rescan)."""
    for k in nb.prange(bounds.size - 1):
        a = bounds[k]
        n_reps = 0
        for i in range(a, bounds[k + 1]):
            p = members[i]
            found = -1
            for j in range(n_reps):
                q = scratch[a + j]
                same = True
                for s in range(length):
                    if ids[p + s] != ids[q + s]:
                        same = False
                        break
                if same:
                    found = q
                    break
            if found < 0:
                scratch[a + n_reps] = p
                n_reps += 1
                rep[p] = p
                count[p] = 1
            else:
                rep[p] = found
                count[found] += 1


@nb.njit(cache=True)
def _covered(removed_windows, n_tokens, length):
    """Tokens covered by a removed window (windows end inside their document)."""
    removed = np.zeros(n_tokens, dtype=np.bool_)
    reach = 0  # tokens before this one are covered as far as the windows seen reach
    for k in range(removed_windows.size):
        g = removed_windows[k]
        for t in range(max(g, reach), g + length):
            removed[t] = True
        reach = max(reach, g + length)
    return removed


def _ranges(removed, offsets, doc_of_token, token_starts, token_ends):
    """Per document, the byte range of each maximal run of removed tokens."""
    n_tokens = removed.size
    first = np.zeros(n_tokens, dtype=bool)
    first[offsets[:-1][np.diff(offsets) > 0]] = True
    last = np.zeros(n_tokens, dtype=bool)
    last[offsets[1:][np.diff(offsets) > 0] - 1] = True
    before = np.concatenate(([False], removed[:-1]))
    after = np.concatenate((removed[1:], [False]))
    run_first = np.flatnonzero(removed & (first | ~before))
    run_last = np.flatnonzero(removed & (last | ~after))
    remove_offsets = np.zeros(offsets.size, dtype=np.int64)
    np.cumsum(np.bincount(doc_of_token[run_first], minlength=offsets.size - 1),
              out=remove_offsets[1:])
    return (remove_offsets, token_starts[run_first].astype(np.int64),
            token_ends[run_last].astype(np.int64))


def _chains(window_starts, rep, count, doc_of_token, length, token_starts, token_ends):
    """The repeated spans: maximal chains of repeated classes (module docstring)."""
    n_tokens = rep.size
    rep_w = rep[window_starts]
    repeated = count[rep_w] >= 2
    members = window_starts[repeated]  # every window of a repeated class, ascending
    member_rep = rep_w[repeated]
    is_window = np.zeros(n_tokens + 1, dtype=bool)
    is_window[window_starts] = True
    following = members + 1
    # a member extends iff the next window is in its document and in the shifted class
    extends = is_window[following] & (doc_of_token[np.minimum(following, n_tokens - 1)]
                                      == doc_of_token[members])
    following = np.minimum(following, n_tokens - 1)
    shifted = np.minimum(member_rep + 1, n_tokens - 1)
    extends &= (rep[following] == member_rep + 1) & (count[shifted] == count[member_rep])
    broken = np.zeros(n_tokens, dtype=bool)
    broken[member_rep[~extends]] = True
    classes = members[member_rep == members]  # the representatives, ascending
    linked = ~broken[classes]  # class continues into the class of its representative + 1
    continues = np.zeros(n_tokens + 1, dtype=bool)
    continues[classes[linked] + 1] = True  # the class there has a predecessor
    heads = classes[~continues[classes]]
    ends = classes[~linked]
    last = ends[np.searchsorted(ends, heads)]  # the chain's last class's representative
    documents = _documents_per_class(members, member_rep, doc_of_token, n_tokens)
    return (doc_of_token[heads], token_starts[heads].astype(np.int64),
            token_ends[last + length - 1].astype(np.int64), last - heads + length,
            count[heads].astype(np.int64), documents[heads])


@nb.njit(cache=True)
def _documents_per_class(members, member_rep, doc_of_token, n_tokens):
    """At each representative: how many distinct documents its class's windows lie in
    (members ascend, so one class's documents come in nondecreasing order)."""
    documents = np.zeros(n_tokens, dtype=np.int64)
    last_doc = np.full(n_tokens, -1, dtype=np.int64)
    for i in range(members.size):
        r = member_rep[i]
        d = doc_of_token[members[i]]
        if last_doc[r] != d:
            last_doc[r] = d
            documents[r] += 1
    return documents
