"""Every id read so far, so that a repeated id is renamed: :class:`SeenIds`.

A reader renames the second ``x`` it meets to ``x#2`` (see
:class:`~neardup.sources.documents.ReadReport`), across every chunk of a run, so the ids
of the whole run must be looked up, not only the chunk's. A dict of Python strings
costs ~150 bytes an id (the string object and its slot) for the whole run; here the
ids of the chunks already handed out are kept as bytes (UTF-8, offsets and data: about
8 + length bytes an id) with a 64-bit hash and number each, sorted (16 bytes an id;
each chunk's are merged in when it is handed out). Only the chunk being read is a
Python dict. A block of ids read is one vectorized search of the sorted hashes.

Exact: a hash only proposes; an id is "seen" when its bytes equal a stored id's. The
hashes are Python's own ``hash(str)`` (randomised per process, which changes nothing:
no output depends on them, only on which ids are equal).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence

import numpy as np


def _encoded(doc_id: str) -> bytes:
    return doc_id.encode("utf-8", "surrogatepass")  # a lone surrogate is still an id


def _hashes(ids: Sequence[str]) -> np.ndarray:
    return np.fromiter(map(hash, ids), dtype=np.int64, count=len(ids))


class SeenIds:
    """The set of ids given so far, with how many times each was given.

    ``uses(x)`` is 0 for an id never given, else the times it was given (1 for most);
    ``give(x, uses)`` records it. :meth:`seal` moves the ids given since the last seal
    (a chunk's) out of the Python set into the stored bytes.
    """

    def __init__(self):
        self.recent: dict[str, None] = {}  # given since the last seal (insertion order)
        self.repeated: dict[str, int] = {}  # uses of the ids given more than once
        self.starts: list[int] = []  # global number of each stored block's first id
        self.blocks: list[tuple[np.ndarray, bytes]] = []  # (offsets int64[m + 1], data)
        self.runs: list[tuple[np.ndarray, np.ndarray]] = []  # (hashes sorted, global number)
        self.stored = 0

    def __len__(self) -> int:
        return self.stored + len(self.recent)

    def uses(self, doc_id: str) -> int:
        times = self.repeated.get(doc_id)
        if times:
            return times
        return int(doc_id in self.recent or self._stored(doc_id))

    def __contains__(self, doc_id: str) -> bool:
        return doc_id in self.recent or doc_id in self.repeated or self._stored(doc_id)

    def give(self, doc_id: str, uses: int) -> None:
        """Record that ``doc_id`` has now been given ``uses`` times (1: for the first time)."""
        if uses > 1:
            self.repeated[doc_id] = uses
        else:
            self.recent[doc_id] = None

    def add_new(self, ids: dict[str, None]) -> None:
        """Record ``ids`` (distinct, none given before: see :meth:`any_given`) once each."""
        self.recent.update(ids)

    def any_given(self, ids: dict[str, None]) -> bool:
        """Whether any of ``ids`` (distinct) was given before."""
        if not self.recent.keys().isdisjoint(ids):
            return True
        if not self.runs or not ids:
            return False
        keys = list(ids)
        hashes = _hashes(keys)
        run_hashes = self.runs[0][0]  # one run (see seal)
        at = np.searchsorted(run_hashes, hashes)
        np.minimum(at, run_hashes.size - 1, out=at)
        hit = run_hashes[at] == hashes
        if not hit.any():  # the usual case: one search for the block
            return False
        return any(self._stored(keys[k]) for k in np.flatnonzero(hit).tolist())

    def seal(self) -> None:
        """Store the ids given since the last seal as bytes, hashed and sorted."""
        if not self.recent:
            return
        keys = list(self.recent)
        encoded = [_encoded(k) for k in keys]
        offsets = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(keys)),
                  out=offsets[1:])
        self.starts.append(self.stored)
        self.blocks.append((offsets, b"".join(encoded)))
        hashes = _hashes(keys)
        order = np.argsort(hashes, kind="stable")
        run = (hashes[order], order.astype(np.int64) + self.stored)
        # one run, merged into at every seal (a chunk): a block of ids read is then one
        # search, where several runs made the lookups cost more than the dict did
        self.runs = [_merged(self.runs[0], run) if self.runs else run]
        self.stored += len(keys)
        self.recent = {}

    def _stored(self, doc_id: str) -> bool:
        if not self.runs:
            return False
        h = hash(doc_id)
        encoded = None
        for run_hashes, numbers in self.runs:
            at = int(np.searchsorted(run_hashes, h))
            while at < run_hashes.size and run_hashes[at] == h:
                encoded = _encoded(doc_id) if encoded is None else encoded
                if self._bytes(int(numbers[at])) == encoded:
                    return True
                at += 1
        return False

    def _bytes(self, number: int) -> bytes:
        block = bisect.bisect_right(self.starts, number) - 1
        offsets, data = self.blocks[block]
        k = number - self.starts[block]
        return data[offsets[k]:offsets[k + 1]]


def _merged(run: tuple[np.ndarray, np.ndarray], later: tuple[np.ndarray, np.ndarray]
            ) -> tuple[np.ndarray, np.ndarray]:
    """Two sorted runs as one: each of ``later``'s entries put where it goes (no sort of
    the whole, so the merge holds the two runs, the result and ``later``'s positions)."""
    (h1, g1), (h2, g2) = run, later
    at = np.searchsorted(h1, h2, side="right") + np.arange(h2.size)
    earlier = np.ones(h1.size + h2.size, dtype=bool)
    earlier[at] = False
    hashes, numbers = np.empty_like(earlier, dtype=np.int64), np.empty_like(earlier, np.int64)
    hashes[at], numbers[at] = h2, g2
    hashes[earlier], numbers[earlier] = h1, g1
    return hashes, numbers


def first_uses(ids: Iterable[str]) -> dict[str, None]:
    """``ids`` as a dict (insertion order, one key each): what :meth:`SeenIds.any_given`
    and :meth:`SeenIds.add_new` take."""
    return dict.fromkeys(ids)
