"""Texts cut into units: lines, paragraphs, sentences, tokens, as arrays of byte ranges.

Every kernel reads the corpus as one UTF-8 buffer (``data``, with ``doc_offsets``
int64[n_docs + 1]) and returns, per unit in input order (document, then position),
five int64 arrays: ``doc``, the compared text ``[text_start, text_end)`` and the bytes
removed with it ``[cut_start, cut_end)``, absolute offsets into ``data``. The rules:

line
    the bytes up to and including a ``\\n`` (or the document's end). Compared: the
    line without its ``\\n`` or ``\\r\\n``. Removed: the line with its line break, so
    no blank line is left behind. Only ``\\n`` breaks a line (a lone ``\\r``, U+2028
    do not).
paragraph
    a run of lines that are not blank (a blank line holds only ASCII whitespace).
    Compared: from its first line's start to its last line's end, line breaks
    inside included. Removed: with the blank lines that follow it.
sentence
    from a non-whitespace byte to the end of a run of ``.``, ``!`` or ``?`` (and any
    closing ``)"']`` after it) that a whitespace byte or the document's end follows,
    or to the end of its line: a line break always ends a sentence, so headings and
    list items are sentences. Compared: the sentence, trailing whitespace trimmed.
    Removed: with the whitespace that follows it.
token
    a run of bytes that are not ASCII whitespace (the span unit's words).

Units that are blank (ASCII whitespace only) are never made. Every cut is at a
document's end or next to an ASCII byte, so a removed range never splits a UTF-8
character.
"""

from __future__ import annotations

import numpy as np

from .._core.jit import njit

__all__ = ["split_lines", "split_paragraphs", "split_sentences", "split_tokens"]


@njit(inline="always")
def _space(b):
    return b == 32 or (9 <= b <= 13)


@njit(inline="always")
def _line_end(data, p, hi):
    """(text end, cut end) of the line starting at p."""
    q = p
    while q < hi and data[q] != 10:
        q += 1
    cut = q + 1 if q < hi else hi
    text = q - 1 if q > p and data[q - 1] == 13 else q
    return text, cut


@njit(inline="always")
def _blank(data, lo, hi):
    for q in range(lo, hi):
        if not _space(data[q]):
            return False
    return True


@njit(inline="always")
def _emit(out, k, fill, d, ts, te, cs, ce):
    if fill:
        out[0, k], out[1, k], out[2, k], out[3, k], out[4, k] = d, ts, te, cs, ce
    return k + 1


@njit(cache=True)
def _lines(data, doc_offsets, out, fill):
    k = 0
    for d in range(doc_offsets.size - 1):
        p, hi = doc_offsets[d], doc_offsets[d + 1]
        while p < hi:
            text, cut = _line_end(data, p, hi)
            if not _blank(data, p, text):
                k = _emit(out, k, fill, d, p, text, p, cut)
            p = cut
    return k


@njit(cache=True)
def _paragraphs(data, doc_offsets, out, fill):
    k = 0
    for d in range(doc_offsets.size - 1):
        p, hi = doc_offsets[d], doc_offsets[d + 1]
        start, text_end, closed = -1, -1, False
        while p < hi:
            text, cut = _line_end(data, p, hi)
            if _blank(data, p, text):
                closed = start >= 0
            else:
                if start >= 0 and closed:
                    k = _emit(out, k, fill, d, start, text_end, start, p)
                    start = -1
                if start < 0:
                    start, closed = p, False
                text_end = text
            p = cut
        if start >= 0:
            k = _emit(out, k, fill, d, start, text_end, start, hi)
    return k


@njit(inline="always")
def _terminal(b):
    return b == 46 or b == 33 or b == 63  # . ! ?


@njit(inline="always")
def _closer(b):
    return b == 41 or b == 34 or b == 39 or b == 93  # ) " ' ]


@njit(cache=True)
def _sentences(data, doc_offsets, out, fill):
    k = 0
    for d in range(doc_offsets.size - 1):
        p, hi = doc_offsets[d], doc_offsets[d + 1]
        while p < hi:
            s = p
            while s < hi and _space(data[s]):
                s += 1
            if s >= hi:
                break
            q = s
            while q < hi:
                b = data[q]
                if b == 10:
                    break
                if _terminal(b):
                    r = q
                    while r < hi and _terminal(data[r]):
                        r += 1
                    while r < hi and _closer(data[r]):
                        r += 1
                    q = r
                    if r >= hi or _space(data[r]):
                        break
                    continue
                q += 1
            text = q
            while text > s and _space(data[text - 1]):
                text -= 1
            cut = q
            while cut < hi and _space(data[cut]):
                cut += 1
            k = _emit(out, k, fill, d, s, text, s, cut)
            p = cut
    return k


@njit(cache=True)
def _tokens(data, doc_offsets, out, fill):
    k = 0
    for d in range(doc_offsets.size - 1):
        p, hi = doc_offsets[d], doc_offsets[d + 1]
        while p < hi:
            while p < hi and _space(data[p]):
                p += 1
            if p >= hi:
                break
            q = p
            while q < hi and not _space(data[q]):
                q += 1
            k = _emit(out, k, fill, d, p, q, p, q)
            p = q
    return k


def _run(kernel, data: np.ndarray, doc_offsets: np.ndarray) -> tuple[np.ndarray, ...]:
    """Count, then fill: (doc, text_start, text_end, cut_start, cut_end)."""
    n = kernel(data, doc_offsets, np.empty((5, 0), np.int64), False)
    out = np.empty((5, n), np.int64)
    kernel(data, doc_offsets, out, True)
    return tuple(out)


def split_lines(data, doc_offsets):
    """Lines (see the module docstring): (doc, text_start, text_end, cut_start, cut_end)."""
    return _run(_lines, data, doc_offsets)


def split_paragraphs(data, doc_offsets):
    """Paragraphs: (doc, text_start, text_end, cut_start, cut_end)."""
    return _run(_paragraphs, data, doc_offsets)


def split_sentences(data, doc_offsets):
    """Sentences: (doc, text_start, text_end, cut_start, cut_end)."""
    return _run(_sentences, data, doc_offsets)


def split_tokens(data, doc_offsets):
    """Tokens: (doc, start, end, start, end)."""
    return _run(_tokens, data, doc_offsets)
