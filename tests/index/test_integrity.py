"""A damaged index is refused by name, never read out of bounds (issue 22: D4, D12, D13).

Properties checked:
- any one byte changed in any segment file (21 seeded flips), or one offset set far
  out of range, makes a query fail with "index corrupt" naming that file: no crash,
  no different pairs;
- a change that also rewrites the manifest's SHA-256 (the hashes agree) is still
  refused by the structure check: offsets that decrease, band documents out of range;
- a change made after the index was opened and checked is caught where the rows are
  used: the offsets and documents a query reads are checked before they index;
- a file version found intact is remembered (no second hash), a replaced file is not;
- a manifest that names a segment outside ``segments/`` is refused.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import neardup
from neardup.cli import main
from neardup.index import Index, IndexCorruptError, integrity
from neardup.index import against as against_module
from neardup.index.store import SEGMENT_FILES
from neardup.sinks.staging import file_sha256

from .test_index import WORDS, corpus


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(a clean index of 200 documents, the 100 new documents that pair with it)."""
    records = corpus(21, n=300)
    path = tmp_path_factory.mktemp("clean") / "idx"
    Index.build(records[:200], path, id="id", **WORDS)
    return path, records[200:]


def fresh_copy(built, tmp_path):
    path = tmp_path / "idx"
    # without the cache file an earlier test's open may have written there (its entries
    # name the original's paths, so they never apply to the copy; the file itself would)
    shutil.copytree(built[0], path, ignore=shutil.ignore_patterns("verified.json"))
    return path, path / "segments" / "seg-000001"


def set_values(path, index, value) -> None:
    """array[index] = value in the .npy file at ``path``, in place (same size)."""
    array = np.load(path, mmap_mode="r+")
    array[index] = value
    array.flush()
    del array


def rehash_manifest(idx) -> None:
    """The manifest's SHA-256 made to agree with the files (a consistent tamper)."""
    manifest = json.loads((idx / "manifest.json").read_text())
    for entry in manifest["segments"]:
        for file in entry["files"]:
            file["sha256"] = file_sha256(idx / "segments" / entry["name"] / file["name"])
    (idx / "manifest.json").write_text(json.dumps(manifest))


def test_an_offset_far_out_of_range_is_refused_by_name(built, tmp_path):
    idx, segment = fresh_copy(built, tmp_path)
    set_values(segment / "sets.offsets.npy", 5, 99999999999)  # was: SIGSEGV
    with pytest.raises(IndexCorruptError, match="index corrupt: .*sets.offsets.npy"):
        neardup.find(built[1], against=idx, id="id")
    source = tmp_path / "new.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in built[1]))
    done = subprocess.run([sys.executable, "-m", "neardup", "find", str(source), "--against",
                           str(idx), "--id-field", "id", "-q"], capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert "index corrupt" in done.stderr and "sets.offsets.npy" in done.stderr
    assert "Traceback" not in done.stderr


def test_any_byte_flipped_is_refused_naming_the_file(built, tmp_path):
    expected = neardup.find(built[1], against=built[0], id="id").counts["pairs"]
    assert expected > 0
    rng = np.random.default_rng(22)
    for k in range(21):  # the 21 flips: exit 0 with other pairs, SIGSEGV, SIGBUS
        idx, segment = fresh_copy(built, tmp_path / str(k))
        name = SEGMENT_FILES[rng.integers(len(SEGMENT_FILES))]
        data = bytearray((segment / name).read_bytes())
        at = int(rng.integers(len(data)))
        data[at] ^= 1 << int(rng.integers(8))
        (segment / name).write_bytes(bytes(data))
        with pytest.raises(IndexCorruptError, match=f"index corrupt: .*{name}"):
            neardup.find(built[1], against=idx, id="id")
        assert Index(built[0]).n == 200  # the clean index is untouched


@pytest.mark.parametrize("name, index, value, says", [
    ("sets.offsets.npy", 5, 99999999999, "offsets decrease"),
    ("ids.offsets.npy", 3, -50, "offsets decrease"),  # was: SystemError
    ("bands.docs.npy", (2, 7), 10_000, "document numbers out of range"),  # was: IndexError
    ("bands.docs.npy", (0, 0), -1, "document numbers out of range"),
    ("sets.offsets.npy", 0, 4, "offsets run from 4"),
])
def test_a_tamper_the_hashes_agree_with_is_refused_by_the_structure(
        built, tmp_path, name, index, value, says):
    idx, segment = fresh_copy(built, tmp_path)
    set_values(segment / name, index, value)
    rehash_manifest(idx)
    with pytest.raises(IndexCorruptError, match=f"index corrupt: .*{name}: {says}"):
        Index(idx)


@pytest.mark.parametrize("name, value", [
    ("sets.offsets.npy", 99999999999), ("ids.offsets.npy", -50), ("bands.docs.npy", 10_000)])
def test_a_change_after_the_checks_is_caught_where_the_rows_are_read(
        built, tmp_path, monkeypatch, name, value):
    idx, segment = fresh_copy(built, tmp_path)
    index = Index(idx)  # checked, its files mapped
    # what a cache cannot see (the file's version unchanged), seen by the mapped pages
    set_values(segment / name, slice(1, -1) if "offsets" in name else slice(None), value)
    monkeypatch.setattr(against_module, "Index", lambda path: index)
    with pytest.raises(IndexCorruptError, match=f"index corrupt: .*{name}"):
        neardup.find(built[1], against=idx, id="id")


def test_an_intact_file_version_is_hashed_once_and_a_replaced_one_again(
        built, tmp_path, monkeypatch):
    idx, segment = fresh_copy(built, tmp_path)
    monkeypatch.setattr(integrity, "RACY_SECONDS", -1.0)  # these files are seconds old
    hashed = []
    monkeypatch.setattr(integrity, "file_sha256",
                        lambda path: hashed.append(path.name) or file_sha256(path))
    Index(idx)
    assert sorted(hashed) == sorted(SEGMENT_FILES)
    assert (idx / "verified.json").is_file()
    monkeypatch.setattr(integrity, "_verified", {})  # a new process: only the file knows
    hashed.clear()
    Index(idx)
    assert hashed == []
    # a file replaced (another inode), one byte different: hashed again and refused
    data = bytearray((segment / "signatures.npy").read_bytes())
    data[-1] ^= 0xFF
    (segment / "new").write_bytes(bytes(data))
    (segment / "new").replace(segment / "signatures.npy")
    with pytest.raises(IndexCorruptError, match="signatures.npy: its SHA-256 differs"):
        Index(idx)


def test_a_read_only_index_is_checked_in_memory(built, tmp_path, monkeypatch):
    idx, _ = fresh_copy(built, tmp_path)
    monkeypatch.setattr(integrity, "RACY_SECONDS", -1.0)
    hashed = []
    monkeypatch.setattr(integrity, "file_sha256",
                        lambda path: hashed.append(path.name) or file_sha256(path))

    def read_only(*args):  # chmod does not stop root: the file system says no instead
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(os, "replace", read_only)
    assert Index(idx).n == 200  # the cache file cannot be written: no error
    assert len(hashed) == len(SEGMENT_FILES)
    assert sorted(p.name for p in idx.iterdir()) == ["lock", "manifest.json", "segments"]
    assert Index(idx).n == 200 and len(hashed) == len(SEGMENT_FILES)  # once per process


def test_a_segment_name_outside_the_segments_folder_is_refused(built, tmp_path):
    idx, _ = fresh_copy(built, tmp_path)
    other = tmp_path / "other"
    shutil.copytree(built[0], other)
    manifest = json.loads((idx / "manifest.json").read_text())
    manifest["segments"][0]["name"] = "../../other/segments/seg-000001"
    (idx / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexCorruptError, match="not a plain segment name"):
        Index(idx)
    with pytest.raises(ValueError, match="index corrupt: .*manifest.json"):
        neardup.find(built[1], against=idx, id="id")


def test_info_verify_names_every_damaged_file(built, tmp_path, capsys):
    idx, segment = fresh_copy(built, tmp_path)
    for name in ("sets.values.npy", "signatures.npy"):
        data = bytearray((segment / name).read_bytes())
        data[-1] ^= 0x01
        (segment / name).write_bytes(bytes(data))
    assert main(["index", "info", str(idx), "--verify"]) == 2
    err = capsys.readouterr().err
    assert "index corrupt: 2 file(s) differ from the manifest" in err
    assert "seg-000001/sets.values.npy" in err and "seg-000001/signatures.npy" in err
    assert main(["index", "info", str(idx)]) == 2  # opening alone names the first one
    assert "index corrupt" in capsys.readouterr().err


@pytest.mark.parametrize("damage, says", [
    (lambda m: m["segments"][0].update(name="seg-1"), "not a plain segment name"),
    (lambda m: m["segments"][0].update(name="/tmp/seg-000001"), "not a plain segment name"),
    (lambda m: m["segments"][0]["files"][0].update(name="../../manifest.json"),
     "does not list the files"),
    (lambda m: m.update(documents=m["documents"] + 1), "not the sum of its segments'"),
    (lambda m: m["options"].pop("num_perm"), "integer num_perm"),
])
def test_a_manifest_that_does_not_hold_together_is_refused(built, tmp_path, damage, says):
    idx, _ = fresh_copy(built, tmp_path)
    manifest = json.loads((idx / "manifest.json").read_text())
    damage(manifest)
    (idx / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexCorruptError, match=f"index corrupt: .*manifest.json: .*{says}"):
        Index(idx)
