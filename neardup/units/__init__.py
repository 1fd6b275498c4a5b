"""Duplication inside documents: repeated lines, paragraphs, sentence spans and token
spans, found exactly and removed from the original text.

A *unit* (:data:`UNITS`; ``sentences:N`` takes a number) is cut from each document's
original text by :mod:`neardup.units.split`, normalized alone with the run's
normalization, and compared exactly (:mod:`neardup.units.hashing`: 64-bit hashes
sorted, every group verified byte for byte). In input order (document, then position),
the first occurrence of a text is kept and every later one removed (``keep="first"``);
``keep="none"`` removes every copy of a text seen more than once. What is removed is
the unit's original bytes (:class:`~neardup.units.ranges.RemovalRanges`), never a
normalized form, and every cut falls next to an ASCII byte, so no UTF-8 character is
split. A document that loses units and is left with fewer than ``min_chars``
characters (ends' whitespace not counted) is dropped, and counted.

The units:

line, paragraph
    see :mod:`neardup.units.split`.
sentences:N
    every run of N consecutive sentences of a document is a unit (a window; a document
    with fewer than N sentences has none). This is the rule the C4 paper states
    (Raffel et al. 2020, section 2.2: "we discarded all but one of any three-sentence
    span occurring more than once in the data set"); C4's published code
    (``tensorflow_datasets`` ``c4_utils.remove_duplicate_text``) in fact removes
    repeated *lines*, keeping the copy whose URL hashes first. Two windows are equal
    when their N sentences are equal one by one; a repeated window removes its N
    sentences, so windows that overlap remove their union.
span
    repeated runs of at least ``min_tokens`` tokens (runs of non-whitespace, compared
    normalized), found by :func:`neardup.units.spans.repeated_spans`.

Short units (line, paragraph, sentences:N) are kept: a unit with fewer than
``min_unit_chars`` characters or fewer than ``min_unit_words`` words is never removed and
never listed as a repeat, however often it occurs (``else:``, ``try:``, a docstring's
quotes, a list's short items). Both are measured on the text compared, after the run's
normalization (:func:`~neardup.units.hashing.unit_lengths`: characters are code points;
words are runs between whitespace, a Chinese or Japanese character a word by itself), so
indentation and case do not count, and two equal units are both short or both not. A
window of sentences:N is measured whole (the sums of its sentences'). The defaults,
:data:`DEFAULT_MIN_UNIT_WORDS` words and :data:`DEFAULT_MIN_UNIT_CHARS` characters, and
what C4, datatrove and Dolma do, are at their definitions. The span unit's minimum is
``min_tokens``.

Counts (:func:`find_repeated_units`' ``counts``) say what they name and add up:
``units`` = ``units_kept`` + ``units_removed``; ``bytes_removed`` is the bytes of the
merged ranges. A unit that normalizes to nothing (a line of punctuation under
``clean="text"``) is no unit. ``units_repeated`` counts the repeated texts at or over
the minimum (the rows of the listing); ``units_short`` the short units (occurrences),
``units_short_repeated`` the short texts seen more than once, and ``units_short_spared``
the short units that the minimum kept (those the policy would have removed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._core import counts as counting
from .._core.choices import not_one_of
from . import split
from .hashing import exact_classes, normalized_pieces, texts_buffer, unit_lengths
from .ranges import CSR, RemovalRanges, remove_ranges

MAX_WINDOW_SENTENCES = 1 << 62  # a window's sentence numbers stay within int64
UNITS = ("document", "line", "paragraph", "sentences:N", "span")
KEEP_POLICIES = ("first", "none")
DEFAULT_MIN_TOKENS = 50
DEFAULT_MIN_CHARS = 1
# Units shorter than this are kept (line, paragraph, sentences:N). What the references do:
# C4's code (tensorflow_datasets text/c4_utils.py, clean_page) drops every line of fewer
# than _MIN_WORDS_PER_LINE = 5 words before its line dedup (remove_duplicate_text), so no
# shorter line is ever deduplicated; datatrove's C4QualityFilter (the C4 rule as FineWeb
# ran it) drops lines of fewer than min_words_per_line = 3 words; datatrove's
# SentDedupConfig.min_words_to_remove_span and Dolma's dedupe.min_words / min_length
# (paragraphs) keep spans below them, but default to 0 (off). Here short units are kept,
# not dropped, so the lower of C4's two published thresholds: 3 words.
DEFAULT_MIN_UNIT_WORDS = 3
DEFAULT_MIN_UNIT_CHARS = 0
__all__ = ["CSR", "DEFAULT_MIN_CHARS", "DEFAULT_MIN_TOKENS", "DEFAULT_MIN_UNIT_CHARS",
           "DEFAULT_MIN_UNIT_WORDS", "KEEP_POLICIES",
           "MAX_WINDOW_SENTENCES", "UNITS", "RemovalRanges", "Repeats", "UnitAnalysis",
           "UnitOptions", "characters_left", "is_short", "window_lengths",
           "find_repeated_units", "remaining_texts", "removal_counts"]

_SPLITTERS = {"line": split.split_lines, "paragraph": split.split_paragraphs}


@dataclass(frozen=True)
class UnitOptions:
    """What is compared inside documents, checked once here.

    unit: one of :data:`UNITS` ("sentences:3" for N = 3); "document" is whole documents
        (near-duplicate dedup, nothing of this package).
    min_tokens: the span unit's shortest repeated run, in tokens.
    keep: "first" (the first occurrence stays) or "none" (every copy goes).
    min_chars: documents that lose units and are left with fewer characters are dropped.
    min_unit_chars, min_unit_words: line, paragraph, sentences:N: units with fewer
        characters or words (of the compared text) are kept; None: the default
        (:data:`DEFAULT_MIN_UNIT_CHARS`, :data:`DEFAULT_MIN_UNIT_WORDS`). The span unit
        refuses them (its minimum is ``min_tokens``).
    """

    unit: str = "document"
    min_tokens: int = DEFAULT_MIN_TOKENS
    keep: str = "first"
    min_chars: int = DEFAULT_MIN_CHARS
    min_unit_chars: int | None = None
    min_unit_words: int | None = None

    def __post_init__(self) -> None:
        kind, _, number = str(self.unit).partition(":")
        if kind == "sentences":
            if not number.isdigit() or int(number) < 1:
                raise ValueError(f"unit sentences:N needs a whole number N >= 1, got "
                                 f"{self.unit!r}")
            if int(number) > MAX_WINDOW_SENTENCES:
                raise ValueError(f"unit sentences:N takes N up to 2^62 (no document holds "
                                 f"more sentences), got {self.unit!r}")
        elif self.unit not in UNITS or self.unit == "sentences:N":
            raise not_one_of("unit", self.unit, UNITS)
        if self.keep not in KEEP_POLICIES:
            raise ValueError(f"keep must be one of {KEEP_POLICIES}, got {self.keep!r}")
        for name in ("min_tokens", "min_chars"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < (
                    1 if name == "min_tokens" else 0):
                raise ValueError(f"{name} must be a whole number >= "
                                 f"{1 if name == 'min_tokens' else 0}, got {value!r}")
        for name in ("min_unit_chars", "min_unit_words"):
            value = getattr(self, name)
            if value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
            if value and self.kind == "span":
                raise ValueError(f"{name} (--{name.replace('_', '-')}) applies to --unit "
                                 f"line, paragraph and sentences:N; the span unit's "
                                 f"shortest run is min_tokens (--min-tokens)")

    @property
    def minimum(self) -> tuple[int, int]:
        """(characters, words) a unit needs to be removed or listed: the options, or
        their defaults; (0, 0) for span and document."""
        if self.kind in ("span", "document"):
            return 0, 0
        return (DEFAULT_MIN_UNIT_CHARS if self.min_unit_chars is None else self.min_unit_chars,
                DEFAULT_MIN_UNIT_WORDS if self.min_unit_words is None else self.min_unit_words)

    @property
    def kind(self) -> str:
        """"line", "paragraph", "sentences", "span" or "document"."""
        return self.unit.partition(":")[0]

    @property
    def sentences(self) -> int:
        """N of sentences:N (0 for the other units)."""
        return int(self.unit.partition(":")[2]) if self.kind == "sentences" else 0


class Repeats(NamedTuple):
    """The repeated texts, one row each, in input order of their first occurrence:
    ``doc``, ``start``, ``end`` (bytes of its compared text in that document's UTF-8
    text), ``count`` (occurrences), ``documents`` (distinct documents holding it)."""

    doc: np.ndarray
    start: np.ndarray
    end: np.ndarray
    count: np.ndarray
    documents: np.ndarray


@dataclass
class UnitAnalysis:
    """What :func:`find_repeated_units` found: the corpus as UTF-8 (``data``,
    ``doc_offsets``), the ranges to remove, the repeated texts and the counts;
    ``short_repeats``: the repeated texts under the minimum, kept (None for span)."""

    data: np.ndarray
    doc_offsets: np.ndarray
    removals: RemovalRanges
    repeats: Repeats
    counts: dict
    short_repeats: Repeats | None = None


def find_repeated_units(texts, options: UnitOptions, normalize) -> UnitAnalysis:
    """The units of ``texts`` (a sequence of str) compared under ``normalize``; see the
    module docstring. Columnar throughout: no Python loop per unit or document."""
    if options.kind == "document":
        raise ValueError("unit 'document' is whole-document dedup, not a unit inside "
                         "documents")
    data, doc_offsets = texts_buffer(texts)
    n_docs = doc_offsets.size - 1
    if options.kind == "span":
        removals, repeats, counts = _spans(data, doc_offsets, options, normalize)
    else:
        splitter = split.split_sentences if options.kind == "sentences" \
            else _SPLITTERS[options.kind]
        doc, ts, te, cs, ce = splitter(data, doc_offsets)
        class_of, collisions, kept, chars, words = _classes(data, ts, te, normalize)
        doc, ts, te, cs, ce = doc[kept], ts[kept], te[kept], cs[kept], ce[kept]
        base = doc_offsets[doc]
        if options.kind == "sentences":
            removals, repeats, counts, short_repeats = _windows(
                n_docs, doc, ts - base, te - base, cs - base, ce - base, class_of, chars,
                words, options)
        else:
            short = is_short(chars, words, options.minimum)
            policy = _removed(class_of, options.keep)
            removed = policy & ~short
            removals = RemovalRanges.from_units(n_docs, doc[removed], cs[removed] - base[removed],
                                                ce[removed] - base[removed])
            repeats = _repeats(class_of, doc, ts - base, te - base, ~short)
            short_repeats = _repeats(class_of, doc, ts - base, te - base, short)
            counts = _unit_counts(class_of, removed, short, policy)
        counting.add_unit_counts(counts, hash_collisions=collisions)
    counts.update(removal_counts(removals))
    return UnitAnalysis(data, doc_offsets, removals, repeats, counts,
                        None if options.kind == "span" else short_repeats)


def removal_counts(removals: RemovalRanges) -> dict:
    """``bytes_removed`` (the bytes of the merged ranges) and ``documents_changed``
    (documents with at least one range)."""
    return counting.add_unit_counts(
        {}, bytes_removed=np.sum(removals.ends - removals.starts),
        documents_changed=np.count_nonzero(np.diff(removals.offsets)))


def _classes(data, starts, ends, normalize):
    """(class of each kept unit among the kept, collisions, kept mask, and the kept
    units' characters and words): units whose normalized text is empty are no units."""
    values, offsets = normalized_pieces(data, starts, ends, normalize)
    class_of, collisions = exact_classes(values, offsets)
    kept = offsets[1:] > offsets[:-1]
    renumber = np.cumsum(kept) - 1
    chars, words = unit_lengths(values, offsets)
    return renumber[class_of[kept]], collisions, kept, chars[kept], words[kept]


def is_short(chars: np.ndarray, words: np.ndarray, minimum: tuple[int, int]) -> np.ndarray:
    """bool per unit: fewer characters or words than ``minimum`` (UnitOptions.minimum)."""
    return (chars < minimum[0]) | (words < minimum[1])


def _removed(class_of: np.ndarray, keep: str) -> np.ndarray:
    if keep == "first":
        return class_of != np.arange(class_of.size)
    return np.bincount(class_of, minlength=class_of.size)[class_of] >= 2


def _unit_counts(class_of: np.ndarray, removed: np.ndarray, short: np.ndarray,
                 policy: np.ndarray) -> dict:
    """The unit counts (module docstring); ``policy``: what the keep policy removes
    without the minimum."""
    sizes = np.bincount(class_of, minlength=class_of.size)
    repeated = sizes >= 2  # per class, at its first unit (class_of[i] == i)
    return counting.unit_counts(
        units=class_of.size, distinct=np.count_nonzero(sizes),
        repeated=np.count_nonzero(repeated & ~short), removed=removed.sum(),
        short=short.sum(), short_repeated=np.count_nonzero(repeated & short),
        short_spared=np.count_nonzero(policy & short))


def _repeats(class_of, doc, start, end, among) -> Repeats:
    """The classes seen more than once, at their first occurrence (class_of[i] <= i), of
    the units ``among`` (a class's units are all in or all out)."""
    n = class_of.size
    count = np.bincount(class_of, minlength=n)
    order = np.lexsort((doc, class_of))
    first_pair = np.ones(n, bool)
    first_pair[1:] = (class_of[order][1:] != class_of[order][:-1]) | \
        (doc[order][1:] != doc[order][:-1])
    documents = np.bincount(class_of[order][first_pair], minlength=n)
    reps = np.flatnonzero((count >= 2) & among)  # a representative: its class's first
    return Repeats(doc[reps], start[reps], end[reps], count[reps], documents[reps])


def window_lengths(chars: np.ndarray, words: np.ndarray, starts: np.ndarray, width: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(chars, words) of each window of ``width`` sentences starting at ``starts``: the
    sums of its sentences'."""
    out = []
    for column in (chars, words):
        total = np.zeros(column.size + 1, np.int64)
        np.cumsum(column, out=total[1:])
        out.append(total[starts + width] - total[starts])
    return out[0], out[1]


def _windows(n_docs, doc, ts, te, cs, ce, sentence_class, chars, words, options):
    """sentences:N: windows of N consecutive sentences of one document, equal when their
    sentences are equal one by one (exact: sentence classes, compared as rows)."""
    width = options.sentences
    s = doc.size
    starts = np.arange(max(s - width + 1, 0))
    starts = starts[doc[starts] == doc[starts + width - 1]] if starts.size else starts
    window_class = _window_classes(doc, sentence_class, starts, width)
    short = is_short(*window_lengths(chars, words, starts, width), options.minimum)
    policy = _removed(window_class, options.keep)
    removed = policy & ~short
    cover = np.zeros(s + 1, np.int64)
    np.add.at(cover, starts[removed], 1)
    np.add.at(cover, starts[removed] + width, -1)
    covered = np.cumsum(cover[:-1]) > 0
    removals = RemovalRanges.from_units(n_docs, doc[covered], cs[covered], ce[covered])
    last = starts + width - 1
    repeats = _repeats(window_class, doc[starts], ts[starts], te[last], ~short)
    short_repeats = _repeats(window_class, doc[starts], ts[starts], te[last], short)
    counts = _unit_counts(window_class, removed, short, policy)
    counting.add_unit_counts(counts, sentences=s, sentences_removed=covered.sum())
    return removals, repeats, counts, short_repeats


def _window_classes(doc, sentence_class, starts, width) -> np.ndarray:
    """Per window (its first sentence in ``starts``), the first window, as a position in
    ``starts``, whose ``width`` sentence classes equal its own: hashed from the classes
    and verified class by class, as under a memory limit (one sorted run), so memory
    grows with the windows, not with windows x width."""
    if not starts.size:
        return np.empty(0, np.int64)
    from .sorted_runs import merge_runs, window_hashes  # numba kernels: on demand

    classes = np.ascontiguousarray(sentence_class, np.int64)
    hashes = window_hashes(classes, starts, width)
    order = np.argsort(hashes, kind="stable")
    first, size, documents = (np.zeros(doc.size, np.int64) for _ in range(3))
    merge_runs(hashes[order], starts[order], np.array([0, starts.size], np.int64),
               classes.view(np.uint8), np.empty(0, np.int64), 8, width,
               np.ascontiguousarray(doc, np.int64), first, size, documents)
    return np.searchsorted(starts, first[starts])


def _spans(data, doc_offsets, options, normalize):
    """span: tokens normalized and numbered exactly (a token's id is its class), then
    the token-span kernel (:mod:`neardup.units.spans`)."""
    from . import spans  # numba kernels: compiled only when a run asks for spans
    n_docs = doc_offsets.size - 1
    doc, ts, te, _, _ = split.split_tokens(data, doc_offsets)
    class_of, _, kept, _, _ = _classes(data, ts, te, normalize)
    doc, ts, te = doc[kept], ts[kept], te[kept]
    base = doc_offsets[doc]
    offsets = np.zeros(n_docs + 1, np.int64)
    np.cumsum(np.bincount(doc, minlength=n_docs), out=offsets[1:])
    found = spans.repeated_spans(CSR(offsets, ts - base), CSR(offsets, te - base),
                   CSR(offsets, class_of.astype(np.uint64)), options.min_tokens, options.keep)
    removals = RemovalRanges.of(found)
    repeats = Repeats(*(np.asarray(_span_column(found, name), np.int64)
                        for name in ("doc", "start", "end", "count", "documents")))
    if hasattr(found, "windows"):  # windows of min_tokens tokens: the span unit's units
        counts = counting.span_counts(tokens=doc.size, spans_repeated=repeats.doc.size,
                                      windows=found.windows,
                                      windows_removed=found.windows_removed,
                                      tokens_removed=found.tokens_removed)
    else:
        counts = counting.span_counts(tokens=doc.size, spans_repeated=repeats.doc.size)
    return removals, repeats, counts


def _span_column(found, name: str):
    """A column of the repeated spans: ``span_NAME`` of the kernel's result, else NAME of
    its ``repeats`` table."""
    if hasattr(found, f"span_{name}"):
        return getattr(found, f"span_{name}")
    return getattr(getattr(found, "repeats", found), name)


def remaining_texts(analysis: UnitAnalysis) -> pa.LargeStringArray:
    """Every document's text minus its removal ranges, as one Arrow array."""
    r = analysis.removals
    data, offsets = remove_ranges(analysis.data, analysis.doc_offsets, r.offsets, r.starts,
                                  r.ends)
    return pa.LargeStringArray.from_buffers(offsets.size - 1, pa.py_buffer(offsets),
                                            pa.py_buffer(data))


def characters_left(texts: pa.LargeStringArray) -> np.ndarray:
    """int64 per text: its characters, whitespace at its ends not counted."""
    return pc.utf8_length(pc.utf8_trim_whitespace(texts)).to_numpy(zero_copy_only=False) \
        .astype(np.int64)
