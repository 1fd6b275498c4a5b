"""What a writer of the index removes, and what it leaves (issue 22: D5, D9, D21).

Properties checked:
- a sweep removes only the names neardup writes: a ``segments/`` that is a link to a
  shared disk keeps the user's folders there, and links are neither followed nor removed;
- a full disk while a segment or the manifest is written is an OSError naming the file,
  the temporary segment is gone, and the index is at its previous version;
- SIGTERM while a segment is written ends the process with 143 and removes the
  temporary segment, as its message says.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys

import pytest

import neardup
from neardup.cli import main
from neardup.index import Index
from neardup.index.store import STOP_ENV

from .test_index import WORDS, corpus


def leftovers(idx) -> list[str]:
    """What is in segments/ beyond the segments the manifest lists."""
    listed = {s["name"] for s in Index(idx).manifest["segments"]}
    return sorted(p.name for p in (idx / "segments").iterdir() if p.name not in listed)


def test_a_sweep_removes_only_what_neardup_writes(tmp_path):
    records = corpus(31, n=200)
    idx = tmp_path / "idx"
    Index.build(records[:100], idx, id="id", **WORDS)
    disk = tmp_path / "big-disk"  # segments/ moved to a bigger disk the user shares
    disk.mkdir()
    (idx / "segments").rename(disk / "segments")
    (idx / "segments").symlink_to(disk / "segments")
    mine = disk / "segments" / "photos"
    mine.mkdir()
    (mine / "2024.jpg").write_bytes(b"\xff\xd8 a photo")
    (disk / "segments" / "notes.txt").write_text("keep me")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "seg-000009").mkdir()
    (elsewhere / "seg-000009" / "precious").write_text("not the index's")
    (disk / "segments" / "seg-000009").symlink_to(elsewhere / "seg-000009")
    (disk / "segments" / "seg-000042.tmp-77").mkdir()  # a killed writer's: swept
    (disk / "segments" / "seg-000043").mkdir()

    added = Index(idx).add(records[100:], id="id")
    assert added["documents"] == 200
    assert (mine / "2024.jpg").read_bytes() == b"\xff\xd8 a photo"
    assert (disk / "segments" / "notes.txt").read_text() == "keep me"
    assert (disk / "segments" / "seg-000009").is_symlink()
    assert (elsewhere / "seg-000009" / "precious").read_text() == "not the index's"
    assert leftovers(idx) == ["notes.txt", "photos", "seg-000009"]
    assert Index(idx).info(verify=True)["corrupt_files"] == []


def no_space(*args):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_names_the_file_and_leaves_no_temporary_segment(tmp_path, monkeypatch,
                                                                     capsys):
    records = corpus(32, n=200)
    idx = tmp_path / "idx"
    Index.build(records[:100], idx, id="id", **WORDS)
    before = Index(idx).info()
    monkeypatch.setattr(os, "posix_fallocate", no_space)  # the disk is full
    with pytest.raises(OSError) as caught:
        Index(idx).add(records[100:], id="id")
    assert caught.value.errno == errno.ENOSPC
    assert f"{idx}/segments/seg-000002.tmp-{os.getpid()}/" in caught.value.filename
    assert leftovers(idx) == []
    source = tmp_path / "more.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records[100:]))
    assert main(["index", "add", str(idx), str(source), "--id-field", "id", "-q"]) == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and f"{idx}/segments/seg-" in err
    assert leftovers(idx) == []
    after = Index(idx).info(verify=True)
    assert (after["version"], after["documents"]) == (before["version"], 100)
    assert after["corrupt_files"] == []


def test_a_manifest_the_disk_cannot_take_leaves_no_segment(tmp_path, monkeypatch):
    records = corpus(33, n=200)
    idx = tmp_path / "idx"
    index = Index.build(records[:100], idx, id="id", **WORDS)

    def full(path, manifest):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path / "manifest.json"))

    monkeypatch.setattr(neardup.index, "write_manifest", full)
    with pytest.raises(OSError, match="No space left"):
        index.add(records[100:], id="id")
    monkeypatch.undo()
    assert leftovers(idx) == [] and Index(idx).n == 100


def test_sigterm_while_a_segment_is_written_removes_it(tmp_path):
    records = corpus(34, n=400)
    idx = tmp_path / "idx"
    Index.build(records[:100], idx, id="id", **WORDS)
    before = Index(idx).info()
    source = tmp_path / "more.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records[100:]))
    # the writer stops itself half-way through the segment; SIGTERM comes while it is there
    add = subprocess.Popen([sys.executable, "-m", "neardup", "index", "add", str(idx),
                            str(source), "--id-field", "id", "-q"], stderr=subprocess.PIPE,
                           text=True, env={**os.environ, STOP_ENV: "segment-half-written"})
    try:
        _, status = os.waitpid(add.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status), "the writer never reached the half-written segment"
        assert [p.name for p in (idx / "segments").iterdir() if ".tmp-" in p.name] == \
            [f"seg-000002.tmp-{add.pid}"]
        add.send_signal(signal.SIGTERM)
        add.send_signal(signal.SIGCONT)
        _, err = add.communicate(timeout=60)
    finally:
        add.kill()
    assert add.returncode == 128 + signal.SIGTERM, err
    assert "terminated; temporary files removed" in err and "Traceback" not in err
    assert leftovers(idx) == []
    after = Index(idx).info(verify=True)
    assert (after["version"], after["documents"]) == (before["version"], 100)
    assert after["corrupt_files"] == []
