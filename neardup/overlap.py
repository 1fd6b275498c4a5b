"""Word n-gram overlap between a few texts held in memory and a stream of documents: the
stage under ``neardup contamination`` (evaluation items against a training corpus).

The small side (the evaluation texts, ``T`` of them) becomes :class:`GramLookup`: every
gram of every text, hashed to 64 bits, sorted, each hash pointing to the texts that hold
it. A text of at least ``n`` tokens has the windows of ``n`` consecutive tokens as its
grams; a shorter one (1 to n - 1 tokens) has one gram, all of its tokens; a text with
no token has none. So the lookup has one table per gram length: ``n`` and each length
of the short texts.

The large side comes in batches of documents as token hashes (CSR). For each gram
length ``L`` of the lookup every window of ``L`` tokens of every document (documents of
fewer than ``L`` tokens have none) is hashed the same way and searched in that length's
sorted keys (``np.searchsorted``, past a bitmap of the keys' top bits that lets through
about one window in 64 that is no key); a window found is a *hit*, expanded to every text
that holds its gram. :func:`match_batch` returns, per (document, text) with a hit, how
many of the text's distinct grams occur in the document (``shared``); the caller's rule
decides (any: ``shared >= 1``; containment: ``shared / grams[text] >= c``). The hits
themselves (document, text, window start, length) are kept for what removes spans.

Exact up to 64-bit hash equality of grams (two different grams share a hash with
probability about 2^-64 per pair compared); tokens are compared as the caller hashed
them (:func:`neardup.shingling.token_hashes`). No Python loop runs per document or per
gram: each length is a few numpy passes over the batch's windows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .shingling import window_hashes

FILTER_BITS_PER_KEY = 64  # a window that is no key passes the prefilter 1 time in ~64


@dataclass(frozen=True)
class GramTable:
    """The grams of one length: ``keys`` uint64[K] sorted and unique; the texts holding
    key k are ``text[offsets[k]:offsets[k + 1]]``, at token ``position`` of each (its
    first occurrence there). ``present``: a bool per value of a hash's top ``bits`` bits,
    True where a key has them: a window whose flag is False is no key, so only the
    others are searched (a prefilter; the search decides)."""

    length: int
    keys: np.ndarray
    offsets: np.ndarray
    text: np.ndarray
    position: np.ndarray
    bits: int = 0
    present: np.ndarray | None = None

    @classmethod
    def of(cls, length: int, keys, offsets, text, position) -> GramTable:
        bits = int(np.clip(np.ceil(np.log2(max(keys.size, 1) * FILTER_BITS_PER_KEY)), 10, 26))
        present = np.zeros(1 << bits, dtype=bool)
        present[keys >> np.uint64(64 - bits)] = True
        return cls(length, keys, offsets, text, position, bits, present)

    def find(self, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(index in ``hashes``, key index) of the hashes that are keys."""
        maybe = np.flatnonzero(self.present[hashes >> np.uint64(64 - self.bits)])
        at = np.searchsorted(self.keys, hashes[maybe])
        at[at == self.keys.size] = 0
        hit = self.keys[at] == hashes[maybe]
        return maybe[hit], at[hit]


@dataclass(frozen=True)
class GramLookup:
    """The small side: one :class:`GramTable` per gram length, and per text its gram
    length (``length``, 0 for a text without tokens) and its distinct grams
    (``grams``, int64[T])."""

    size: int
    seed: int
    tables: tuple[GramTable, ...]
    length: np.ndarray
    grams: np.ndarray

    @property
    def n_texts(self) -> int:
        return int(self.grams.size)

    @classmethod
    def build(cls, token_values: np.ndarray, token_offsets: np.ndarray, size: int,
              seed: int = 0) -> GramLookup:
        """The lookup of texts given as token hashes (CSR, one segment a text)."""
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"the n-gram size must be a positive integer, got {size!r}")
        hashes, offsets = window_hashes(token_values, token_offsets, size, seed)
        n_texts = offsets.size - 1
        counts = np.diff(offsets)
        text = np.repeat(np.arange(n_texts, dtype=np.int64), counts)
        position = np.arange(hashes.size, dtype=np.int64) - offsets[text]
        length = np.minimum(np.diff(token_offsets), size).astype(np.int64)
        # one row per distinct (gram, text), its first position: sorted by gram, text
        order = np.lexsort((position, text, hashes))
        hashes, text, position = hashes[order], text[order], position[order]
        first = np.ones(hashes.size, dtype=bool)
        first[1:] = (hashes[1:] != hashes[:-1]) | (text[1:] != text[:-1])
        hashes, text, position = hashes[first], text[first], position[first]
        grams = np.bincount(text, minlength=n_texts).astype(np.int64)
        tables = []
        for gram_length in np.unique(length[length > 0]).tolist():
            mine = length[text] == gram_length
            keys, starts = np.unique(hashes[mine], return_index=True)
            table_offsets = np.append(starts, mine.sum()).astype(np.int64)
            tables.append(GramTable.of(int(gram_length), keys, table_offsets, text[mine],
                                       position[mine]))
        return cls(size, seed, tuple(tables), length, grams)


@dataclass(frozen=True)
class Hits:
    """What :func:`match_batch` found in a batch of documents.

    Per (document, text) with at least one gram in common, sorted by (doc, text):
    ``doc``, ``text`` (int64), ``shared`` (the text's distinct grams found in the
    document), ``sample`` (the token position in the text of its first gram found).
    Per window found: ``window_doc``, ``window_text``, ``window_start`` (its first token
    in the document), ``window_length`` (tokens)."""

    doc: np.ndarray
    text: np.ndarray
    shared: np.ndarray
    sample: np.ndarray
    window_doc: np.ndarray
    window_text: np.ndarray
    window_start: np.ndarray
    window_length: np.ndarray


def match_batch(token_values: np.ndarray, token_offsets: np.ndarray, lookup: GramLookup
                ) -> Hits:
    """The grams of ``lookup`` found in a batch of documents given as token hashes
    (CSR, hashed as the lookup's texts were); see the module docstring."""
    parts = [_table_hits(token_values, token_offsets, table, lookup.seed)
             for table in lookup.tables]
    doc, text, key, start, length, sample = (
        np.concatenate([p[i] for p in parts]) if parts else np.empty(0, np.int64)
        for i in range(6))
    # distinct (doc, text, gram): how many of a text's grams the document holds
    order = np.lexsort((start, key, text, doc))
    doc_s, text_s, key_s, sample_s = doc[order], text[order], key[order], sample[order]
    new_gram = np.ones(doc_s.size, dtype=bool)
    new_gram[1:] = ((doc_s[1:] != doc_s[:-1]) | (text_s[1:] != text_s[:-1])
                    | (key_s[1:] != key_s[:-1]))
    doc_g, text_g, sample_g = doc_s[new_gram], text_s[new_gram], sample_s[new_gram]
    new_pair = np.ones(doc_g.size, dtype=bool)
    new_pair[1:] = (doc_g[1:] != doc_g[:-1]) | (text_g[1:] != text_g[:-1])
    pair_starts = np.flatnonzero(new_pair)
    shared = np.diff(np.append(pair_starts, doc_g.size)).astype(np.int64)
    first_sample = (np.minimum.reduceat(sample_g, pair_starts) if pair_starts.size
                    else np.empty(0, np.int64))
    return Hits(doc_g[pair_starts], text_g[pair_starts], shared, first_sample.astype(np.int64),
                doc, text, start, length)


def _table_hits(token_values, token_offsets, table: GramTable, seed: int):
    """(doc, text, key, window start, window length, position in the text) per window of
    ``table.length`` tokens found in the table, expanded to every text holding it."""
    hashes, offsets = window_hashes(token_values, token_offsets, table.length, seed,
                                    whole_short=False)
    found, key = table.find(hashes)
    doc = np.searchsorted(offsets, found, side="right") - 1
    start = found - offsets[doc]
    # each window found, once per text holding its gram
    per = table.offsets[key + 1] - table.offsets[key]
    row = np.repeat(np.arange(found.size), per)
    entry = (np.arange(row.size, dtype=np.int64)
             - np.repeat(np.cumsum(per) - per, per) + table.offsets[key][row])
    length = np.full(row.size, table.length, dtype=np.int64)
    # keys of different tables never meet: a text's grams all lie in one table
    return (doc[row].astype(np.int64), table.text[entry], key[row].astype(np.int64),
            start[row].astype(np.int64), length, table.position[entry])
