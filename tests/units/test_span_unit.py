"""The span unit: refused by name while its kernel (neardup.units.spans) is missing; with
it, the ranges it returns are what the framework removes, on token boundaries."""

from __future__ import annotations

import importlib.util

import pytest

import neardup
from neardup.shingling import normalize_light
from neardup.units import UnitOptions, find_repeated_units, remaining_texts

HAVE_KERNEL = importlib.util.find_spec("neardup.units.spans") is not None
BLOCK = " ".join(f"word{k}" for k in range(60))
TEXTS = [f"intro one {BLOCK} outro", "unrelated words here", f"start {BLOCK} end é"]


@pytest.mark.skipif(HAVE_KERNEL, reason="the span kernel is here")
def test_without_its_kernel_the_span_unit_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="unit 'span' is not available"):
        find_repeated_units(TEXTS, UnitOptions("span"), normalize_light)
    src = tmp_path / "in.txt"
    src.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not available"):
        neardup.dedup(src, tmp_path / "out.txt", unit="span")
    assert not (tmp_path / "out.txt").exists()


@pytest.mark.skipif(not HAVE_KERNEL, reason="the span kernel (neardup.units.spans) is missing")
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
