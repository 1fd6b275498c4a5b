"""neardup.units against the brute-force reference (tests/units/reference.py): every
unit compared with every earlier one in plain Python, on planted corpora and on
hypothesis' texts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup.shingling import normalize_light
from neardup.text.cleaning import make_cleaner
from neardup.units import (
    UnitOptions,
    characters_left,
    find_repeated_units,
    remaining_texts,
)
from neardup.units.hashing import exact_classes, gather, normalized_pieces, texts_buffer

from .reference import reference

HEADER = "Cookie policy: we use cookies.\r\nAccept all | Settings\r\n"
FOOTER = "\n\n© 2024 Ünïcødé GmbH — Impressum\nClicca sul link sottostante…"
PLANTED = [
    HEADER + "First story. It rains in Zürich. The end!\n" + FOOTER,
    "",
    HEADER + "Second story? Yes. It rains in Zürich. The end!" + FOOTER,
    "A paragraph repeated.\nOn two lines.\n\n\n\nA paragraph repeated.\nOn two lines.\n",
    "   \n\n\t\n",
    "COOKIE   policy: we use cookies.\nunique line 日本語のテキスト。\nno newline at end",
    "A paragraph repeated.\r\nOn two lines.\r\n\r\nsolo",
    "Hi. Hi. Hi. Hi. Hi.",
]
UNITS = ["line", "paragraph", "sentences:1", "sentences:2", "sentences:3"]
# (min_unit_chars, min_unit_words): none, the default, characters and words together
MINIMUMS = [(0, 0), (0, 3), (12, 2)]
NORMALIZERS = {"light": normalize_light, "none": make_cleaner("none"),
               "text": make_cleaner("text"), "html": make_cleaner("light", html=True)}


def found(texts, unit, keep, normalize, min_chars=1, minimum=(0, 3)):
    analysis = find_repeated_units(texts, UnitOptions(unit, keep=keep, min_chars=min_chars,
                                                      min_unit_chars=minimum[0],
                                                      min_unit_words=minimum[1]), normalize)
    left = remaining_texts(analysis)
    r = analysis.removals
    ranges = [list(zip(r.starts[r.offsets[d]:r.offsets[d + 1]].tolist(),
                       r.ends[r.offsets[d]:r.offsets[d + 1]].tolist(), strict=True))
              for d in range(len(texts))]
    touched = analysis.removals.bytes_per_document > 0
    kept = (~touched | (characters_left(left) >= min_chars)).tolist()
    raws = [t.encode("utf-8") for t in texts]

    def rows(rp):
        return [(int(c), int(n), (int(d), raws[d][s:e].decode("utf-8")))
                for d, s, e, c, n in zip(rp.doc, rp.start, rp.end, rp.count, rp.documents,
                                         strict=True)]

    return {"ranges": ranges, "left": left.to_pylist(), "kept": kept,
            "counts": analysis.counts, "repeats": rows(analysis.repeats),
            "short_repeats": rows(analysis.short_repeats)}


def assert_matches(texts, unit, keep, normalize, min_chars=1, minimum=(0, 3)):
    got = found(texts, unit, keep, normalize, min_chars, minimum)
    want = reference(texts, unit, keep, normalize, min_chars, minimum)
    assert got["ranges"] == want["ranges"]
    assert got["left"] == want["left"]
    assert got["kept"] == want["kept"]
    for name, value in want["counts"].items():
        assert got["counts"][name] == value, name
    assert got["counts"]["units"] == got["counts"]["units_kept"] + got["counts"]["units_removed"]
    assert sorted(got["repeats"]) == sorted(want["repeats"])
    assert sorted(got["short_repeats"]) == sorted(want["short_repeats"])
    return got


@pytest.mark.parametrize("unit", UNITS)
@pytest.mark.parametrize("keep", ["first", "none"])
@pytest.mark.parametrize("clean", sorted(NORMALIZERS))
@pytest.mark.parametrize("minimum", MINIMUMS)
def test_planted_corpus_matches_brute_force(unit, keep, clean, minimum):
    got = assert_matches(PLANTED, unit, keep, NORMALIZERS[clean], minimum=minimum)
    if unit == "line" and clean == "light":  # the boilerplate header is planted 3 times
        assert got["counts"]["units_removed"] >= (4 if keep == "first" else 6)


def test_the_boilerplate_goes_and_the_first_copy_stays():
    got = found(PLANTED, "line", "first", normalize_light)
    assert got["left"][0] == PLANTED[0]  # the first occurrence of everything
    assert got["left"][2] == "Second story? Yes. It rains in Zürich. The end!\n\n"
    assert got["left"][5] == "unique line 日本語のテキスト。\nno newline at end"
    assert got["kept"][4] is True and got["kept"][1] is True  # blank, but nothing removed
    assert got["kept"][3] is True


def test_removed_bytes_never_split_a_character():
    for unit in UNITS:
        for keep in ("first", "none"):
            got = found(PLANTED, unit, keep, normalize_light)
            for text, ranges in zip(PLANTED, got["ranges"], strict=True):
                raw = text.encode("utf-8")
                for start, end in ranges:
                    raw[:start].decode("utf-8")
                    raw[start:end].decode("utf-8")  # a split character raises


@pytest.mark.parametrize("min_chars", [0, 1, 20, 10_000])
def test_min_chars_drops_exactly_the_short_documents(min_chars):
    assert_matches(PLANTED, "line", "first", normalize_light, min_chars)


def test_a_hash_that_collides_everywhere_still_gives_exact_classes():
    pieces = [b"a", b"b", b"a", b"", b"b", b"ab", b"a"]
    values = np.frombuffer(b"".join(pieces), np.uint8)
    offsets = np.cumsum([0] + [len(p) for p in pieces]).astype(np.int64)
    classes, collisions = exact_classes(values, offsets, np.zeros(len(pieces), np.uint64))
    assert classes.tolist() == [0, 1, 0, 3, 1, 5, 0]
    assert collisions == 3  # b, "", ab shared the hash of a


def test_determinism():
    a = found(PLANTED * 3, "sentences:3", "first", normalize_light)
    b = found(PLANTED * 3, "sentences:3", "first", normalize_light)
    assert a == b


TEXT = st.text(alphabet=st.sampled_from(list("ab. \n\r!?AÉé日\u0301\u00a0\t") + ["\ue000"]),
               max_size=40)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TEXT, max_size=6), st.sampled_from(UNITS), st.sampled_from(["first", "none"]),
       st.sampled_from(sorted(NORMALIZERS)), st.sampled_from([*MINIMUMS, (0, 1), (3, 0)]))
def test_any_corpus_matches_brute_force(texts, unit, keep, clean, minimum):
    assert_matches(texts, unit, keep, NORMALIZERS[clean], minimum=minimum)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=30), max_size=8),
       st.sampled_from(["light", "text", "words"]))
def test_normalizing_a_batch_is_normalizing_each_unit(pieces, clean):
    normalize = NORMALIZERS[clean] if clean in NORMALIZERS else make_cleaner(
        "light", stopwords=True, stem=True)
    data, offsets = texts_buffer(pieces)
    values, out = normalized_pieces(data, offsets[:-1], offsets[1:], normalize)
    got = [values[a:b].tobytes().decode("utf-8") for a, b in zip(out[:-1], out[1:], strict=True)]
    assert got == [normalize(p) for p in pieces]


def test_gather_puts_ranges_back_to_back():
    data = np.frombuffer(b"hello world", np.uint8)
    values, offsets = gather(data, np.array([6, 0]), np.array([11, 5]), np.empty(0, np.uint8))
    assert values.tobytes() == b"worldhello" and offsets.tolist() == [0, 5, 10]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(max_codepoint=127), max_size=30), max_size=8)
       | st.lists(st.text(max_size=10), max_size=8))
def test_the_ascii_path_of_light_normalization_is_normalize_light(pieces):
    data, offsets = texts_buffer(pieces)
    values, out = normalized_pieces(data, offsets[:-1], offsets[1:], normalize_light)
    got = [values[a:b].tobytes().decode("utf-8") for a, b in zip(out[:-1], out[1:], strict=True)]
    assert got == [normalize_light(p) for p in pieces]


@pytest.mark.parametrize("unit", ["sentences:99999999999", f"sentences:{2**62}"])
def test_a_window_longer_than_any_document_removes_nothing_without_memory_for_it(unit):
    """No document holds that many sentences: no window, nothing removed (it asked for
    745 GiB for the window's positions)."""
    texts = ["One. Two. Three.", "One. Two. Three.", "Four."]
    got = found(texts, unit, "first", normalize_light)
    assert got["left"] == texts and got["kept"] == [True] * 3
    assert (got["counts"]["units"], got["counts"]["sentences"]) == (0, 7)


@pytest.mark.parametrize("keep", ["first", "none"])
def test_a_wide_window_matches_brute_force(keep):
    block = " ".join(f"Sentence {i}." for i in range(40))
    texts = [block + " Tail one.", "Head. " + block, block, block.replace("7.", "8.")]
    got = assert_matches(texts, "sentences:40", keep, normalize_light)
    assert got["counts"]["units_repeated"] == 1


def test_a_window_past_int64_is_refused_naming_the_unit():
    with pytest.raises(ValueError, match=r"sentences:N takes N up to 2\^62 .*"
                                         r"'sentences:4611686018427387905'"):
        UnitOptions(f"sentences:{2**62 + 1}")
