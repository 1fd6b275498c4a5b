"""Units too short to be boilerplate are kept: a unit under --min-unit-words or
--min-unit-chars (measured on its normalized text) is never removed and never listed,
in memory and under a memory limit; what the minimum kept is counted and shown, and
the counts agree with the brute-force reference."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup
from neardup.cli import main
from neardup.shingling import normalize_light
from neardup.units import UnitOptions, find_repeated_units, remaining_texts
from neardup.units.hashing import texts_buffer, unit_lengths
from neardup.units.run import spared_of

from .reference import reference, words

A = ("def load(path):\n    try:\n        return open(path).read()\n    except OSError:\n"
     "        raise ValueError('bad path')\n    else:\n        pass\n")
B = ("def save(path, text):\n    try:\n        open(path, 'w').write(text)\n"
     "    except OSError:\n        raise ValueError('bad path')\n    else:\n        pass\n")
# B without the one repeated line of three words or more
B_LEFT = ("def save(path, text):\n    try:\n        open(path, 'w').write(text)\n"
          "    except OSError:\n    else:\n        pass\n")


def write(path, texts):
    with open(path, "w", encoding="utf-8") as f:
        for k, text in enumerate(texts):
            f.write(json.dumps({"id": f"d{k}", "text": text}) + "\n")


def copied(path) -> list[str]:
    return [json.loads(line)["text"] for line in open(path, encoding="utf-8")]


@pytest.mark.parametrize("limit", [None, "512M"])
def test_short_code_lines_stay_and_a_long_repeated_one_goes(tmp_path, limit):
    write(tmp_path / "in.jsonl", [A, B])
    extra = {} if limit is None else {"memory_limit": limit, "work_dir": tmp_path}
    result = neardup.dedup(tmp_path / "in.jsonl", tmp_path / "out.jsonl", unit="line",
                           id="id", **extra)
    assert copied(tmp_path / "out.jsonl") == [A, B_LEFT]
    c = result.counts
    assert (c["units_removed"], c["units_short_spared"], c["units_short_repeated"]) == (1, 4, 4)
    assert (c["min_unit_chars"], c["min_unit_words"]) == (0, 3)
    assert "4 repeated units kept as shorter than the minimum (3 words; 4 distinct " \
        "texts)" in result.describe()
    neardup.dedup(tmp_path / "in.jsonl", tmp_path / "all.jsonl", unit="line", id="id",
                  min_unit_words=0, **extra)
    assert copied(tmp_path / "all.jsonl")[1] == \
        "def save(path, text):\n        open(path, 'w').write(text)\n"


@pytest.mark.parametrize(("minimum", "kept"), [
    ({"min_unit_words": 3}, ["ab cd", "x"]),  # "ab cd ef" has 3 words: it goes
    ({"min_unit_words": 4}, ["ab cd ef", "ab cd", "x"]),
    ({"min_unit_chars": 5, "min_unit_words": 0}, ["x"]),  # "ab cd": 5 characters, it goes
    ({"min_unit_chars": 6, "min_unit_words": 0}, ["ab cd", "x"]),
    ({"min_unit_chars": 9, "min_unit_words": 1}, ["ab cd ef", "ab cd", "x"]),
    ({"min_unit_words": 0}, [])])
def test_a_unit_at_the_minimum_goes_and_one_under_it_stays(minimum, kept):
    """Each line twice, the second copy in the second document: what is left of it is
    the lines under the minimum. Measured normalized: the spaces and case do not count."""
    lines = ["ab cd ef", "ab cd", "x"]
    second = "\n".join(f"  {line.upper()}  " for line in lines)
    analysis = find_repeated_units(["\n".join(lines), second],
                                   UnitOptions("line", **minimum), normalize_light)
    left = remaining_texts(analysis).to_pylist()
    assert left[0] == "\n".join(lines)
    assert [line.strip().lower() for line in left[1].splitlines()] == kept
    assert analysis.counts["units_short_spared"] == len(kept)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(
    list("ab .\t\n") + ["日", "本", "カ", "\u00a0", "\u3000", "\u3002", "é", "\U00020001",
                        "\u0e01", "\u2028"]), max_size=20), max_size=8))
def test_words_and_characters_are_the_plain_count(pieces):
    data, offsets = texts_buffer(pieces)
    chars, n_words = unit_lengths(data, offsets)
    assert chars.tolist() == [len(p) for p in pieces]
    assert n_words.tolist() == [words(p) for p in pieces]


def test_chinese_and_japanese_characters_are_words():
    data, offsets = texts_buffer(["欢迎访问", "日本語のテキスト。", "else:", "สวัสดีครับ"])
    assert unit_lengths(data, offsets)[1].tolist() == [4, 8, 1, 1]


CORPUS = [A, B, A.replace("load", "read"), "Menu\nHome\nOne. Two. Three.\nMenu\n",
          "Home\nMenu\nOne. Two. Three.\n日本語のテキスト。\n", "日本語のテキスト。\nMenu"]


@pytest.mark.parametrize("unit", ["line", "sentences:1", "sentences:2", "paragraph"])
@pytest.mark.parametrize("minimum", [(0, 3), (8, 0), (0, 0)])
def test_repeats_says_what_the_minimum_kept_as_the_reference_counts(tmp_path, unit, minimum):
    write(tmp_path / "in.jsonl", CORPUS)
    table = neardup.repeats(tmp_path / "in.jsonl", unit=unit, id="id",
                            min_unit_chars=minimum[0], min_unit_words=minimum[1])
    want = reference(CORPUS, unit, "first", normalize_light, 1, minimum)
    assert sorted(table.column("count").to_pylist()) == sorted(c for c, _, _ in want["repeats"])
    spared = spared_of(table)
    assert (spared["min_unit_chars"], spared["min_unit_words"]) == minimum
    assert spared["repeated"] == len(want["short_repeats"])
    shown = [(row["count"], row["documents"]) for row in spared["most_frequent"]]
    assert shown == sorted(((c, n) for c, n, _ in want["short_repeats"]),
                           key=lambda r: -r[0])[:5]


def test_cli_repeats_prints_what_the_minimum_kept(tmp_path, capsys):
    write(tmp_path / "in.jsonl", [A, B])
    assert main(["repeats", str(tmp_path / "in.jsonl"), "--unit", "line"]) == 0
    out, err = capsys.readouterr()
    assert out.count("\n") == 2  # the header and "raise ValueError('bad path')"
    summary, spared = err.rstrip("\n").rsplit("\n", 1)  # the listing on stdout: both on stderr
    assert summary.startswith("read 2 records: 2 documents\n")
    assert spared == ('4 repeated line units shorter than the minimum (3 words) were kept and '
                      'are not listed; the most frequent: "try:" (2), "except OSError:" (2), '
                      '"else:" (2), "pass" (2) (--min-unit-words 0 --min-unit-chars 0 lists '
                      'them)')
    assert main(["repeats", str(tmp_path / "in.jsonl"), "--unit", "line",
                 "--min-unit-words", "0"]) == 0
    out, err = capsys.readouterr()
    assert out.count("\n") == 6 and "shorter than the minimum" not in err


@pytest.mark.parametrize(("args", "message"), [
    (["--unit", "span", "--min-unit-words", "2"], "the span unit's shortest run is "
                                                  "min_tokens"),
    (["--unit", "line", "--min-unit-chars", "-1"], "min_unit_chars must be a whole number"),
    (["--min-unit-words", "2"], "apply to units inside documents")])
def test_a_minimum_where_it_does_not_apply_is_refused_by_name(tmp_path, capsys, args,
                                                              message):
    write(tmp_path / "in.jsonl", [A])
    assert main(["dedup", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "o.jsonl"),
                 *args]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()
