"""Units compared exactly: each unit's text normalized, hashed to 64 bits, and grouped by
sorting on the hash, with every group's texts verified byte for byte.

Two units are equal iff their normalized UTF-8 bytes are equal: a 64-bit hash only
brings candidates together, and :func:`exact_classes` splits a hash's run into the
distinct texts it holds (a collision costs a comparison, never a wrong answer; the
number of such extra texts is counted).

Normalization (the run's ``normalize``: a :class:`~neardup.text.cleaning.Cleaner` or
:func:`~neardup.shingling.normalize_light`) runs on each unit alone, on its text cut from
the original. To run it once per batch rather than once per unit, the batch's units
are joined with U+E000 (a private-use character no step changes or removes) between
them, normalized as one string and split again. That gives what each unit normalized
alone gives for every step that looks at one character or one word at a time (NFKC,
casefold, accents, punctuation, digits, the word steps); the whitespace step, which
strips a text's ends, leaves at most one space next to each separator, trimmed here.
The steps that read across characters (``html``, ``mojibake``), any other normalizer,
and a batch whose text holds U+E000 itself, are normalized one unit at a time (slower,
the same result). The separators are counted after normalizing: one too many or too
few falls back the same way.

The default normalization (``light``: NFKC, casefold, whitespace) of an ASCII unit is
lowercasing and collapsing whitespace (what ``str.split`` splits on), done here by one
numba pass over the units' bytes; only the units holding other characters go through
Python's string functions.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa

from .._core.jit import njit
from ..shingling import normalize_light
from ..text.cleaning import PRESETS, Cleaner

SEPARATOR = "\ue000"
_SEPARATOR_BYTES = np.frombuffer(SEPARATOR.encode("utf-8"), np.uint8)
CONTEXT_STEPS = frozenset({"html", "mojibake"})  # read across characters: one unit at a time
BATCH_BYTES = 1 << 25  # units' bytes normalized in one string
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


def texts_buffer(texts) -> tuple[np.ndarray, np.ndarray]:
    """The texts as one UTF-8 buffer (uint8) and int64[n + 1] offsets (one Arrow call)."""
    array = pa.array(texts, type=pa.large_string())
    if array.null_count:
        array = array.fill_null("")
    offsets = np.frombuffer(array.buffers()[1], np.int64)[array.offset:array.offset
                                                            + len(array) + 1]
    data_buffer = array.buffers()[2]
    data = (np.frombuffer(data_buffer, np.uint8) if data_buffer is not None
            else np.empty(0, np.uint8))
    return data, offsets - offsets[0] if offsets.size and offsets[0] else offsets.copy()


def normalizer_steps(normalize: Callable | None) -> tuple[str, ...] | None:
    """The cleaning steps ``normalize`` runs (``()``: none, the identity), or None for a
    function that is no cleaning chain."""
    if normalize is None:
        return ()
    if normalize is normalize_light:
        return PRESETS["light"]
    if isinstance(normalize, Cleaner):
        return normalize.steps
    return None


def normalized_pieces(data: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                      normalize: Callable | None) -> tuple[np.ndarray, np.ndarray]:
    """Each range ``data[starts[i]:ends[i]]`` normalized: (uint8 values, int64[n + 1])."""
    steps = normalizer_steps(normalize)
    if steps == ():
        return gather(data, starts, ends, np.empty(0, np.uint8))
    if steps == PRESETS["light"]:
        ascii_units = ascii_ranges(data, starts, ends)
        if ascii_units.any():
            fast = light_ascii(data, starts[ascii_units], ends[ascii_units])
            others = np.flatnonzero(~ascii_units)
            slow = _normalized(data, starts[others], ends[others], normalize, steps)
            return interleave(ascii_units, fast[0], fast[1], slow[0], slow[1])
    return _normalized(data, starts, ends, normalize, steps)


def _normalized(data, starts, ends, normalize, steps):
    parts, lengths = [], []
    sizes = np.cumsum(ends - starts)
    lo = 0
    while lo < starts.size:
        budget = (sizes[lo - 1] if lo else 0) + BATCH_BYTES
        hi = max(lo + 1, int(np.searchsorted(sizes, budget, side="right")))
        part = None
        if steps is not None and not CONTEXT_STEPS & set(steps):
            part = _normalized_batch(data, starts[lo:hi], ends[lo:hi], normalize,
                                     "whitespace" in steps)
        if part is None:
            part = _normalized_one_by_one(data, starts[lo:hi], ends[lo:hi], normalize)
        parts.append(part[0])
        lengths.append(np.diff(part[1]))
        lo = hi
    offsets = np.zeros(starts.size + 1, np.int64)
    if lengths:
        np.cumsum(np.concatenate(lengths), out=offsets[1:])
    values = np.concatenate(parts) if parts else np.empty(0, np.uint8)
    return values, offsets


def _normalized_batch(data, starts, ends, normalize, trim):
    joined, _ = gather(data, starts, ends, _SEPARATOR_BYTES)
    if count_separators(joined, _SEPARATOR_BYTES) != starts.size - 1:
        return None  # a unit holds U+E000 itself
    text = normalize(joined.tobytes().decode("utf-8"))
    out = np.frombuffer(text.encode("utf-8", "surrogatepass"), np.uint8)
    if count_separators(out, _SEPARATOR_BYTES) != starts.size - 1:
        return None
    return split_separated(out, _SEPARATOR_BYTES, starts.size, trim)


def _normalized_one_by_one(data, starts, ends, normalize):
    lo = int(starts.min()) if starts.size else 0
    raw = data[lo:int(ends.max()) if starts.size else 0].tobytes()  # the batch's bytes only
    encoded = [normalize(raw[s:e].decode("utf-8")).encode("utf-8", "surrogatepass")
               for s, e in zip((starts - lo).tolist(), (ends - lo).tolist(), strict=True)]
    lengths = np.fromiter(map(len, encoded), np.int64, count=len(encoded))
    offsets = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return np.frombuffer(b"".join(encoded), np.uint8), offsets


@njit(cache=True)
def ascii_ranges(data, starts, ends):
    """bool per range: every byte below 0x80."""
    out = np.ones(starts.size, np.bool_)
    for i in range(starts.size):
        for p in range(starts[i], ends[i]):
            if data[p] >= 128:
                out[i] = False
                break
    return out


@njit(inline="always")
def _python_space(b):
    # what str.split() splits on, in ASCII: \t \n \v \f \r, \x1c-\x1f and space
    return b == 32 or (9 <= b <= 13) or (28 <= b <= 31)


@njit(cache=True)
def light_ascii(data, starts, ends):
    """normalize_light of ASCII ranges: lowercase, whitespace runs as one space, ends
    stripped. (uint8 values, int64[n + 1] offsets)."""
    n = starts.size
    total = 0
    for i in range(n):
        total += ends[i] - starts[i]
    out = np.empty(total, np.uint8)
    offsets = np.zeros(n + 1, np.int64)
    w = 0
    for i in range(n):
        begin = w
        pending = False
        for p in range(starts[i], ends[i]):
            b = data[p]
            if _python_space(b):
                pending = w > begin
                continue
            if pending:
                out[w] = 32
                w += 1
                pending = False
            out[w] = b + 32 if 65 <= b <= 90 else b
            w += 1
        offsets[i + 1] = w
    return out[:w], offsets


@njit(cache=True)
def interleave(first, a_values, a_offsets, b_values, b_offsets):
    """Pieces in order: from (a_values, a_offsets) where ``first``, else from b."""
    n = first.size
    out = np.empty(a_values.size + b_values.size, np.uint8)
    offsets = np.zeros(n + 1, np.int64)
    w, ka, kb = 0, 0, 0
    for i in range(n):
        if first[i]:
            for p in range(a_offsets[ka], a_offsets[ka + 1]):
                out[w] = a_values[p]
                w += 1
            ka += 1
        else:
            for p in range(b_offsets[kb], b_offsets[kb + 1]):
                out[w] = b_values[p]
                w += 1
            kb += 1
        offsets[i + 1] = w
    return out, offsets


@njit(cache=True)
def gather(data, starts, ends, separator):
    """The ranges back to back, ``separator`` between them: (bytes, int64[n + 1])."""
    n = starts.size
    total = 0
    for i in range(n):
        total += ends[i] - starts[i]
    total += separator.size * max(n - 1, 0)
    out = np.empty(total, np.uint8)
    offsets = np.zeros(n + 1, np.int64)
    w = 0
    for i in range(n):
        if i and separator.size:
            for b in range(separator.size):
                out[w] = separator[b]
                w += 1
        offsets[i] = w if separator.size else offsets[i]
        for p in range(starts[i], ends[i]):
            out[w] = data[p]
            w += 1
        offsets[i + 1] = w
    return out, offsets


@njit(cache=True)
def count_separators(data, separator):
    count = 0
    m = separator.size
    p = 0
    while p + m <= data.size:
        match = True
        for b in range(m):
            if data[p + b] != separator[b]:
                match = False
                break
        if match:
            count += 1
            p += m
        else:
            p += 1
    return count


@njit(cache=True)
def split_separated(data, separator, n, trim):
    """The ``n`` pieces of ``data`` between separators, back to back; ``trim``: one ASCII
    space at a piece's either end dropped (what the whitespace step strips)."""
    out = np.empty(data.size, np.uint8)
    offsets = np.zeros(n + 1, np.int64)
    m = separator.size
    w = 0
    piece = 0
    p = 0
    start = 0
    while piece < n:
        end = p
        found = False
        while end + m <= data.size:
            match = True
            for b in range(m):
                if data[end + b] != separator[b]:
                    match = False
                    break
            if match:
                found = True
                break
            end += 1
        if not found:
            end = data.size
        lo, hi = start, end
        if trim:
            if lo < hi and data[lo] == 32:
                lo += 1
            if lo < hi and data[hi - 1] == 32:
                hi -= 1
        for q in range(lo, hi):
            out[w] = data[q]
            w += 1
        piece += 1
        offsets[piece] = w
        start = end + m
        p = start
    return out[:w], offsets


@njit(cache=True)
def piece_hashes(values, offsets):
    """uint64 per piece: FNV-1a over its bytes, finished with splitmix64's mixer."""
    n = offsets.size - 1
    out = np.empty(n, np.uint64)
    for i in range(n):
        h = _FNV_OFFSET
        for p in range(offsets[i], offsets[i + 1]):
            h = (h ^ np.uint64(values[p])) * _FNV_PRIME
        h ^= np.uint64(offsets[i + 1] - offsets[i])
        h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        out[i] = h ^ (h >> np.uint64(31))
    return out


def exact_classes(values: np.ndarray, offsets: np.ndarray,
                  hashes: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """(class_of, collisions): ``class_of[i]`` is the first piece (in input order) whose
    bytes equal piece i's; ``collisions``: distinct texts that shared a hash with an
    earlier distinct text (verified apart). ``hashes``: uint64 per piece (default:
    :func:`piece_hashes`); any function of the bytes gives the same classes."""
    hashes = piece_hashes(values, offsets) if hashes is None else hashes
    order = np.argsort(hashes, kind="stable")
    class_of = np.empty(hashes.size, np.int64)
    collisions = _classes(order, hashes, values, offsets, class_of)
    return class_of, int(collisions)


@njit(inline="always")
def _equal(values, offsets, a, b):
    la = offsets[a + 1] - offsets[a]
    if la != offsets[b + 1] - offsets[b]:
        return False
    pa_, pb = offsets[a], offsets[b]
    for k in range(la):
        if values[pa_ + k] != values[pb + k]:
            return False
    return True


@njit(cache=True)
def _classes(order, hashes, values, offsets, class_of):
    n = order.size
    collisions = 0
    reps = np.empty(n, np.int64)
    i = 0
    while i < n:
        j = i + 1
        while j < n and hashes[order[j]] == hashes[order[i]]:
            j += 1
        found_reps = 0
        for t in range(i, j):
            u = order[t]
            rep = -1
            for r in range(found_reps):
                if _equal(values, offsets, reps[r], u):
                    rep = reps[r]
                    break
            if rep < 0:
                reps[found_reps] = u
                found_reps += 1
                rep = u
            class_of[u] = rep
        collisions += found_reps - 1
        i = j
    return collisions


@njit(inline="always")
def _separates(c):
    """Whitespace as ``str.split()`` splits on it, and the CJK symbols and punctuation
    block (U+3000-U+303F: ideographic space, 、 。 「 」)."""
    return (c == 32 or 9 <= c <= 13 or 28 <= c <= 31 or c == 0x85 or c == 0xA0
            or c == 0x1680 or 0x2000 <= c <= 0x200A or c == 0x2028 or c == 0x2029
            or c == 0x202F or c == 0x205F or 0x3000 <= c <= 0x303F)


@njit(inline="always")
def _word_alone(c):
    """A character that is a word by itself: Han (with radicals and compatibility
    ideographs) and kana, written without spaces between words."""
    return (0x2E80 <= c <= 0x2FDF or 0x3040 <= c <= 0x30FF or 0x3400 <= c <= 0x4DBF
            or 0x4E00 <= c <= 0x9FFF or 0xF900 <= c <= 0xFAFF or 0x20000 <= c <= 0x323AF)


@njit(cache=True)
def unit_lengths(values, offsets):
    """(chars, words), int64 per piece of UTF-8 ``values`` (``offsets``: int64[n + 1]):
    its characters (code points), and its words: runs of characters between whitespace
    (what ``str.split()`` splits on, and U+3000-U+303F), a Chinese or Japanese character
    (Han, kana) counting as a word by itself."""
    n = offsets.size - 1
    chars = np.zeros(n, np.int64)
    words = np.zeros(n, np.int64)
    for i in range(n):
        p, end = offsets[i], offsets[i + 1]
        in_word = False
        while p < end:
            b = values[p]
            if b < 0x80:
                c, size = np.int64(b), 1
            elif b < 0xE0:
                c, size = np.int64(b & 0x1F), 2
            elif b < 0xF0:
                c, size = np.int64(b & 0x0F), 3
            else:
                c, size = np.int64(b & 0x07), 4
            for k in range(1, size):
                if p + k < end:
                    c = (c << 6) | np.int64(values[p + k] & 0x3F)
            p += size
            chars[i] += 1
            if _separates(c):
                in_word = False
            elif _word_alone(c):
                words[i] += 1
                in_word = False
            elif not in_word:
                words[i] += 1
                in_word = True
    return chars, words
