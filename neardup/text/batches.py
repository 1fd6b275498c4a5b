"""The shingling stage over many documents: batches that bound the temporary memory
and show progress, in this process or in spawned workers.

:func:`shingle_in_batches` gives the same sets as one :func:`~neardup.shingling.shingle`
call over every text, whatever the batches and workers (each document is shingled on
its own; batches come back in order).
"""

from __future__ import annotations

import multiprocessing
import pickle
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from .._core.progress import StageTimer, checked
from ..shingling import ShingleOptions, ShingleSets, shingle, word_tokens

SHINGLE_BATCH = 20_000
SLOW_BATCH_CHARS = 1 << 21  # a batch for a code lexer or a token cleaner: about a second
# Shingling runs in this process unless workers are asked for: the kernels are already
# parallel over documents, and spawned workers each import numba and rebuild tables.
# Measured on 2 shared cores: the Go tree (72M characters) 1.9 s here vs 6.9 s with 2
# workers; 1 M generated documents 15.2-15.7 s here vs 23.4-24.2 s with 2 workers (the
# old automatic switch above 400M characters); the standard library as code 8.1-9.6 s
# vs 14.5-17.4 s.
# spawn, not fork: a forked child of a process that ran numba's parallel kernels
# (GNU OpenMP threads) is killed ("fork() called from a process already using GNU OpenMP")
WORKER_START = "spawn"


def shingle_in_batches(texts: Sequence[str], options: ShingleOptions,
                       timer: StageTimer | None = None, workers: int | None = None
                       ) -> ShingleSets:
    """:func:`~neardup.shingling.shingle` over batches, bounding the temporary memory.

    ``workers``: processes that shingle batches side by side; None or 1 is in-process
    (faster on the machines measured, see above). The sets are the same whatever the
    number of workers (each document is shingled on its own; batches come back in
    order). Options that cannot be pickled (a lambda as ``tokenize``) keep the work
    in-process.
    """
    workers = _worker_count(texts, options, workers)
    if workers > 1:
        return _shingle_in_workers(texts, options, workers, timer)
    bounds = _batch_bounds(texts, options)
    batches = zip(bounds[:-1], bounds[1:])
    if timer is not None:
        batches = timer.bar(batches, total=len(bounds) - 1, desc="shingle",
                            sizes=np.diff(bounds))
    else:
        batches = checked(batches)
    return ShingleSets.concat([shingle(texts[lo:hi], options) for lo, hi in batches])


def _batch_bounds(texts: Sequence[str], options: ShingleOptions) -> list[int]:
    """Where batches start: every SHINGLE_BATCH documents, and for a tokenizer other than
    the word kernel (code lexers at 2-20 MB/s, cleaners' token steps) every
    SLOW_BATCH_CHARS characters too, so a long run shows its progress and time left."""
    starts = list(range(0, len(texts), SHINGLE_BATCH))
    slow = options.kind == "word" and options.tokenize not in (None, word_tokens)
    if slow and texts:
        ends = np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)))
        cuts = np.searchsorted(ends, np.arange(SLOW_BATCH_CHARS, int(ends[-1]),
                                               SLOW_BATCH_CHARS), side="right")
        starts = sorted(set(starts) | {int(c) for c in cuts if 0 < c < len(texts)})
    return [*starts, len(texts)]


def _worker_count(texts: Sequence[str], options: ShingleOptions, workers: int | None) -> int:
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a positive integer or None, got {workers!r}")
    if workers is None:
        return 1
    workers = min(workers, len(texts))
    if workers > 1:
        try:
            pickle.dumps(options)
        except Exception:  # lambdas, closures: shingle here
            return 1
    return workers


def _shingle_in_workers(texts: Sequence[str], options: ShingleOptions, workers: int,
                        timer: StageTimer | None) -> ShingleSets:
    # batches of about equal characters, several per worker so that none waits long
    sizes = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    n_batches = max(workers * 4, -(-len(texts) // SHINGLE_BATCH))
    ends = np.searchsorted(np.cumsum(sizes), np.linspace(0, sizes.sum(), n_batches + 1)[1:],
                           side="left") + 1
    bounds = np.unique(np.concatenate([[0], np.minimum(ends, len(texts))])).tolist()
    batches = [list(texts[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:])]
    context = multiprocessing.get_context(WORKER_START)
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        results = pool.map(_shingle_arrays, batches, [options] * len(batches))
        results = (timer.bar(results, total=len(batches), desc="shingle",
                             sizes=[len(batch) for batch in batches])
                   if timer is not None else checked(results))
        parts = [ShingleSets(offsets, values) for offsets, values in results]
    return ShingleSets.concat(parts)


def _shingle_arrays(texts: list[str], options: ShingleOptions):
    """A worker's task: one batch's sets as plain arrays (offsets, values)."""
    sets = shingle(texts, options)
    return sets.offsets, sets.values


class ShingleSetsBuilder:
    """Shingle sets appended a part at a time into one CSR, without holding the parts.

    :meth:`build` gives what ``ShingleSets.concat`` of the parts gives (the values'
    dtype promoted the same way). The values grow in place (``ndarray.resize``, a
    ``realloc``: large blocks are remapped, not copied), so a corpus shingled a chunk at
    a time peaks at its sets plus one chunk, not at twice its sets as a concatenation of
    the parts would.
    """

    GROWTH = 1.25

    def __init__(self) -> None:
        self._values: np.ndarray | None = None
        self._used = 0
        self._sizes: list[np.ndarray] = []

    def append(self, part: ShingleSets) -> None:
        if self._values is None:
            self._values = np.empty(part.values.size, dtype=part.values.dtype)
        elif np.result_type(self._values, part.values) != self._values.dtype:
            self._values = self._values.astype(np.result_type(self._values, part.values))
        end = self._used + part.values.size
        if end > self._values.size:
            self._values.resize(max(end, int(self._values.size * self.GROWTH)),
                                refcheck=False)
        self._values[self._used:end] = part.values
        self._used = end
        self._sizes.append(part.sizes)

    def build(self) -> ShingleSets:
        """The sets appended so far, in order; the builder is left empty."""
        if self._values is None:
            return ShingleSets.concat([])
        values, self._values = self._values, None
        values.resize(self._used, refcheck=False)
        sizes = np.concatenate(self._sizes)
        self._sizes, self._used = [], 0
        offsets = np.zeros(sizes.size + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return ShingleSets(offsets, values)
