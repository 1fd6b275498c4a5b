"""Byte ranges per document, as CSR: what every unit removes, and the texts left.

:class:`RemovalRanges` is what each unit's detector returns (lines, paragraphs and
sentence spans in :mod:`neardup.units`, token spans in :mod:`neardup.units.spans`) and
what the dedup copy applies: for document d, the byte ranges
``starts[offsets[d]:offsets[d + 1]]`` to ``ends[...]`` of its UTF-8 text, sorted,
non-overlapping, never touching (adjacent ranges are merged), each on a character
boundary. :class:`CSR` is the plain (offsets, values) pair the token-span kernel takes.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._core.jit import njit


class CSR(NamedTuple):
    """Per document d, ``values[offsets[d]:offsets[d + 1]]``; offsets int64[n_docs + 1]."""

    offsets: np.ndarray
    values: np.ndarray


class RemovalRanges(NamedTuple):
    """Byte ranges to remove per document, relative to each document's UTF-8 text.

    offsets: int64[n_docs + 1]; starts, ends: int64[offsets[-1]], sorted within a
    document, non-overlapping and non-adjacent.
    """

    offsets: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    @property
    def bytes_per_document(self) -> np.ndarray:
        """int64[n_docs]: the bytes each document loses."""
        lengths = self.ends - self.starts
        sums = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=sums[1:])
        return sums[self.offsets[1:]] - sums[self.offsets[:-1]]

    @classmethod
    def from_units(cls, n_docs: int, doc: np.ndarray, starts: np.ndarray,
                   ends: np.ndarray) -> RemovalRanges:
        """Ranges of units sorted by (doc, start), possibly overlapping or adjacent (the
        sentences of overlapping windows), merged into the canonical form."""
        doc, starts, ends = merge_ranges(np.asarray(doc, np.int64),
                                         np.asarray(starts, np.int64),
                                         np.asarray(ends, np.int64))
        offsets = np.zeros(n_docs + 1, dtype=np.int64)
        np.cumsum(np.bincount(doc, minlength=n_docs), out=offsets[1:])
        return cls(offsets, starts, ends)

    @classmethod
    def of(cls, removal) -> RemovalRanges:
        """The ranges of anything with ``remove_offsets``, ``remove_starts`` and
        ``remove_ends`` (the token-span kernel's RepeatedSpans)."""
        return cls(np.asarray(removal.remove_offsets, np.int64),
                   np.asarray(removal.remove_starts, np.int64),
                   np.asarray(removal.remove_ends, np.int64))


@njit(cache=True)
def merge_ranges(doc, starts, ends):
    """Ranges sorted by (doc, start) with overlapping or touching ones merged."""
    n = doc.size
    out_doc = np.empty(n, np.int64)
    out_start = np.empty(n, np.int64)
    out_end = np.empty(n, np.int64)
    m = -1
    for i in range(n):
        if m >= 0 and doc[i] == out_doc[m] and starts[i] <= out_end[m]:
            out_end[m] = max(out_end[m], ends[i])
        else:
            m += 1
            out_doc[m], out_start[m], out_end[m] = doc[i], starts[i], ends[i]
    return out_doc[:m + 1], out_start[:m + 1], out_end[:m + 1]


@njit(cache=True)
def remove_ranges(data, doc_offsets, offsets, starts, ends):
    """(bytes, int64[n_docs + 1] offsets): each document's bytes minus its ranges."""
    n = doc_offsets.size - 1
    total = doc_offsets[n] - doc_offsets[0]
    for r in range(starts.size):
        total -= ends[r] - starts[r]
    out = np.empty(total, np.uint8)
    new_offsets = np.zeros(n + 1, np.int64)
    w = 0
    for d in range(n):
        base = doc_offsets[d]
        p = base
        for r in range(offsets[d], offsets[d + 1]):
            for q in range(p, base + starts[r]):
                out[w] = data[q]
                w += 1
            p = base + ends[r]
        for q in range(p, doc_offsets[d + 1]):
            out[w] = data[q]
            w += 1
        new_offsets[d + 1] = w
    return out, new_offsets
