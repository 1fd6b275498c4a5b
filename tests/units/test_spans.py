"""Repeated token spans against a brute force that compares every window with every other."""

from dataclasses import fields

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._core import kernels
from neardup.units import spans
from neardup.units.spans import Ragged, RepeatedSpans, repeated_spans


def columns(docs, gaps=None):
    """(starts, ends, ids) CSR columns for documents given as lists of token ids; token
    k of a document is 1 + id % 3 bytes long, after a gap of gaps[d][k] bytes (1 if none)."""
    offsets = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum([len(doc) for doc in docs], out=offsets[1:])
    starts, ends = [], []
    for d, doc in enumerate(docs):
        position = 0
        for k, token in enumerate(doc):
            position += gaps[d][k] if gaps else 1
            starts.append(position)
            position += 1 + token % 3
            ends.append(position)
    ids = np.array([t for doc in docs for t in doc], dtype=np.uint64)
    return (Ragged(offsets, np.array(starts, dtype=np.int64)),
            Ragged(offsets, np.array(ends, dtype=np.int64)), Ragged(offsets, ids))


def brute_force(docs, starts, ends, length, keep):
    """The definitions of neardup.units.spans, one window against every other."""
    windows = [(d, p, tuple(doc[p:p + length])) for d, doc in enumerate(docs)
               for p in range(len(doc) - length + 1)]
    removed = [set() for _ in docs]
    windows_removed = 0
    for i, (d, p, seq) in enumerate(windows):
        if keep == "first":
            gone = any(windows[j][2] == seq for j in range(i))
        else:
            gone = any(windows[j][2] == seq for j in range(len(windows)) if j != i)
        if gone:
            windows_removed += 1
            removed[d].update(range(p, p + length))
    offsets = starts.offsets
    ranges = []
    for d in range(len(docs)):
        runs = []
        for p in sorted(removed[d]):
            if runs and runs[-1][1] == p - 1:
                runs[-1][1] = p
            else:
                runs.append([p, p])
        ranges.append([(int(starts.values[offsets[d] + a]), int(ends.values[offsets[d] + b]))
                       for a, b in runs])
    # repeated spans: classes of the global window index, chained where every
    # occurrence shifts by one into exactly the next class
    base = [int(o) for o in offsets[:-1]]
    classes = {}
    for d, p, seq in windows:
        classes.setdefault(seq, []).append((base[d] + p, d))
    class_of = {g: tuple(g2 for g2, _ in members)
                for members in classes.values() for g, _ in members}
    repeated = [tuple(g for g, _ in m) for m in classes.values() if len(m) >= 2]
    docs_of = {tuple(g for g, _ in m): len({d for _, d in m}) for m in classes.values()}
    doc_at = {base[d] + p: d for d, p, _ in windows}

    def successor(members):
        shifted = tuple(g + 1 for g in members)
        if all(g + 1 in doc_at and doc_at[g + 1] == doc_at[g] for g in members) \
                and class_of[shifted[0]] == shifted:
            return shifted
        return None

    targets = {successor(c) for c in repeated} - {None}
    rows = []
    for head in sorted(c for c in repeated if c not in targets):
        last = head
        while successor(last) is not None:
            last = successor(last)
        d = doc_at[head[0]]
        rows.append((d, int(starts.values[head[0]]), int(ends.values[last[0] + length - 1]),
                     last[0] - head[0] + length, len(head), docs_of[head]))
    return {"ranges": ranges, "tokens_removed": sum(len(r) for r in removed),
            "bytes_removed": sum(e - s for doc in ranges for s, e in doc),
            "windows": len(windows), "windows_removed": windows_removed, "rows": rows}


def as_found(result: RepeatedSpans):
    o = result.remove_offsets
    ranges = [list(zip(result.remove_starts[o[d]:o[d + 1]].tolist(),
                       result.remove_ends[o[d]:o[d + 1]].tolist(), strict=True))
              for d in range(result.n_docs)]
    rows = list(zip(*(getattr(result, f).tolist() for f in
                      ("span_doc", "span_start", "span_end", "span_tokens", "span_count",
                       "span_documents")), strict=True))
    return {"ranges": ranges, "tokens_removed": result.tokens_removed,
            "bytes_removed": result.bytes_removed, "windows": result.windows,
            "windows_removed": result.windows_removed, "rows": rows}


def check(docs, length, keep, gaps=None, passes=1):
    starts, ends, ids = columns(docs, gaps)
    found = repeated_spans(starts, ends, ids, length, keep, passes=passes)
    assert as_found(found) == brute_force(docs, starts, ends, length, keep)
    return found


def planted_docs(seed=7):
    rng = np.random.default_rng(seed)
    boilerplate = rng.integers(1000, 2000, 60).tolist()  # a 60-token banner
    footer = rng.integers(1000, 2000, 55).tolist()
    docs = []
    for d in range(14):
        body = rng.integers(0, 5000, int(rng.integers(5, 40))).tolist()
        doc = (boilerplate if d % 2 == 0 else []) + body + (footer if d % 3 == 0 else [])
        docs.append(doc)
    docs[3] = boilerplate[:30] + docs[3] + boilerplate[:30]  # only halves: too short
    docs[4] = docs[4] + boilerplate  # the banner twice in one document
    docs[5] = [7] * 70  # one token repeated: overlapping self-repeats
    docs[6] = [1, 2, 3] * 30  # a period-3 self-repeat
    docs[7] = []  # empty
    docs[8] = boilerplate[:49]  # shorter than L
    docs[9] = boilerplate[5:] + footer[:50] + boilerplate  # overlaps, shifted
    return docs


@pytest.mark.parametrize("keep", ["first", "none"])
def test_planted_corpus_matches_brute_force(keep):
    docs = planted_docs()
    found = check(docs, 50, keep)
    assert found.tokens_removed > 0 and found.span_count.max() >= 7


def test_planted_boilerplate_first_copy_kept():
    docs = planted_docs()
    found = check(docs, 50, "first")
    o = found.remove_offsets
    assert o[1] == 0  # document 0 holds the first banner: nothing removed from it
    assert o[3] - o[2] == 1  # document 2's banner is a later copy


def test_self_repeat_in_one_document():
    # a a a a a with L = 2: windows 1-3 repeat window 0, tokens 1-4 go, token 0 stays
    starts, ends, ids = columns([[5] * 5])
    found = check([[5] * 5], 2, "first")
    assert found.remove_starts.tolist() == [int(starts.values[1])]
    assert found.remove_ends.tolist() == [int(ends.values[4])]
    assert found.span_count.tolist() == [4] and found.span_documents.tolist() == [1]
    assert check([[5] * 5], 2, "none").tokens_removed == 5


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), max_size=14), max_size=6), st.integers(1, 4),
       st.sampled_from(["first", "none"]), st.integers(0, 2**31))
def test_random_tokens_match_brute_force(docs, length, keep, seed):
    rng = np.random.default_rng(seed)
    gaps = [rng.integers(0, 3, len(doc)).tolist() for doc in docs]
    check(docs, length, keep, gaps)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2), max_size=12), max_size=5), st.integers(1, 3),
       st.sampled_from(["first", "none"]), st.integers(2, 5))
def test_passes_change_nothing(docs, length, keep, passes):
    check(docs, length, keep, passes=passes)


@pytest.mark.parametrize("keep", ["first", "none"])
def test_hash_collisions_are_resolved_by_the_ids(monkeypatch, keep):
    # every window's key keeps one hash bit: only the id comparison can split the classes
    keys = spans._partition_keys

    def two_hashes(offsets, ids, length, power, shift, passes, part):
        found = keys(offsets, ids, length, power, shift, passes, part)
        position = (np.uint64(1) << shift) - np.uint64(1)
        return (found & position) | (found >> np.uint64(63) << np.uint64(63))

    monkeypatch.setattr(spans, "_partition_keys", two_hashes)
    check(planted_docs(3), 50, keep)
    check([[1, 2, 1, 2, 2, 1, 1, 2, 1], [2, 1, 2, 1], [1, 1, 1]], 2, keep)


def test_deterministic_and_both_kernel_forms_agree(monkeypatch):
    docs = planted_docs(11)
    starts, ends, ids = columns(docs)
    first = repeated_spans(starts, ends, ids, 50)
    again = repeated_spans(starts, ends, ids, 50)
    monkeypatch.setattr(kernels, "PARALLEL_FROM", 0)
    parallel = repeated_spans(starts, ends, ids, 50)
    partitioned = repeated_spans(starts, ends, ids, 50, passes=3)
    for found in (again, parallel, partitioned):
        for f in fields(RepeatedSpans):
            a, b = getattr(first, f.name), getattr(found, f.name)
            assert np.array_equal(a, b) and np.asarray(a).dtype == np.asarray(b).dtype


def test_signed_ids_compare_by_their_bits():
    docs = [[-1, 2, -3, 4], [-1, 2, -3, 4]]
    starts, ends, _ = columns([[1, 2, 3, 4], [1, 2, 3, 4]])
    ids = Ragged(starts.offsets, np.array([t for d in docs for t in d], dtype=np.int64))
    found = repeated_spans(starts, ends, ids, 4)
    assert found.tokens_removed == 4 and found.remove_offsets.tolist() == [0, 0, 1]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"min_tokens": 0}, "min_tokens"), ({"min_tokens": 2.0}, "min_tokens"),
    ({"keep": "last"}, "keep must be one of first, none"), ({"passes": 0}, "passes"),
])
def test_bad_options_name_the_option(kwargs, message):
    starts, ends, ids = columns([[1, 2, 3]])
    with pytest.raises(ValueError, match=message):
        repeated_spans(starts, ends, ids, **{"min_tokens": 2, **kwargs})


def test_bad_columns_are_refused():
    starts, ends, ids = columns([[1, 2, 3], [4]])
    with pytest.raises(ValueError, match="share one offsets"):
        repeated_spans(starts, ends, Ragged(np.array([0, 4]), ids.values), 2)
    with pytest.raises(ValueError, match="non-overlapping"):
        repeated_spans(starts, Ragged(ends.offsets, ends.values + 5), ids, 2)
    with pytest.raises(ValueError, match="0 <= start <= end"):
        repeated_spans(starts, Ragged(ends.offsets, ends.values - 9), ids, 2)
    with pytest.raises(ValueError, match="offsets end at"):
        Ragged(np.array([0, 5]), np.zeros(4))
    found = repeated_spans((starts.offsets, starts.values), (ends.offsets, ends.values),
                           (ids.offsets, ids.values), 2)
    assert found.windows == 2 and found.tokens_removed == 0
