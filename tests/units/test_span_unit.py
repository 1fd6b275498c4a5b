"""The span unit: the ranges its kernel (neardup.units.spans) returns are what the framework
removes, on token boundaries."""

from __future__ import annotations

from neardup.shingling import normalize_light
from neardup.units import UnitOptions, find_repeated_units, remaining_texts

BLOCK = " ".join(f"word{k}" for k in range(60))
TEXTS = [f"intro one {BLOCK} outro", "unrelated words here", f"start {BLOCK} end é"]


def test_a_repeated_block_of_tokens_is_removed_on_token_boundaries():
    analysis = find_repeated_units(TEXTS, UnitOptions("span", min_tokens=50), normalize_light)
    left = remaining_texts(analysis).to_pylist()
    assert left[0] == TEXTS[0] and left[1] == TEXTS[1]
    assert BLOCK not in left[2] and left[2].startswith("start ") and left[2].endswith("end é")
    raw = TEXTS[2].encode("utf-8")
    r = analysis.removals
    for start, end in zip(r.starts[r.offsets[2]:r.offsets[3]], r.ends[r.offsets[2]:r.offsets[3]],
                          strict=True):
        assert raw[start - 1:start] in (b" ", b"") and raw[end:end + 1] in (b" ", b"")


def test_dedup_with_the_span_unit_writes_the_texts_left(tmp_path, write_jsonl):
    """The copy of ``dedup --unit span`` holds each record with its repeated block cut out:
    the first occurrence stays, the later one goes, the rest of the record is untouched."""
    import json

    import neardup

    source = write_jsonl(tmp_path / "in.jsonl", TEXTS)
    result = neardup.dedup(source, tmp_path / "out.jsonl", unit="span", min_tokens=50)
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["text"] for r in rows] == [TEXTS[0], TEXTS[1], "start  end é"]
    assert result.counts["bytes_removed"] == len(BLOCK.encode())
