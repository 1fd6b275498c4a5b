#!/usr/bin/env python3
"""Units below the document: the ``span`` unit's kernel (neardup.units.spans) on a real corpus.

Skeleton: it measures :func:`neardup.units.spans.repeated_spans` alone (tokens a second,
the memory the first call adds) on the first ``--docs`` documents of a JSONL corpus,
tokenized by whitespace (token ids: a 64-bit FNV-1a hash of the token's bytes, made here,
outside the timing), optionally with a web-like boilerplate (a ``--banner``-token header
in a ``--banner-share`` of the documents) planted first. ``--check`` compares the removed
tokens, token by token, with prefix doubling (:func:`doubling_classes`: the suffix
array's ranks, exact without any hash, numpy only).

Not written yet: the comparison against text-dedup's and datatrove's suffix-array path
(both drive the Rust deduplicate-text-datasets tool: a cargo build with crates.io and a
Hugging Face tokenizer download, neither reachable offline), and a BENCHMARKS.md section.

Run: ``python bench/bench_units.py --corpus /work/data/scale_100000.jsonl --docs 100000``.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import gc
import json
import os
import statistics
import threading
import time
from itertools import islice
from pathlib import Path

import numba as nb
import numpy as np

from neardup.units.spans import Ragged, repeated_spans

_LIBC = ctypes.CDLL(ctypes.util.find_library("c")) if ctypes.util.find_library("c") else None
_SPACE = np.zeros(256, dtype=np.bool_)
_SPACE[[9, 10, 11, 12, 13, 32]] = True


def read_texts(path: Path, docs: int) -> list[str]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line)["text"] for line in islice(lines, docs)]


def plant_banner(texts: list[str], tokens: int, share: float, seed: int = 0) -> list[str]:
    """The same ``tokens``-word header in front of a ``share`` of the documents."""
    rng = np.random.default_rng(seed)
    banner = " ".join(f"banner{int(w)}" for w in rng.integers(0, 10**6, tokens))
    chosen = rng.random(len(texts)) < share
    return [banner + " " + t if c else t for t, c in zip(texts, chosen, strict=True)]


def whitespace_tokens(texts: list[str]) -> tuple[Ragged, Ragged, Ragged]:
    """Per document: each whitespace-separated token's byte range and a hash of its bytes."""
    encoded = [t.encode("utf-8") for t in texts]
    doc_offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=doc_offsets[1:])
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    counts = _count_tokens(data, doc_offsets, _SPACE)
    offsets = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    starts, ends, ids = _fill_tokens(data, doc_offsets, _SPACE, offsets)
    return Ragged(offsets, starts), Ragged(offsets, ends), Ragged(offsets, ids)


@nb.njit(cache=True)
def _count_tokens(data, doc_offsets, space):
    counts = np.zeros(doc_offsets.size - 1, dtype=np.int64)
    for d in range(doc_offsets.size - 1):
        inside = False
        for p in range(doc_offsets[d], doc_offsets[d + 1]):
            if space[data[p]]:
                inside = False
            elif not inside:
                inside = True
                counts[d] += 1
    return counts


@nb.njit(cache=True)
def _fill_tokens(data, doc_offsets, space, offsets):
    starts = np.empty(offsets[-1], dtype=np.int64)
    ends = np.empty(offsets[-1], dtype=np.int64)
    ids = np.empty(offsets[-1], dtype=np.uint64)
    for d in range(doc_offsets.size - 1):
        k = offsets[d] - 1
        base = doc_offsets[d]
        inside = False
        h = np.uint64(0)
        for p in range(base, doc_offsets[d + 1] + 1):
            at_space = p == doc_offsets[d + 1] or space[data[p]]
            if at_space:
                if inside:
                    ends[k] = p - base
                    ids[k] = h
                inside = False
            else:
                if not inside:
                    inside = True
                    k += 1
                    starts[k] = p - base
                    h = np.uint64(0xCBF29CE484222325)
                h = (h ^ np.uint64(data[p])) * np.uint64(0x100000001B3)
    return starts, ends, ids


def doubling_classes(offsets: np.ndarray, ids: np.ndarray, length: int):
    """Exact window classes without hashing, the suffix array's way (prefix doubling):
    the rank of every token's next 2^j tokens (cut at its document's end) from the ranks
    of 2^(j-1), then a window's class from the ranks of its two overlapping halves of
    2^j <= L tokens. Returns (window starts, class id of each), numpy only."""
    n_tokens = ids.size
    doc_end = np.repeat(offsets[1:], np.diff(offsets))
    position = np.arange(n_tokens, dtype=np.int64)
    rank = np.unique(ids, return_inverse=True)[1].astype(np.int64) + 1  # 0: past the end
    span = 1
    while 2 * span <= length:
        later = np.zeros(n_tokens, dtype=np.int64)
        inside = position + span < doc_end
        later[inside] = rank[position[inside] + span]
        rank = np.unique((rank << 32) | later, return_inverse=True)[1].astype(np.int64) + 1
        span *= 2
    starts = position[position + length <= doc_end]
    pairs = (rank[starts] << 32) | rank[starts + length - span]
    return starts, np.unique(pairs, return_inverse=True)[1]


def doubling_removed(offsets, ids, length, keep):
    """The tokens removed under ``keep``, from :func:`doubling_classes`."""
    starts, classes = doubling_classes(offsets, ids.view(np.int64), length)
    _, first, sizes = np.unique(classes, return_index=True, return_counts=True)
    if keep == "first":
        gone = np.ones(starts.size, dtype=bool)
        gone[first] = False
    else:
        gone = sizes[classes] >= 2
    cover = np.zeros(ids.size + 1, dtype=np.int64)
    np.add.at(cover, starts[gone], 1)
    np.add.at(cover, starts[gone] + length, -1)
    return np.cumsum(cover[:-1]) > 0


class PeakRss:
    """The largest resident set size seen while the block runs (sampled every 5 ms)."""

    def __enter__(self):
        gc.collect()
        if _LIBC is not None:  # hand freed pages back, so "added" is what the block adds
            _LIBC.malloc_trim(0)
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.before = self.peak = self._rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())

    def _rss(self) -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * self.page

    def _sample(self):
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, self._rss())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("/work/data/scale_100000.jsonl"))
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--min-tokens", type=int, default=50)
    parser.add_argument("--keep", default="first")
    parser.add_argument("--passes", type=int, default=1)
    parser.add_argument("--banner", type=int, default=0, help="plant a header of N tokens")
    parser.add_argument("--banner-share", type=float, default=0.3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--check", action="store_true",
                        help="compare the removed tokens with prefix doubling (exact, no hash)")
    args = parser.parse_args()
    texts = read_texts(args.corpus, args.docs)
    if args.banner:
        texts = plant_banner(texts, args.banner, args.banner_share)
    starts, ends, ids = whitespace_tokens(texts)
    warm = Ragged(np.array([0, 3], dtype=np.int64), np.arange(3, dtype=np.int64))
    repeated_spans(warm, Ragged(warm.offsets, warm.values + 1), warm, 2)  # compile outside
    seconds = []
    for repeat in range(args.repeats):
        with PeakRss() as rss:
            t = time.perf_counter()
            found = repeated_spans(starts, ends, ids, args.min_tokens, args.keep,
                                   passes=args.passes)
            seconds.append(time.perf_counter() - t)
        if repeat == 0:  # later calls reuse pages the first one freed
            added, peak = rss.peak - rss.before, rss.peak
    n_tokens = ids.values.size
    wall = statistics.median(seconds)
    agreement = {}
    if args.check:  # the same removal, token by token, from an independent exact method
        t = time.perf_counter()
        truth = doubling_removed(ids.offsets, ids.values, args.min_tokens, args.keep)
        mine = np.zeros(n_tokens, dtype=bool)
        doc_of_range = np.repeat(np.arange(found.n_docs), np.diff(found.remove_offsets))
        token_doc = np.repeat(np.arange(ids.n), np.diff(ids.offsets))
        # a token is removed iff its bytes lie in a removed range of its document
        key = token_doc * (1 << 34) + starts.values
        lo = np.searchsorted(doc_of_range * (1 << 34) + found.remove_starts, key, side="right")
        inside = lo > 0
        hit = np.maximum(lo - 1, 0)
        mine = inside & (doc_of_range[hit] == token_doc) & (ends.values <= found.remove_ends[hit])
        agreement = {"doubling_s": round(time.perf_counter() - t, 3),
                     "doubling_tokens_removed": int(truth.sum()),
                     "tokens_disagreeing": int(np.count_nonzero(truth != mine))}
    print(json.dumps({
        "docs": len(texts), "tokens": n_tokens, "bytes": sum(len(t.encode()) for t in texts),
        "min_tokens": args.min_tokens, "keep": args.keep, "passes": args.passes,
        "banner": args.banner, "seconds": [round(s, 3) for s in seconds],
        "median_s": round(wall, 3), "tokens_per_s": round(n_tokens / wall),
        "first_call_added_rss_mib": round(added / 2**20, 1),
        "rss_peak_mib": round(peak / 2**20, 1),
        "columns_mib": round((starts.values.nbytes + ends.values.nbytes + ids.values.nbytes)
                             / 2**20, 1),
        "windows": found.windows, "windows_removed": found.windows_removed,
        "tokens_removed": found.tokens_removed, "bytes_removed": found.bytes_removed,
        "docs_touched": int(np.count_nonzero(np.diff(found.remove_offsets))),
        "spans": int(found.span_doc.size),
        "top_span_count": int(found.span_count.max()) if found.span_doc.size else 0,
        **agreement,
    }, indent=1))


if __name__ == "__main__":
    main()
