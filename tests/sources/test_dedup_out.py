"""A dedup's ``out=``, checked once for both doors (a run, and a run against an index):
data in memory takes none, files need one, and it is neither an input nor the index;
each refused before anything is read or written."""

import json

import pytest

import neardup
from neardup.index import Index

RECORDS = [
    {"id": "a", "text": "the quick brown fox jumps over the lazy dog again"},
    {"id": "b", "text": "the quick brown fox jumps over the lazy dog again!"},
    {"id": "c", "text": "a completely different sentence about something else"},
]


@pytest.fixture(params=["run", "against an index"])
def door(request, tmp_path):
    if request.param == "run":
        return {}
    Index.build(RECORDS[:1], tmp_path / "idx", id="id")
    return {"against": str(tmp_path / "idx")}


def test_out_is_refused_for_data_in_memory_and_required_for_files(tmp_path, door):
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(ValueError, match=r"data in memory returns the deduplicated data; "
                                         r"out= is for files"):
        neardup.dedup(RECORDS, tmp_path / "out.jsonl", id="id", **door)
    with pytest.raises(ValueError, match=r"dedup of files needs out="):
        neardup.dedup(str(path), id="id", **door)
    with pytest.raises(ValueError, match=r"--out .* is the input"):
        neardup.dedup(str(path), str(path), id="id", **door)
    if door:
        with pytest.raises(ValueError, match=r"--out .* is the input .*idx"):
            neardup.dedup(str(path), door["against"], id="id", **door)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written
    # and the same call with out= given right goes through
    kept = neardup.dedup(RECORDS, id="id", **door)
    assert [r["id"] for r in kept] == (["c"] if door else ["a", "c"])
